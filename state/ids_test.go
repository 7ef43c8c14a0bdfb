package state

import (
	"net/netip"
	"testing"
)

func TestIDs(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{NetworkID("default", "contiv-net"), "contiv-net.default"},
		{GroupID("blue", "web"), "web:blue"},
		{EndpointID("default", "contiv-net", "3f2a"), "contiv-net.default-3f2a"},
		{NativeEndpointID("node1"), "node1-native-intf"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestEndpointMAC(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"10.1.2.254", "02:02:0a:01:02:fe"},
		{"198.18.0.3", "02:02:c6:12:00:03"},
		{"::ffff:10.1.1.3", "02:02:0a:01:01:03"},
		{"2001:db8::1", ""},
	} {
		if got := EndpointMAC(netip.MustParseAddr(c.addr)).String(); got != c.want {
			t.Errorf("EndpointMAC(%s) = %q, want %q", c.addr, got, c.want)
		}
	}
	if EndpointMAC(netip.Addr{}) != nil {
		t.Error("EndpointMAC of the zero address is not nil")
	}
}
