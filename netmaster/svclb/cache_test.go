package svclb

import (
	"reflect"
	"testing"

	"github.com/contiv/netplugin/state"
)

// A provider is matched by subset: every selector must be among its
// labels, extra labels do not matter (docs/daemons.md §4.12).
func TestSelectsIsSubsetMatching(t *testing.T) {
	labels := map[string]string{"app": "web", "tier": "fe"}
	for _, tc := range []struct {
		sel  map[string]string
		want bool
	}{
		{map[string]string{"app": "web"}, true},
		{map[string]string{"app": "web", "tier": "fe"}, true},
		{map[string]string{"app": "db"}, false},
		{map[string]string{"app": "web", "zone": "a"}, false},
		{nil, true},
	} {
		if got := selects(tc.sel, labels); got != tc.want {
			t.Errorf("selects(%v) = %v, want %v", tc.sel, got, tc.want)
		}
	}
}

// The persisted record lists, per provider, every service of the view
// that holds the same container; the cached values stay untouched.
func TestRecordOfListsServicesPerProvider(t *testing.T) {
	p := &state.Provider{IPAddress: "198.18.1.2", ContainerID: "c1", Tenant: "t"}
	a := &state.ServiceLB{Common: state.Common{ID: ID("t", "a")}, Providers: map[string]*state.Provider{providerKey(p): p}}
	b := &state.ServiceLB{Common: state.Common{ID: ID("t", "b")}, Providers: map[string]*state.Provider{providerKey(p): p}}
	rec := recordOf(a, map[string]*state.ServiceLB{a.ID: a, b.ID: b})
	if got := rec.Providers["198.18.1.2:t"].Services; !reflect.DeepEqual(got, []string{"a:t", "b:t"}) {
		t.Fatalf("services %v", got)
	}
	if p.Services != nil || rec.Selectors == nil {
		t.Fatalf("cached provider changed (%v) or nil selectors in the record", p.Services)
	}
	if got := providerList(a).Providers; !reflect.DeepEqual(got, []string{"198.18.1.2"}) {
		t.Fatalf("provider list %v", got)
	}
}

func TestWithoutContainer(t *testing.T) {
	prov := map[string]*state.Provider{
		"198.18.1.2:t": {IPAddress: "198.18.1.2", ContainerID: "c1"},
		"198.18.1.3:t": {IPAddress: "198.18.1.3", ContainerID: "c2"},
	}
	if out := withoutContainer(prov, "c9"); out != nil {
		t.Fatalf("no entry of c9, got %v", out)
	}
	out := withoutContainer(prov, "c1")
	if len(out) != 1 || out["198.18.1.3:t"] == nil || len(prov) != 2 {
		t.Fatalf("got %v (input %v)", out, prov)
	}
}
