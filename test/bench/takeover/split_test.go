package takeover

import "testing"

// The endpoints fit their networks, and the networks the benchmark range.
func TestSplitAndSubnets(t *testing.T) {
	parts := split(100000)
	sum := 0
	for _, p := range parts {
		if p > hostsPerNet {
			t.Fatalf("%d endpoints in one /18", p)
		}
		sum += p
	}
	if sum != 100000 || len(parts) != maxNets {
		t.Fatalf("split(100000) = %v", parts)
	}
	for i, want := range map[int][2]string{0: {"198.18.0.0/18", "198.18.63.254"}, 5: {"198.19.64.0/18", "198.19.127.254"}, 6: {"198.19.128.0/18", "198.19.191.254"}} {
		if s, gw := netSubnet(i); s != want[0] || gw != want[1] {
			t.Errorf("netSubnet(%d) = %s %s, want %v", i, s, gw, want)
		}
	}
}
