package migrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/migrate"
	"github.com/contiv/netplugin/netmaster/migrate/migratecmd"
	"github.com/contiv/netplugin/netmaster/netmastertest"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/utils/daemonflags"
)

// writeDump writes tr as an etcd v2 answer file, with edit applied to its
// values first.
func writeDump(t *testing.T, tr *migrate.Tree, edit func(kv map[string][]byte)) string {
	t.Helper()
	kv := map[string][]byte{}
	for k, v := range tr.KV {
		kv[k] = v
	}
	edit(kv)
	var nodes []string
	for k, v := range kv {
		nodes = append(nodes, `{"key":`+quote("/contiv.io/"+k)+`,"value":`+quote(string(v))+`}`)
	}
	body := `{"action":"get","node":{"dir":true,"nodes":[` + strings.Join(nodes, ",") + `]}}`
	p := filepath.Join(t.TempDir(), "dump.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func quote(s string) string {
	b := strings.Builder{}
	b.WriteString(`"`)
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteString(`\` + string(r))
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(`"`)
	return b.String()
}

// Corrupt or partial sources give a clear report and change nothing.
func TestCorruptSourcesChangeNothing(t *testing.T) {
	tr := readFixture(t)
	tgt := objdbtest.StartEmbeddedEtcd(t)
	store := daemonflags.Common{EtcdEndpoints: []string{tgt.Endpoint}}
	kv := openStore(t, store)
	truncDump := filepath.Join(t.TempDir(), "trunc.json")
	data, _ := os.ReadFile(filepath.Join(fixtureDir, "etcd-v2-dump.json"))
	os.WriteFile(truncDump, data[:len(data)/2], 0o600)
	cases := []struct {
		name, path, want string
	}{
		{"truncated dump", truncDump, "unexpected end of JSON input"},
		{"truncated JSON value", writeDump(t, tr, func(kv map[string][]byte) {
			v := kv["state/eps/web-net.blue-bw1"]
			kv["state/eps/web-net.blue-bw1"] = v[:len(v)/2]
		}), "PROBLEM: state/eps/web-net.blue-bw1: endpoint: unexpected end of JSON input"},
		{"missing pool header", writeDump(t, tr, func(kv map[string][]byte) {
			var m map[string]any
			json.Unmarshal(kv["state/nets/web-net.red"], &m)
			delete(m, "ipAllocMap")
			kv["state/nets/web-net.red"], _ = json.Marshal(m)
		}), "PROBLEM: state/nets/web-net.red: ipAllocMap (the network's address pool): bitset is empty: no header"},
		{"pool without its header", writeDump(t, tr, func(kv map[string][]byte) {
			kv["state/nets/web-net.red"] = []byte(strings.Replace(string(kv["state/nets/web-net.red"]), `"ipAllocMap":"AAAAAAAAAQAA`, `"ipAllocMap":"`, 1))
		}), "PROBLEM: state/nets/web-net.red: ipAllocMap (the network's address pool): bitset header claims"},
		{"no pool at all", writeDump(t, tr, func(kv map[string][]byte) {
			delete(kv, "state/nets/db-net.blue")
		}), "PROBLEM: state/eps/db-net.blue-"},
		{"corrupt bitset header", writeDump(t, tr, func(kv map[string][]byte) {
			kv["state/auto-vlan/global"] = []byte(`{"id":"global","vlans":"f_________8AAAAAAAAAAA=="}`)
		}), "bitset header claims"},
		{"key of unknown shape", writeDump(t, tr, func(kv map[string][]byte) {
			kv["state/nets/web-net.blue/extra"] = []byte(`{}`)
		}), "UNMAPPED: state/nets/web-net.blue/extra: unknown key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := dump(t, kv)
			out, err := runMigrate(t, migratecmd.Config{Source: migrate.FileSource{Path: c.path}, EtcdEndpoints: store.EtcdEndpoints})
			if err == nil {
				t.Fatalf("migrated a corrupt source:\n%s", out)
			}
			if !strings.Contains(out+err.Error(), c.want) || !strings.Contains(err.Error(), "nothing written") {
				t.Errorf("report lacks %q:\n%s\nerror: %v", c.want, out, err)
			}
			if d := diffDumps(before, dump(t, kv)); d != "" {
				t.Fatalf("changed the target:\n%s", d)
			}
		})
	}
}

// A non-empty target is refused unless merging; a merge with a conflict
// writes nothing.
func TestTargetRefusals(t *testing.T) {
	tgt := objdbtest.StartEmbeddedEtcd(t)
	store := daemonflags.Common{EtcdEndpoints: []string{tgt.Endpoint}}
	kv := openStore(t, store)
	ctx := ctxT(t, time.Minute)
	if _, err := kv.Put(ctx, "obj/modeldb/tenant/blue", []byte(`{"key":"blue","tenantName":"blue","other":1}`)); err != nil {
		t.Fatal(err)
	}
	src := migrate.FileSource{Path: filepath.Join(fixtureDir, "etcd-v2-dump.json")}
	before := dump(t, kv)
	out, err := runMigrate(t, migratecmd.Config{Source: src, EtcdEndpoints: store.EtcdEndpoints})
	if !errors.Is(err, migrate.ErrTarget) || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("non-empty target: %v\n%s", err, out)
	}
	cfg := migratecmd.Config{Source: src, EtcdEndpoints: store.EtcdEndpoints, Apply: migrate.Options{Merge: true}}
	out, err = runMigrate(t, cfg)
	if !errors.Is(err, migrate.ErrTarget) || !strings.Contains(out, "CONFLICT: obj/modeldb/tenant/blue") {
		t.Fatalf("merge with a conflict: %v\n%s", err, out)
	}
	if d := diffDumps(before, dump(t, kv)); d != "" {
		t.Fatalf("refused runs changed the target:\n%s", d)
	}
	// An equal key merges.
	tr := readFixture(t)
	if _, err := kv.Put(ctx, "obj/modeldb/tenant/blue", tr.KV["obj/modeldb/tenant/blue"]); err != nil {
		t.Fatal(err)
	}
	if out, err = runMigrate(t, cfg); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
}

