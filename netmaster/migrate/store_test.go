package migrate_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netmaster/migrate"
	"github.com/contiv/netplugin/netmaster/migrate/migratecmd"
	"github.com/contiv/netplugin/netmaster/netmastertest"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/dial"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/daemonflags"
)

const fixtureDir = "testdata/original-store"

func readFixture(t testing.TB) *migrate.Tree {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, "etcd-v2-dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := migrate.DecodeEtcdV2(data)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// loadEtcdV2 writes the tree through the v2 keys API, as the original did.
func loadEtcdV2(t testing.TB, endpoint string, tr *migrate.Tree) {
	t.Helper()
	for _, k := range tr.Keys() {
		form := url.Values{"value": {string(tr.KV[k])}}
		req, _ := http.NewRequest(http.MethodPut, endpoint+"/v2/keys/"+migrate.Root+"/"+k, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("v2 put %s: %v", k, err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("v2 put %s: %s", k, resp.Status)
		}
	}
}

// loadConsul writes the tree into consul KV (keys without the leading
// "/", docs/daemons.md §2).
func loadConsul(t testing.TB, addr string, tr *migrate.Tree) {
	t.Helper()
	for _, k := range tr.Keys() {
		req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/v1/kv/"+migrate.Root+"/"+k, bytes.NewReader(tr.KV[k]))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("consul put %s: %v", k, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("consul put %s: %s", k, resp.Status)
		}
	}
}

func openStore(t testing.TB, store daemonflags.Common) objdb.Store {
	t.Helper()
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	st, err := dial.Open(ctxT(t, 30*time.Second), dial.Config{EtcdEndpoints: store.EtcdEndpoints, ConsulEndpoints: store.ConsulEndpoints, Logger: logrus.NewEntry(l)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// dump is every target key with its value and version.
func dump(t testing.TB, kv objdb.KV) map[string]string {
	t.Helper()
	kvs, err := kv.List(ctxT(t, 30*time.Second), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range kvs {
		out[e.Key] = fmt.Sprintf("%d %s", e.Version, e.Value)
	}
	return out
}

func diffDumps(a, b map[string]string) string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d = append(d, "- "+k)
		} else if v != w {
			d = append(d, "~ "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "+ "+k)
		}
	}
	sort.Strings(d)
	return strings.Join(d, "\n")
}

func runMigrate(t testing.TB, cfg migratecmd.Config) (string, error) {
	t.Helper()
	var out bytes.Buffer
	_, err := migratecmd.Run(ctxT(t, 5*time.Minute), cfg, &out)
	return out.String(), err
}

func TestMigrateFixtureEtcdV2ToEtcdV3(t *testing.T) {
	tr := readFixture(t)
	src := objdbtest.StartEtcdProcessArgs(t, "--enable-v2")
	loadEtcdV2(t, src.Endpoint, tr)
	source := migrate.EtcdV2Source{URL: src.Endpoint}
	tgt := objdbtest.StartEmbeddedEtcd(t)
	store := daemonflags.Common{EtcdEndpoints: []string{tgt.Endpoint}}
	migrateAndCheck(t, source, store, tr)
}

func TestMigrateFixtureConsulToConsul(t *testing.T) {
	tr := readFixture(t)
	src := objdbtest.StartConsulAgent(t)
	loadConsul(t, src.Addr, tr)
	source := migrate.ConsulSource{Addr: src.Addr}
	tgt := objdbtest.StartConsulAgent(t)
	store := daemonflags.Common{ConsulEndpoints: []string{tgt.Addr}}
	migrateAndCheck(t, source, store, tr)
}

func migrateAndCheck(t *testing.T, source migrate.Source, store daemonflags.Common, fixture *migrate.Tree) {
	kv := openStore(t, store)
	cfg := migratecmd.Config{Source: source, EtcdEndpoints: store.EtcdEndpoints, ConsulEndpoints: store.ConsulEndpoints}

	// --dry-run changes nothing.
	before := dump(t, kv)
	dry := cfg
	dry.Apply.DryRun = true
	out, err := runMigrate(t, dry)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "dry run:") || !strings.Contains(out, "would write: state/eps/web-net.blue-bw1") {
		t.Errorf("dry run report lacks the keys it would write:\n%.2000s", out)
	}
	if d := diffDumps(before, dump(t, kv)); d != "" {
		t.Fatalf("dry run changed the target:\n%s", d)
	}

	out, err = runMigrate(t, cfg)
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	t.Logf("migrate report:\n%s", out)
	// The source is unchanged.
	again, err := source.Read(ctxT(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.KV, fixture.KV) {
		t.Fatal("the source changed")
	}
	// A second run changes nothing.
	first := dump(t, kv)
	out, err = runMigrate(t, cfg)
	if err != nil || !strings.Contains(out, "nothing to do") {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	if d := diffDumps(first, dump(t, kv)); d != "" {
		t.Fatalf("second run changed the target:\n%s", d)
	}

	checkEndpoints(t, kv)
	nm := netmastertest.StartStore(t, store, "bridge", nil)
	base := "http://" + nm.Addr
	waitServing(t, base)
	checkSweep(t, base)
	checkInventory(t, base)
	checkTags(t, base)
	checkNewEndpoints(t, base, kv)
	checkDelete(t, base, kv)
}

func waitServing(t *testing.T, base string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(base + "/api/v1/tenants/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("netmaster at %s not serving: %v", base, err)
		}
	}
}

// fixtureEndpoints are the endpoints of plugin-responses.txt that were not
// deleted afterwards (the fixture's README).
func fixtureEndpoints(t testing.TB) map[string]state.Endpoint {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, "plugin-responses.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]state.Endpoint{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r struct{ EndpointConfig state.Endpoint }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("plugin-responses.txt: %v", err)
		}
		out[r.EndpointConfig.ID] = r.EndpointConfig
	}
	for _, gone := range []string{"bw3", "bw7", "bw11"} {
		delete(out, "web-net.blue-"+gone)
	}
	return out
}

