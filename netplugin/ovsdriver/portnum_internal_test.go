package ovsdriver

import "testing"

func TestPortNumCovers(t *testing.T) {
	for _, c := range []struct {
		res, n int
		want   bool
	}{
		{0, 1, false},                              // nothing reserved yet
		{64, 1, true},                              // in the block
		{64, 64, true},                             // its end
		{64, 65, false},                            // past it
		{64, 200, false},                           // far past it (skipped names)
		{maxPortNum - 1, maxPortNum - 1, true},     // a capped block at the ring's end
		{maxPortNum - 1, 1, false},                 // the next lap
		{64, maxPortNum - 1, false},                // a reservation of the next lap does not cover the old one
		{maxPortNum - 10, maxPortNum - 40, true},   // late in a lap
		{maxPortNum - 10, maxPortNum - 100, false}, // more than a block behind
	} {
		if got := portNumCovers(c.res, c.n); got != c.want {
			t.Errorf("portNumCovers(%d, %d) = %v, want %v", c.res, c.n, got, c.want)
		}
	}
}
