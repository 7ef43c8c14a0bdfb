package ipam

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
//	P+"header"       immutable JSON header4, written once by CreatePool
//	P+"chunk/NNNN"   JSON chunk4: the allocation bits of host indices
//	                 NNNN*4096 … NNNN*4096+4095 (bit set = taken)
//	P+"full"         JSON full4: bit c set = chunk c is believed full
//
// A chunk that does not exist is all free. Network and broadcast addresses
// and addresses outside the pool's range are never stored: they are
// excluded by the header. Only a changed chunk is written, always by
// compare-and-swap on its version, so an allocation costs one 512-byte write
// whatever the subnet size. The "full" summary is a hint (see V4).

const (
	chunkBits  = 4096
	chunkWords = chunkBits / 64
)

// header4 is the pool definition.
type header4 struct {
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
	// from another allocator's with the same bits (V4.putChunk,
	// docs/allocation-integrity.md).
	W string `json:"w,omitempty"`
}

type full4 struct {
	Full string `json:"full"` // base64 bitmap over chunk numbers
}

// layout is a decoded header.
type layout struct {
	id     string
	gen    int64
	hdr    header4
	subnet Subnet
	first  netip.Addr
	last   netip.Addr
	base   uint32
	size   uint64
	lo, hi int64 // allocatable host indices (empty when lo > hi)
	cLo    int   // chunks that hold allocatable addresses
	cHi    int
	desc   string // "subnet a.b.c.d/len" or "pool a-b" for messages
}

func newLayout(id string, h header4, gen int64) (*layout, error) {
	sn, err := ParseSubnet(h.Subnet)
	if err != nil {
		return nil, fmt.Errorf("pool %q header: %w", id, err)
	}
	first, err1 := parseV4(h.First)
	last, err2 := parseV4(h.Last)
	if err1 != nil || err2 != nil || !sn.Contains(first) || !sn.Contains(last) || u32(first) > u32(last) {
		return nil, fmt.Errorf("pool %q header: %w: range %s-%s", id, ErrInvalid, h.First, h.Last)
	}
	l := &layout{id: id, gen: gen, hdr: h, subnet: sn, first: first, last: last,
		base: u32(sn.Base), size: sn.Size()}
	l.lo = max(int64(u32(first)-l.base), 1)
	l.hi = min(int64(u32(last)-l.base), int64(l.size)-2)
	if l.lo <= l.hi {
		l.cLo, l.cHi = int(l.lo/chunkBits), int(l.hi/chunkBits)
	} else {
		l.cLo, l.cHi = 0, -1
	}
	l.desc = "subnet " + sn.String()
	if h.Parent != "" {
		l.desc = "pool " + h.Pool
	}
	return l, nil
}

func (l *layout) nChunks() int { return int((l.size + chunkBits - 1) / chunkBits) }

// host is the host index of a, or an error when a is outside the subnet.
func (l *layout) host(a netip.Addr) (int64, error) {
	if !l.subnet.Contains(a) {
		return 0, userErr(ErrOutOfSubnet, "hostIP %s is exceeding beyond subnet %s, hostID %d", a, l.subnet, u32(a)-l.base)
	}
	return int64(u32(a) - l.base), nil
}

func (l *layout) addr(host int64) netip.Addr { return addr(l.base + uint32(host)) }

func (l *layout) allocatable(host int64) bool { return host >= l.lo && host <= l.hi }

// wordMask is the allocatable bits of word w of chunk c.
func (l *layout) wordMask(c, w int) uint64 {
	start := int64(c)*chunkBits + int64(w)*64
	end := start + 63
	if end < l.lo || start > l.hi {
		return 0
	}
	m := ^uint64(0)
	if l.lo > start {
		m &= ^uint64(0) << uint(l.lo-start)
	}
	if l.hi < end {
		m &= ^uint64(0) >> uint(end-l.hi)
	}
	return m
}

