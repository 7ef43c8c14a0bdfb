package v4store

import (
	"encoding/json"
	"testing"
)

// The hand-built chunk encoding is valid JSON that round-trips.
func TestChunkEncoding(t *testing.T) {
	h := Header{Subnet: "10.0.0.0/8", First: "10.0.0.0", Last: "10.255.255.255"}
	l, err := NewLayout("p", h, 42)
	if err != nil {
		t.Fatal(err)
	}
	var b [ChunkWords]uint64
	b[0], b[63] = 0x8000000000000001, 1<<62
	enc := l.EncodeChunk(7, &b, "w1.2")
	var ch chunk4
	if err := json.Unmarshal(enc, &ch); err != nil || ch.Gen != 42 || ch.W != "w1.2" {
		t.Fatalf("%s: %v %+v", enc, err, ch)
	}
	got, err := DecodeChunk(l, 7, enc)
	if err != nil || *got != b {
		t.Fatalf("round trip: %v", err)
	}
	if k := (Keys{p: "x/"}).Chunk(7); k != "x/chunk/0007" {
		t.Fatalf("chunk key %q", k)
	}
	if k := (Keys{p: "x/"}).Chunk(4095); k != "x/chunk/4095" {
		t.Fatalf("chunk key %q", k)
	}
	// A /30: 4 addresses, hosts 1 and 2 allocatable, one byte stored.
	l30, _ := NewLayout("q", Header{Subnet: "10.0.0.0/30", First: "10.0.0.0", Last: "10.0.0.3"}, 1)
	if l30.Lo != 1 || l30.Hi != 2 || l30.chunkBytes(0) != 1 {
		t.Fatalf("/30 layout lo %d hi %d bytes %d", l30.Lo, l30.Hi, l30.chunkBytes(0))
	}
	// A /32 and a /31 hand out nothing.
	for _, sn := range []string{"10.0.0.0/32", "10.0.0.0/31"} {
		lx, _ := NewLayout("r", Header{Subnet: sn, First: "10.0.0.0", Last: "10.0.0.0"}, 1)
		if lx.Lo <= lx.Hi {
			t.Fatalf("%s allocatable %d-%d", sn, lx.Lo, lx.Hi)
		}
	}
}
