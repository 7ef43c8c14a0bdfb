package migrate

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
)

// bits is a decoded bitset of the original's encoding (docs/daemons.md
// §2.7): URL-safe base64 of an 8-byte big-endian bit count and big-endian
// 64-bit words; bit i is bit i%64 of word i/64.
type bits struct {
	n     uint64
	words []uint64
}

// decodeBits decodes s, refusing a bit count above max before allocating
// anything: a corrupt header cannot make the decoder allocate more than
// the field can hold.
func decodeBits(s string, max uint64) (bits, error) {
	if s == "" {
		return bits{}, fmt.Errorf("bitset is empty: no header")
	}
	if uint64(len(s)) > (max/8+16)*4/3+8 {
		return bits{}, fmt.Errorf("bitset of %d characters is longer than %d bits need", len(s), max)
	}
	raw, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		return bits{}, fmt.Errorf("bitset: %w", err)
	}
	if len(raw) < 8 {
		return bits{}, fmt.Errorf("bitset of %d bytes has no 8-byte header", len(raw))
	}
	n := binary.BigEndian.Uint64(raw)
	if n > max {
		return bits{}, fmt.Errorf("bitset header claims %d bits, more than the %d this field holds", n, max)
	}
	nw := (n + 63) / 64
	if uint64(len(raw)-8) < nw*8 {
		return bits{}, fmt.Errorf("bitset truncated: header claims %d bits, %d bytes of words follow", n, len(raw)-8)
	}
	b := bits{n: n, words: make([]uint64, nw)}
	for i := range b.words {
		b.words[i] = binary.BigEndian.Uint64(raw[8+8*i:])
	}
	return b, nil
}

func (b bits) test(i uint64) bool {
	return i < b.n && b.words[i/64]&(1<<(i%64)) != 0
}

// emptyBits is the encoding of an empty bitset, as this project writes the
// original's bitmap fields it no longer uses (docs/daemons.md §3.6, §3.8).
const emptyBits = "AAAAAAAAAAA="
