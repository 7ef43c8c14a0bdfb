package ovsdb_test

import (
	"testing"

	"github.com/contiv/netplugin/ofnet/ovsdb"
)

// Ensure lets a caller build its own idempotent helper: here a port with
// two interfaces, which CreatePort does not make.
func TestEnsureCustomPlan(t *testing.T) {
	o, c, ctx := startOVS(t)
	if err := c.CreateBridge(ctx, ovsdb.BridgeSpec{Name: "br0", DatapathType: "netdev"}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	plan := func(v ovsdb.View) ([]ovsdb.Operation, error) {
		calls++
		if _, ok := v.FindString("Port", "name", "bond0"); ok {
			return nil, nil
		}
		br, ok := v.FindString("Bridge", "name", "br0")
		if !ok {
			return nil, ovsdb.ErrNotFound
		}
		return []ovsdb.Operation{
			ovsdb.Insert("Interface", ovsdb.Row{"name": "m1", "type": "internal"}, "i1"),
			ovsdb.Insert("Interface", ovsdb.Row{"name": "m2", "type": "internal"}, "i2"),
			ovsdb.Insert("Port", ovsdb.Row{"name": "bond0", "interfaces": ovsdb.Set{ovsdb.NamedUUID("i1"), ovsdb.NamedUUID("i2")},
				"other_config": map[string]string{"lacp-fallback-ab": "true"}}, "p"),
			ovsdb.Mutate("Bridge", []ovsdb.Condition{ovsdb.Eq("_uuid", br.UUID())}, ovsdb.MutateInsert("ports", ovsdb.Set{ovsdb.NamedUUID("p")})),
		}, nil
	}
	if err := c.Ensure(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if got := vsctl(t, o, "get", "Port", "bond0", "other_config:lacp-fallback-ab"); got != `"true"` {
		t.Fatalf("other_config:lacp-fallback-ab = %s", got)
	}
	if got := vsctl(t, o, "list-ifaces", "br0"); got != "m1\nm2" {
		t.Fatalf("interfaces = %q", got)
	}
	calls = 0
	if err := c.Ensure(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("second Ensure computed the plan %d times, want 1 (nothing to do)", calls)
	}
	if got := vsctl(t, o, "list-ports", "br0"); got != "bond0" {
		t.Fatalf("ports = %q", got)
	}
}
