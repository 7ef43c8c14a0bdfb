// Package v4store keeps the IPv4 address pools of netmaster/ipam in the
// store: their stored form (layout.go: a header, the allocation bits in
// chunks of 4096 addresses, a summary of the full chunks; the subnet and
// pool strings, subnet.go) and its reads and writes, each a
// compare-and-swap on the version read and without a cache (Store,
// store.go; docs/architecture.md decisions 2 and 3). Handing out
// addresses — batching, the per-pool cache, the reserve, joined
// transactions — is netmaster/ipam's V4, which builds on a Store.
package v4store

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"

	"github.com/contiv/netplugin/objdb"
)

// IPv4 pool storage (one pool, prefix P = "<keyPrefix><poolID>/v4/"):
//
//	P+"header"       immutable JSON Header, written once (Store.PutHeader)
//	P+"chunk/NNNN"   JSON chunk4: the allocation bits of host indices
//	                 NNNN*4096 … NNNN*4096+4095 (bit set = taken)
//	P+"full"         JSON Full: bit c set = chunk c is believed full
//
// A chunk that does not exist is all free. Network and broadcast addresses
// and addresses outside the pool's range are never stored: they are
// excluded by the header. Only a changed chunk is written, always by
// compare-and-swap on its version, so an allocation costs one 512-byte write
// whatever the subnet size. The "full" summary is a hint (see netmaster/ipam.V4).

const (
	ChunkBits  = 4096
	ChunkWords = ChunkBits / 64
)

// header4 is the pool definition.
type Header struct {
	Subnet  string `json:"subnet"` // base/len
	First   string `json:"first"`  // range, inclusive
	Last    string `json:"last"`
	Gateway string `json:"gateway,omitempty"`
	Parent  string `json:"parent,omitempty"` // sub-pool: the pool its range is reserved in
	Pool    string `json:"pool,omitempty"`   // sub-pool: the pool string as the user gave it
}

// chunk4 is the stored form of one chunk.
type chunk4 struct {
	Gen  int64  `json:"gen"`  // version of the header the chunk belongs to
	Bits string `json:"bits"` // base64, bit i of the chunk = byte i/8, bit i%8
	// W is the id of the allocator that wrote this value: a writer whose
	// write had an unknown outcome (the store timed out) finds out whether
	// it was applied by reading the value back, and W tells its writes
	// from another allocator's with the same bits (Store.PutChunk,
	// docs/allocation-integrity.md).
	W string `json:"w,omitempty"`
}

type Full struct {
	Full string `json:"full"` // base64 bitmap over chunk numbers
}

// layout is a decoded header.
type Layout struct {
	ID     string
	Gen    int64
	Hdr    Header
	Subnet Subnet
	First  netip.Addr
	Last   netip.Addr
	Base   uint32
	Size   uint64
	Lo, Hi int64 // allocatable host indices (empty when lo > hi)
	CLo    int   // chunks that hold allocatable addresses
	CHi    int
	Desc   string // "subnet a.b.c.d/len" or "pool a-b" for messages
}

func NewLayout(id string, h Header, gen int64) (*Layout, error) {
	sn, err := ParseSubnet(h.Subnet)
	if err != nil {
		return nil, fmt.Errorf("pool %q header: %w", id, err)
	}
	first, err1 := ParseV4(h.First)
	last, err2 := ParseV4(h.Last)
	if err1 != nil || err2 != nil || !sn.Contains(first) || !sn.Contains(last) || U32(first) > U32(last) {
		return nil, fmt.Errorf("pool %q header: %w: range %s-%s", id, ErrInvalid, h.First, h.Last)
	}
	l := &Layout{ID: id, Gen: gen, Hdr: h, Subnet: sn, First: first, Last: last,
		Base: U32(sn.Base), Size: sn.Size()}
	l.Lo = max(int64(U32(first)-l.Base), 1)
	l.Hi = min(int64(U32(last)-l.Base), int64(l.Size)-2)
	if l.Lo <= l.Hi {
		l.CLo, l.CHi = int(l.Lo/ChunkBits), int(l.Hi/ChunkBits)
	} else {
		l.CLo, l.CHi = 0, -1
	}
	l.Desc = "subnet " + sn.String()
	if h.Parent != "" {
		l.Desc = "pool " + h.Pool
	}
	return l, nil
}

func (l *Layout) NChunks() int { return int((l.Size + ChunkBits - 1) / ChunkBits) }

// host is the host index of a, or an error when a is outside the subnet.
func (l *Layout) Host(a netip.Addr) (int64, error) {
	if !l.Subnet.Contains(a) {
		return 0, userErr(ErrOutOfSubnet, "hostIP %s is exceeding beyond subnet %s, hostID %d", a, l.Subnet, U32(a)-l.Base)
	}
	return int64(U32(a) - l.Base), nil
}

func (l *Layout) Addr(host int64) netip.Addr { return AddrOf(l.Base + uint32(host)) }

func (l *Layout) Allocatable(host int64) bool { return host >= l.Lo && host <= l.Hi }

