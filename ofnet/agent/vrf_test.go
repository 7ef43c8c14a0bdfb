package agent

import (
	"context"
	"maps"
	"net"
	"testing"
)

// A restarted agent gives each tenant the VRF id of the previous run, in
// whatever order the networks come back, and reports new ids for saving.
func TestVrfIDsSurviveRestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var saved map[string]uint8
	a, err := New(Config{Datapath: DatapathVxlan, LocalIP: net.ParseIP("198.18.0.1"), OFListener: ln,
		Logger: testLogger(t), VrfIDs: map[string]uint8{"default": 1, "blue": 2},
		OnVrfIDs: func(ids map[string]uint8) { saved = ids }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.pool.Close()
	ctx := context.Background()
	// The previous run saw default first; this one sees blue first.
	for _, n := range []struct {
		vlan uint16
		vrf  string
	}{{2, "blue"}, {1, "default"}, {3, "green"}} {
		if err := a.AddNetwork(ctx, n.vlan, 5000+uint32(n.vlan), "", n.vrf); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]uint8{}
	a.mu.Lock()
	for name, r := range a.vrfs {
		got[name] = r.ID
	}
	a.mu.Unlock()
	want := map[string]uint8{"default": 1, "blue": 2, "green": 3}
	if !maps.Equal(got, want) {
		t.Fatalf("VRF ids %v, want %v", got, want)
	}
	if !maps.Equal(saved, want) {
		t.Fatalf("saved VRF ids %v, want %v", saved, want)
	}
}
