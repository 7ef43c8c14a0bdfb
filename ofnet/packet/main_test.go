package packet

import (
	"encoding/hex"
	"net"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// unhex decodes a hex string in which spaces and newlines are only for reading.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex vector %q: %v", s, err)
	}
	return b
}

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// ip4 returns the 4-byte form, which is what the parsers produce.
func ip4(s string) net.IP { return net.ParseIP(s).To4() }

// Addresses of the test vectors: endpoint-style MACs (02:02 + IPv4) in 198.18.0.0/15.
var (
	macA = mac("02:02:c6:12:00:02")
	macB = mac("02:02:c6:12:00:03")
	ipA  = ip4("198.18.0.2")
	ipB  = ip4("198.18.0.3")
	ipGW = ip4("198.18.0.1")
)

// Hex pieces shared by the vectors.
const (
	hexBcast     = "ffffffffffff"
	hexMacA      = "0202c6120002"
	hexMacB      = "0202c6120003"
	hexARPReqAtB = "0001 0800 06 04 0001 0202c6120002 c6120002 000000000000 c6120003"
	hexARPRepBtA = "0001 0800 06 04 0002 0202c6120003 c6120003 0202c6120002 c6120002"
	// UDP 198.18.0.2:40000 → 198.18.0.1:53, DF, TTL 64, id 0x1c46, payload "dnsq".
	hexIPv4UDP = "4500 0020 1c46 4000 4011 925f c6120002 c6120001" +
		"9c40 0035 000c 0000 646e7371"
	// ICMP echo request id 0x1234 seq 1 "abcd" with a router-alert option (IHL 6).
	hexIPv4ICMPOpt = "4600 0024 0001 0000 4001 59ac c6120002 c6120001 94040000" +
		"0800 2104 1234 0001 61626364"
)
