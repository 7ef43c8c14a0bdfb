package reclaim_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/endpoints/reclaim"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// A leader's sweep finds addresses with two owners and reports them (log
// and GET /debug/sweep) without changing them, and takes again an owned
// address it finds free in its pool, so that it is not handed out to a
// second owner (docs/allocation-integrity.md).
func TestSweepReportsTwoOwners(t *testing.T) {
	e := newEnv(t) // LeaderTTL 0: every start sweeps at once
	e.CreateNet("default", "dup", "vlan", "198.18.50.0/24", "198.18.50.254", 0)
	e.CreateEndpoint(mastertest.CreateEP("default", "dup", "", "a", ""))
	e.CreateEndpoint(mastertest.CreateEP("default", "dup", "", "b", ""))
	ctx := mastertest.Ctx(t, 10*time.Second)

	// Damage the store as the double allocation did: b's record names a's
	// address, and c's names one free in the pool.
	recB := e.Dump()["state/eps/dup.default-b"]
	if !strings.Contains(recB, `"ipAddress":"198.18.50.2"`) {
		t.Fatalf("endpoint b: %s", recB)
	}
	bad := strings.Replace(recB, `"ipAddress":"198.18.50.2"`, `"ipAddress":"198.18.50.1"`, 1)
	if _, err := e.St.Put(ctx, "state/eps/dup.default-b", []byte(bad)); err != nil {
		t.Fatal(err)
	}
	recC := strings.NewReplacer(`"ipAddress":"198.18.50.2"`, `"ipAddress":"198.18.50.7"`, "dup.default-b", "dup.default-c").Replace(recB)
	if _, err := e.St.Put(ctx, "state/eps/dup.default-c", []byte(recC)); err != nil {
		t.Fatal(err)
	}
	if code, _ := e.Do("GET", "/debug/sweep", ""); code != http.StatusOK {
		t.Fatalf("GET /debug/sweep after the start's sweep: %d", code)
	}

	e.Stop()
	e.Start()
	var rep reclaim.SweepReport
	if err := json.Unmarshal([]byte(e.OK("GET", "/debug/sweep", "")), &rep); err != nil {
		t.Fatal(err)
	}
	wantDouble := []string{"dup.default 198.18.50.1: endpoint dup.default-a, endpoint dup.default-b"}
	if !slices.Equal(rep.DoubleOwned, wantDouble) {
		t.Fatalf("double owned %q, want %q", rep.DoubleOwned, wantDouble)
	}
	// .2 lost its owner (b's record was changed): released. .7 is owned
	// by c but was free: taken again.
	if !slices.Equal(rep.Released, []string{"dup.default 198.18.50.2"}) {
		t.Fatalf("released %q", rep.Released)
	}
	if !slices.Equal(rep.Retaken, []string{"dup.default 198.18.50.7: endpoint dup.default-c"}) {
		t.Fatalf("retaken %q", rep.Retaken)
	}
	// Both records are kept as they are.
	d := e.Dump()
	if d["state/eps/dup.default-b"] != bad || d["state/eps/dup.default-a"] == "" {
		t.Fatalf("sweep changed the records: %s", d["state/eps/dup.default-b"])
	}
	used, err := ipam.NewV4(e.St).InUse(ctx, "dup.default")
	if err != nil || used != "198.18.50.1, 198.18.50.7, 198.18.50.254" {
		t.Fatalf("pool after the sweep: %q %v", used, err)
	}
	// The next endpoint gets neither .1 nor .7.
	if r := e.CreateEndpoint(mastertest.CreateEP("default", "dup", "", "d", "")); r.EndpointConfig.IPAddress != "198.18.50.2" {
		t.Fatalf("next endpoint got %s", r.EndpointConfig.IPAddress)
	}
}
