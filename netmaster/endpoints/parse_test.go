package endpoints

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/state"
)

// The pure parts of the package; harness_test.go (TestMain) serves the
// black-box tests of whole terms.

func TestParseNetworkID(t *testing.T) {
	for in, want := range map[string]netRef{
		"net.ten":           {netID: "net.ten"},
		"net:grp.ten":       {netID: "net.ten", epgID: "grp:ten"},
		"net:grp.ten|pool1": {netID: "net.ten", epgID: "grp:ten"},
		"net.ten|x":         {netID: "net.ten"},
	} {
		if got := parseNetworkID(in); got != want {
			t.Errorf("parseNetworkID(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestParseAddressPool(t *testing.T) {
	for _, c := range []struct {
		in     string
		pfx    string
		tenant string
		ok     bool
	}{
		{"10.1.0.0/16", "10.1.0.0/16", "", true},
		{"10.1.2.3/16:blue", "10.1.0.0/16", "blue", true},
		{"2001:db8::/64", "2001:db8::/64", "", true},
		{"2001:db8::/64:blue", "2001:db8::/64", "blue", true},
		{"10.1.0.0", "", "", false},
		{"nonsense:blue", "", "", false},
	} {
		pfx, tenant, ok := parseAddressPool(c.in)
		if ok != c.ok || (ok && (pfx != netip.MustParsePrefix(c.pfx) || tenant != c.tenant)) {
			t.Errorf("parseAddressPool(%q) = %v %q %v, want %s %q %v", c.in, pfx, tenant, ok, c.pfx, c.tenant, c.ok)
		}
	}
}

func TestOpers(t *testing.T) {
	eps := []state.Endpoint{
		{Common: state.Common{ID: "a"}, NetID: "n1.t", IPAddress: "10.0.0.2", Labels: map[string]string{"k": "v"}},
		{Common: state.Common{ID: "b"}, NetID: "n2.t"},
	}
	got := Opers(eps, func(ep state.Endpoint) bool { return ep.NetID == "n1.t" })
	want := []contivmodel.EndpointOper{{Network: "n1.t", IpAddress: []string{"10.0.0.2", ""}, Labels: "map[k:v]"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Opers = %+v, want %+v", got, want)
	}
	if got := Opers(eps, func(state.Endpoint) bool { return false }); got != nil {
		t.Fatalf("Opers of none = %#v, want nil", got)
	}
}