// checkEndpoints: each of the 352 endpoints has its address and MAC.
func checkEndpoints(t *testing.T, kv objdb.KV) {
	t.Helper()
	want := fixtureEndpoints(t)
	if len(want) != 352 {
		t.Fatalf("fixture holds %d endpoints, want 352", len(want))
	}
	got, _, err := state.New(kv).Endpoints.ReadAll(ctxT(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("target holds %d endpoints, want %d", len(got), len(want))
	}
	for _, ep := range got {
		w, ok := want[ep.ID]
		if !ok {
			t.Errorf("endpoint %s is not in the fixture", ep.ID)
			continue
		}
		if ep.IPAddress != w.IPAddress || ep.IPv6Address != w.IPv6Address || ep.MacAddress != w.MacAddress {
			t.Errorf("endpoint %s: %s %s %s, want %s %s %s", ep.ID, ep.IPAddress, ep.IPv6Address, ep.MacAddress, w.IPAddress, w.IPv6Address, w.MacAddress)
		}
	}
}

// checkSweep waits for the term's address sweep (one lock TTL in) and
// requires it found every migrated address owned: nothing released, no
// address with two owners, nothing owned found free.
func checkSweep(t *testing.T, base string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(base + "/debug/sweep")
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Err         string   `json:"error"`
			Released    []string `json:"released"`
			DoubleOwned []string `json:"doubleOwned"`
			Retaken     []string `json:"retaken"`
		}
		code := resp.StatusCode
		_ = json.NewDecoder(resp.Body).Decode(&rep)
		resp.Body.Close()
		if code == 200 {
			if rep.Err != "" || len(rep.Released)+len(rep.DoubleOwned)+len(rep.Retaken) > 0 {
				t.Fatalf("the first sweep on the migrated store: %+v", rep)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sweep report within 60 s (status %d)", code)
		}
	}
}