// wordMask is the allocatable bits of word w of chunk c.
func (l *Layout) WordMask(c, w int) uint64 {
	start := int64(c)*ChunkBits + int64(w)*64
	end := start + 63
	if end < l.Lo || start > l.Hi {
		return 0
	}
	m := ^uint64(0)
	if l.Lo > start {
		m &= ^uint64(0) << uint(l.Lo-start)
	}
	if l.Hi < end {
		m &= ^uint64(0) >> uint(end-l.Hi)
	}
	return m
}

// freeIn returns the lowest free allocatable host of chunk c.
func (l *Layout) FreeIn(c int, b *[ChunkWords]uint64) (int64, bool) {
	for w := 0; w < ChunkWords; w++ {
		if free := ^b[w] & l.WordMask(c, w); free != 0 {
			return int64(c)*ChunkBits + int64(w)*64 + int64(bits.TrailingZeros64(free)), true
		}
	}
	return 0, false
}

// used counts the taken allocatable hosts of chunk c.
func (l *Layout) Used(c int, b *[ChunkWords]uint64) int {
	n := 0
	for w := 0; w < ChunkWords; w++ {
		n += bits.OnesCount64(b[w] & l.WordMask(c, w))
	}
	return n
}

func (l *Layout) chunkBytes(c int) int {
	n := min(l.Size-uint64(c)*ChunkBits, ChunkBits)
	return int((n + 7) / 8)
}

// encodeChunk is the stored form of chunk c with bits b, written by the
// allocator with id w.
func (l *Layout) EncodeChunk(c int, b *[ChunkWords]uint64, w string) []byte {
	raw := make([]byte, l.chunkBytes(c))
	for i := range raw {
		raw[i] = byte(b[i/8] >> (8 * uint(i%8)))
	}
	// Same bytes as json.Marshal(chunk4{...}), without reflection: this
	// runs once per allocation batch.
	out := make([]byte, 0, 40+len(w)+base64.StdEncoding.EncodedLen(len(raw)))
	out = append(out, `{"gen":`...)
	out = strconv.AppendInt(out, l.Gen, 10)
	out = append(out, `,"bits":"`...)
	out = base64.StdEncoding.AppendEncode(out, raw)
	out = append(out, `","w":"`...)
	out = append(out, w...)
	return append(out, `"}`...)
}

// errStale: a chunk belongs to a newer generation of the pool (it was
// deleted and created again): reload the header.
var ErrStale = fmt.Errorf("%w: pool definition changed", objdb.ErrConflict)

func DecodeChunk(l *Layout, c int, val []byte) (*[ChunkWords]uint64, error) {
	var ch chunk4
	if err := json.Unmarshal(val, &ch); err != nil {
		return nil, fmt.Errorf("pool %q chunk %d: decode: %w", l.ID, c, err)
	}
	switch {
	case ch.Gen > l.Gen:
		return nil, ErrStale // our header is older than the chunk
	case ch.Gen < l.Gen:
		// Left over from an earlier pool of the same id (a delete that
		// raced an allocation): it holds nothing of this pool. Writers
		// replace it by compare-and-swap on its version.
		return new([ChunkWords]uint64), nil
	}
	raw, err := base64.StdEncoding.DecodeString(ch.Bits)
	if err != nil {
		return nil, fmt.Errorf("pool %q chunk %d: decode bits: %w", l.ID, c, err)
	}
	var b [ChunkWords]uint64
	for i := 0; i < len(raw) && i < ChunkBits/8; i++ {
		b[i/8] |= uint64(raw[i]) << (8 * uint(i%8))
	}
	return &b, nil
}

func EncodeBitmap(b []uint64, nbits int) string {
	raw := make([]byte, (nbits+7)/8)
	for i := range raw {
		raw[i] = byte(b[i/8] >> (8 * uint(i%8)))
	}
	return base64.StdEncoding.EncodeToString(raw)
}

func DecodeBitmap(s string, nbits int) ([]uint64, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	b := make([]uint64, (nbits+63)/64)
	for i := 0; i < len(raw) && i/8 < len(b); i++ {
		b[i/8] |= uint64(raw[i]) << (8 * uint(i%8))
	}
	return b, nil
}

func CheckPoolID(id string) error {
	if id == "" || strings.Contains(id, "/") {
		return userErr(ErrInvalid, "invalid pool id %q", id)
	}
	return nil
}

// keys of one pool
type Keys struct{ p string }

func (k Keys) Header() string      { return k.p + "header" }
func (k Keys) Full() string        { return k.p + "full" }
func (k Keys) ChunkPrefix() string { return k.p + "chunk/" }
func (k Keys) Chunk(c int) string  { return fmt.Sprintf("%schunk/%04d", k.p, c) }
func ChunkNum(key, prefix string) int {
	var c int
	if _, err := fmt.Sscanf(strings.TrimPrefix(key, prefix), "%d", &c); err != nil {
		return -1
	}
	return c
}

func CASOpt(version int64) objdb.OpOption {
	if version == 0 {
		return objdb.WithCreateOnly()
	}
	return objdb.WithPrevVersion(version)
}
