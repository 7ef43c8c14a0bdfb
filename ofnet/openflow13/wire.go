package openflow13

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShort is wrapped by every decoding error caused by a buffer that is shorter than a
// length field (or a fixed layout) requires.
var ErrShort = errors.New("openflow13: truncated data")

// ErrBadLength is wrapped by decoding errors caused by a length field that is impossible
// (smaller than its own header, not a multiple of 8 where required, ...).
var ErrBadLength = errors.New("openflow13: bad length")

// reader is a bounds-checked big-endian cursor. The first failure is sticky: every later
// read returns zero values, so decoders check r.err once at the end.
type reader struct {
	b   []byte
	off int
	err error
}

func newReader(b []byte) *reader { return &reader{b: b} }

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at offset %d of %d", ErrShort, what, r.off, len(r.b))
	}
}

func (r *reader) left() int {
	if r.err != nil {
		return 0
	}
	return len(r.b) - r.off
}

func (r *reader) bytes(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail(what)
		return nil
	}
	v := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return v
}

// copyBytes is bytes() with a private copy, so decoded messages never alias the input.
func (r *reader) copyBytes(n int, what string) []byte {
	v := r.bytes(n, what)
	if v == nil {
		return nil
	}
	return append([]byte(nil), v...)
}

func (r *reader) rest() []byte { return r.copyBytes(r.left(), "rest") }

func (r *reader) skip(n int, what string) { r.bytes(n, what) }

func (r *reader) u8(what string) uint8 {
	v := r.bytes(1, what)
	if v == nil {
		return 0
	}
	return v[0]
}

func (r *reader) u16(what string) uint16 {
	v := r.bytes(2, what)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint16(v)
}

func (r *reader) u32(what string) uint32 {
	v := r.bytes(4, what)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

func (r *reader) u64(what string) uint64 {
	v := r.bytes(8, what)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func (r *reader) setErr(err error) {
	if r.err == nil {
		r.err = err
	}
}

var be = binary.BigEndian

func pad8(n int) int { return (n + 7) &^ 7 }

func appendZeros(b []byte, n int) []byte {
	for i := 0; i < n; i++ {
		b = append(b, 0)
	}
	return b
}

// putLen16 writes a 16-bit length at b[at:] (for length fields known only after encoding).
func putLen16(b []byte, at int, n int) error {
	if n > 0xffff {
		return fmt.Errorf("openflow13: encoded length %d exceeds 65535", n)
	}
	be.PutUint16(b[at:], uint16(n))
	return nil
}
