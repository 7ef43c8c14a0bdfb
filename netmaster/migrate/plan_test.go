package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is the original netmaster's store of testdata/original-store
// (its README says how it was made).
func fixture(t testing.TB) *Tree {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "original-store", "etcd-v2-dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := DecodeEtcdV2(data)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestMapFixture(t *testing.T) {
	p := Map(fixture(t))
	if err := p.Err(false); err != nil {
		t.Fatalf("%v\nproblems: %v\nunmapped: %v", err, p.Problems, p.Unmapped)
	}
	if len(p.Skipped) != 3 {
		t.Errorf("skipped %v, want the 2 services and the lock", p.Skipped)
	}
	if p.Counts["endpoints"] != 352 {
		t.Errorf("endpoints %d, want 352", p.Counts["endpoints"])
	}
	t.Logf("counts %v notes %v pools %d kvs %d", p.Counts, p.Notes, len(p.Pools), len(p.KVs))
	for _, pl := range p.Pools {
		t.Logf("pool %s %+v %d taken", pl.ID, pl.Def, len(pl.Taken))
	}
	for _, kv := range p.KVs {
		if !strings.HasPrefix(kv.Key, "state/eps/") && !strings.HasPrefix(kv.Key, "obj/") {
			t.Logf("%s %.200s", kv.Key, kv.Value)
		}
	}
}
