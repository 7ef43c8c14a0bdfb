package openflow13

import (
	"bytes"
	"errors"
	"testing"
)

func TestMeterModWire(t *testing.T) {
	m := &MeterMod{Header: Header{Xid: 7}, Command: MeterAdd, Flags: MeterFlagKbps | MeterFlagBurst, MeterID: 3,
		Bands: []MeterBand{{Rate: 52428, BurstSize: 5000}}}
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{4, 29, 0, 32, 0, 0, 0, 7, // header
		0, 0, 0, 5, 0, 0, 0, 3, // command, flags, meter id
		0, 1, 0, 16, 0, 0, 0xcc, 0xcc, 0, 0, 0x13, 0x88, 0, 0, 0, 0} // drop band
	if !bytes.Equal(b, want) {
		t.Fatalf("wire\n got %v\nwant %v", b, want)
	}
	got, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	mm, ok := got.(*MeterMod)
	if !ok || mm.MeterID != 3 || len(mm.Bands) != 1 || mm.Bands[0] != m.Bands[0] || mm.Flags != m.Flags {
		t.Fatalf("parsed %#v", got)
	}
	if s := mm.String(); s != "meter=3 kbps burst bands=type=drop rate=52428 burst_size=5000" {
		t.Errorf("String = %q", s)
	}
	del, _ := (&MeterMod{Command: MeterDelete, MeterID: MeterAll}).MarshalBinary()
	if len(del) != 16 {
		t.Errorf("delete is %d bytes, want 16", len(del))
	}
	// A band of another type is refused, not misread.
	bad := append([]byte(nil), b...)
	bad[17] = 2 // DSCP remark
	if _, err := Parse(bad); !errors.Is(err, ErrBadLength) {
		t.Errorf("Parse(remark band) = %v, want ErrBadLength", err)
	}
}

func FuzzMeterMod(f *testing.F) {
	for _, m := range []*MeterMod{
		{Command: MeterAdd, Flags: MeterFlagKbps | MeterFlagBurst, MeterID: 1, Bands: []MeterBand{{Rate: 1000, BurstSize: 100}}},
		{Command: MeterDelete, MeterID: MeterAll},
	} {
		f.Add(mustMarshal(f, m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= HeaderLen {
			b = append([]byte(nil), b...)
			b[0], b[1] = Version, TypeMeterMod
			be.PutUint16(b[2:], uint16(min(len(b), 0xffff)))
			b = b[:min(len(b), 0xffff)]
		}
		m, err := Parse(b)
		if err != nil {
			return
		}
		if mm, ok := m.(*MeterMod); ok {
			_ = mm.String()
		}
		checkMessageFixpoint(t, m)
	})
}
