package ipam_test

import (
	"testing"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/utils/usererr"
)

func TestParseSubnet(t *testing.T) {
	for _, tc := range []struct{ in, cidr, rng string }{
		{"10.1.1.1/24", "10.1.1.0/24", "10.1.1.0-10.1.1.255"},
		{"10.1.1.10-10.1.1.20/24", "10.1.1.0/24", "10.1.1.10-10.1.1.20"},
		{"10.1.1.10-10.1.5.254/16", "10.1.0.0/16", "10.1.1.10-10.1.5.254"},
		{"10.0.0.0/8", "10.0.0.0/8", "10.0.0.0-10.255.255.255"},
		{"10.1.1.1/32", "10.1.1.1/32", "10.1.1.1-10.1.1.1"},
	} {
		sn, err := ipam.ParseSubnet(tc.in)
		if err != nil || sn.String() != tc.cidr || sn.Range() != tc.rng {
			t.Errorf("ParseSubnet(%q) = %s %s %v, want %s %s", tc.in, sn, sn.Range(), err, tc.cidr, tc.rng)
		}
	}
	sn, _ := ipam.ParseSubnet("10.1.1.0/24")
	if _, err := sn.CheckHost("10.1.1.x"); usererr.Message(err) != "unable to convert hostIP 10.1.1.x to uint32" {
		t.Errorf("CheckHost: %v", err)
	}
	if a, err := sn.CheckHost("10.1.1.7"); err != nil || a.String() != "10.1.1.7" {
		t.Errorf("CheckHost: %v %v", a, err)
	}
	if _, err := ipam.ParseSubnetV6("2016:0617::/128"); err != nil {
		t.Errorf("/128: %v", err)
	}
	if _, err := ipam.ParseSubnetV6("2016:0617::/15"); usererr.Message(err) != "subnet length 15 not supported" {
		t.Errorf("/15: %v", err)
	}
}
