package packet

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// Fuzz targets: parsing never panics, failures wrap one of the package's sentinels, and
// whatever parses re-marshals to bytes that parse to the same values. Each target also
// decodes the layers above it, so FuzzParseEthernet covers ARP/IPv4/UDP/ICMP too.
// Seeds below plus the committed corpus under testdata/fuzz/<target>.

func FuzzParseEthernet(f *testing.F) {
	for _, s := range []string{
		hexBcast + hexMacA + "0806" + hexARPReqAtB,
		hexMacA + hexMacB + "8100 a064 0806" + hexARPRepBtA,
		hexMacB + hexMacA + "0800" + hexIPv4UDP,
		hexMacB + hexMacA + "8100 0ffd 0800" + hexIPv4ICMPOpt + "0000",
		hexMacB + hexMacA + "8100 000a 8100 0014 0800",
		hexMacB + hexMacA + "8100",
	} {
		f.Add(unhex(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEthernet(b)
		if err != nil {
			checkParseError(t, e, err)
			return
		}
		out := e.Marshal()
		if !bytes.Equal(out, b) {
			t.Fatalf("Marshal(ParseEthernet(b)) != b:\n got %x\nwant %x", out, b)
		}
		e2, err := ParseEthernet(out)
		if err != nil || !reflect.DeepEqual(e, e2) {
			t.Fatalf("re-parse: %v\n got %+v\nwant %+v", err, e2, e)
		}
		switch e.EtherType {
		case EtherTypeARP:
			checkARP(t, e.Payload)
		case EtherTypeIPv4:
			checkIPv4(t, e.Payload)
		}
	})
}

func FuzzParseARP(f *testing.F) {
	for _, s := range []string{
		hexARPReqAtB,
		hexARPRepBtA + "000000000000",
		"0001 0800 06 04 0001 0202c6120002 c6120002 000000000000 c61200",
		"0006 0800 06 04 0001",
	} {
		f.Add(unhex(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkARP(t, b) })
}

func FuzzParseIPv4(f *testing.F) {
	for _, s := range []string{
		hexIPv4UDP,
		hexIPv4ICMPOpt,
		"45b9 0018 abcd 20b9 0111 0000 c6120002 c6120003 deadbeef",
		"4f00 003c 0000 0000 4011 0000 c6120002 c6120001 00000000",
		"4500 001c 0000 0000 4011 0000 c6120002 c6120001 0001 0002 0007 0000",
	} {
		f.Add(unhex(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkIPv4(t, b) })
}

func checkParseError[T any](t *testing.T, v *T, err error) {
	t.Helper()
	if v != nil {
		t.Fatalf("non-nil result with error %v", err)
	}
	if !errors.Is(err, ErrShort) && !errors.Is(err, ErrBadLength) && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("error wraps no sentinel: %v", err)
	}
}

func checkARP(t *testing.T, b []byte) {
	a, err := ParseARP(b)
	if err != nil {
		checkParseError(t, a, err)
		return
	}
	out := a.Marshal()
	if !bytes.Equal(out, b[:arpLen]) {
		t.Fatalf("Marshal(ParseARP(b)) != b[:28]:\n got %x\nwant %x", out, b[:arpLen])
	}
	a2, err := ParseARP(out)
	if err != nil || !reflect.DeepEqual(a, a2) {
		t.Fatalf("re-parse: %v\n got %+v\nwant %+v", err, a2, a)
	}
	_ = a.IsGratuitous()
}

func checkIPv4(t *testing.T, b []byte) {
	p, err := ParseIPv4(b)
	if err != nil {
		checkParseError(t, p, err)
		return
	}
	out := p.Marshal()
	// Identical except for the checksum, which Marshal recomputes.
	pkt := b[:p.TotalLen]
	if len(out) != len(pkt) || !bytes.Equal(out[:10], pkt[:10]) || !bytes.Equal(out[12:], pkt[12:]) {
		t.Fatalf("Marshal(ParseIPv4(b)) differs beyond the checksum:\n got %x\nwant %x", out, pkt)
	}
	if !IPv4ChecksumOK(out) {
		t.Fatalf("Marshal wrote a bad checksum: %x", out)
	}
	p2, err := ParseIPv4(out)
	if err != nil {
		t.Fatalf("re-parse: %v", err)
	}
	want := *p
	want.Checksum = p2.Checksum
	if !reflect.DeepEqual(&want, p2) {
		t.Fatalf("re-parse:\n got %+v\nwant %+v", p2, &want)
	}
	switch p.Protocol {
	case ProtoUDP:
		checkUDP(t, p.Payload)
	case ProtoICMP:
		checkICMP(t, p.Payload)
	}
}

func checkUDP(t *testing.T, b []byte) {
	u, err := ParseUDP(b)
	if err != nil {
		checkParseError(t, u, err)
		return
	}
	if out := u.Marshal(); !bytes.Equal(out, b[:u.Length]) {
		t.Fatalf("Marshal(ParseUDP(b)) != b[:Length]:\n got %x\nwant %x", out, b[:u.Length])
	}
}

func checkICMP(t *testing.T, b []byte) {
	m, err := ParseICMP(b)
	if err != nil {
		checkParseError(t, m, err)
		return
	}
	out := m.Marshal()
	if !bytes.Equal(out[:2], b[:2]) || !bytes.Equal(out[4:], b[4:]) || !ICMPChecksumOK(out) {
		t.Fatalf("Marshal(ParseICMP(b)) differs beyond the checksum or is invalid:\n got %x\nwant %x", out, b)
	}
}