// freeIn returns the lowest free allocatable host of chunk c.
func (l *layout) freeIn(c int, b *[chunkWords]uint64) (int64, bool) {
	for w := 0; w < chunkWords; w++ {
		if free := ^b[w] & l.wordMask(c, w); free != 0 {
			return int64(c)*chunkBits + int64(w)*64 + int64(bits.TrailingZeros64(free)), true
		}
	}
	return 0, false
}

// used counts the taken allocatable hosts of chunk c.
func (l *layout) used(c int, b *[chunkWords]uint64) int {
	n := 0
	for w := 0; w < chunkWords; w++ {
		n += bits.OnesCount64(b[w] & l.wordMask(c, w))
	}
	return n
}

func (l *layout) chunkBytes(c int) int {
	n := min(l.size-uint64(c)*chunkBits, chunkBits)
	return int((n + 7) / 8)
}

// encodeChunk is the stored form of chunk c with bits b, written by the
// allocator with id w.
func (l *layout) encodeChunk(c int, b *[chunkWords]uint64, w string) []byte {
	raw := make([]byte, l.chunkBytes(c))
	for i := range raw {
		raw[i] = byte(b[i/8] >> (8 * uint(i%8)))
	}
	// Same bytes as json.Marshal(chunk4{...}), without reflection: this
	// runs once per allocation batch.
	out := make([]byte, 0, 40+len(w)+base64.StdEncoding.EncodedLen(len(raw)))
	out = append(out, `{"gen":`...)
	out = strconv.AppendInt(out, l.gen, 10)
	out = append(out, `,"bits":"`...)
	out = base64.StdEncoding.AppendEncode(out, raw)
	out = append(out, `","w":"`...)
	out = append(out, w...)
	return append(out, `"}`...)
}

// errStale: a chunk belongs to a newer generation of the pool (it was
// deleted and created again): reload the header.
var errStale = fmt.Errorf("%w: pool definition changed", objdb.ErrConflict)

func decodeChunk(l *layout, c int, val []byte) (*[chunkWords]uint64, error) {
	var ch chunk4
	if err := json.Unmarshal(val, &ch); err != nil {
		return nil, fmt.Errorf("pool %q chunk %d: decode: %w", l.id, c, err)
	}
	switch {
	case ch.Gen > l.gen:
		return nil, errStale // our header is older than the chunk
	case ch.Gen < l.gen:
		// Left over from an earlier pool of the same id (a delete that
		// raced an allocation): it holds nothing of this pool. Writers
		// replace it by compare-and-swap on its version.
		return new([chunkWords]uint64), nil
	}
	raw, err := base64.StdEncoding.DecodeString(ch.Bits)
	if err != nil {
		return nil, fmt.Errorf("pool %q chunk %d: decode bits: %w", l.id, c, err)
	}
	var b [chunkWords]uint64
	for i := 0; i < len(raw) && i < chunkBits/8; i++ {
		b[i/8] |= uint64(raw[i]) << (8 * uint(i%8))
	}
	return &b, nil
}

func encodeBitmap(b []uint64, nbits int) string {
	raw := make([]byte, (nbits+7)/8)
	for i := range raw {
		raw[i] = byte(b[i/8] >> (8 * uint(i%8)))
	}
	return base64.StdEncoding.EncodeToString(raw)
}

func decodeBitmap(s string, nbits int) ([]uint64, error) {
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

func checkPoolID(id string) error {
	if id == "" || strings.Contains(id, "/") {
		return userErr(ErrInvalid, "invalid pool id %q", id)
	}
	return nil
}

// keys of one pool
type keys4 struct{ p string }

func (k keys4) header() string      { return k.p + "header" }
func (k keys4) full() string        { return k.p + "full" }
func (k keys4) chunkPrefix() string { return k.p + "chunk/" }
func (k keys4) chunk(c int) string  { return fmt.Sprintf("%schunk/%04d", k.p, c) }
func chunkNum(key, prefix string) int {
	var c int
	if _, err := fmt.Sscanf(strings.TrimPrefix(key, prefix), "%d", &c); err != nil {
		return -1
	}
	return c
}

func casOpt(version int64) objdb.OpOption {
	if version == 0 {
		return objdb.WithCreateOnly()
	}
	return objdb.WithPrevVersion(version)
}