// failingKV fails every Put after the first n.
type failingKV struct {
	objdb.KV
	n atomic.Int64
}

var errInjected = errors.New("injected store failure")

func (f *failingKV) Put(ctx context.Context, key string, v []byte, opts ...objdb.OpOption) (int64, error) {
	if f.n.Add(-1) < 0 {
		return 0, errInjected
	}
	return f.KV.Put(ctx, key, v, opts...)
}

// A run cut short leaves the marker in progress; the netmaster refuses to
// start; the same run again finishes it and the result equals an
// uninterrupted migration.
func TestResumeAfterFailure(t *testing.T) {
	tgt := objdbtest.StartEmbeddedEtcd(t)
	store := daemonflags.Common{EtcdEndpoints: []string{tgt.Endpoint}}
	kv := openStore(t, store)
	plan := migrate.Map(readFixture(t))
	f := &failingKV{KV: kv}
	f.n.Store(150)
	_, err := migrate.Apply(ctxT(t, time.Minute), f, plan, migrate.Options{Source: "fixture", Workers: 1})
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "run the same command again") {
		t.Fatalf("cut-short run: %v", err)
	}
	st, _, err := migrate.ReadStatus(ctxT(t, time.Minute), kv)
	if err != nil || st == nil || st.State != migrate.StateInProgress {
		t.Fatalf("marker after a cut-short run: %+v %v", st, err)
	}
	err = netmastertest.StartErr(t, store)
	if err == nil || !strings.Contains(err.Error(), "unfinished migration") {
		t.Fatalf("netmaster started on a half-migrated store: %v", err)
	}
	res, err := migrate.Apply(ctxT(t, time.Minute), kv, plan, migrate.Options{Source: "fixture"})
	if err != nil || !res.Resumed {
		t.Fatalf("resume: %+v %v", res, err)
	}
	// Same content as an uninterrupted run into a fresh store.
	tgt2 := objdbtest.StartEmbeddedEtcd(t)
	kv2 := openStore(t, daemonflags.Common{EtcdEndpoints: []string{tgt2.Endpoint}})
	if _, err := migrate.Apply(ctxT(t, time.Minute), kv2, plan, migrate.Options{Source: "fixture"}); err != nil {
		t.Fatal(err)
	}
	if d := diffValues(dump(t, kv), dump(t, kv2)); d != "" {
		t.Fatalf("resumed migration differs from an uninterrupted one:\n%s", d)
	}
}

// diffValues compares dumps without versions, the marker and the chunks'
// generation (the header's version).
func diffValues(a, b map[string]string) string {
	strip := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if k == migrate.StatusKey {
				continue
			}
			_, val, _ := strings.Cut(v, " ")
			if strings.Contains(k, "/v4/chunk/") {
				_, val, _ = strings.Cut(val, `"bits"`)
			}
			out[k] = val
		}
		return out
	}
	return diffDumps(strip(a), strip(b))
}
