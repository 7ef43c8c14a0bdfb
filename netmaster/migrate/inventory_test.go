package migrate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netctl"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/master/mastertest"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// inventory is the fixture's inventory.txt: each netctl command the
// original ran on the fixture's state, with its output.
type invEntry struct {
	args []string
	out  string
}

func readInventory(t testing.TB) []invEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, "inventory.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []invEntry
	for _, block := range strings.Split("\n"+string(data), "\n$ netctl ")[1:] {
		cmd, body, _ := strings.Cut(block, "\n")
		out = append(out, invEntry{args: strings.Fields(cmd), out: body})
	}
	return out
}

func runNetctl(base string, args ...string) (string, string, int) {
	var o, e bytes.Buffer
	n := netctl.App(netctl.Options{
		Stdout: &o, Stderr: &e, Stdin: strings.NewReader(""),
		Getenv:           func(k string) string { return map[string]string{"NETMASTER": base}[k] },
		HomeDir:          func() (string, error) { return os.TempDir(), nil },
		ReadPassword:     func() (string, error) { return "", nil },
		Now:              time.Now,
		StderrIsTerminal: func() bool { return false },
	})
	code := n.Run(append([]string{"netctl"}, args...))
	return o.String(), e.String(), code
}

// knownDiffs are the documented differences (docs/compat.md, "Migration
// (issue 24)"): command → the compat row.
var knownDiffs = map[string]string{}

// checkInventory runs each inventory command against our netmaster and
// compares the output with the original's.
func checkInventory(t *testing.T, base string) {
	t.Helper()
	for _, e := range readInventory(t) {
		cmd := strings.Join(e.args, " ")
		got, stderr, code := runNetctl(base, e.args...)
		if code != 0 {
			t.Errorf("netctl %s: exit %d: %s", cmd, code, stderr)
			continue
		}
		if d := compareOutput(e.out, got); d != "" {
			if row, ok := knownDiffs[cmd]; ok {
				t.Logf("netctl %s differs as documented (compat %s)", cmd, row)
				continue
			}
			t.Errorf("netctl %s differs from the original's:\n%s", cmd, d)
		}
	}
}

// compareOutput compares JSON outputs as values, text outputs by line.
func compareOutput(want, got string) string {
	var w, g any
	if json.Unmarshal([]byte(want), &w) == nil {
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			return fmt.Sprintf("not JSON: %v\n%.500s", err, got)
		}
		if !reflect.DeepEqual(w, g) {
			return jsonDiff("", sortArrays(w), sortArrays(g))
		}
		return ""
	}
	if strings.TrimSpace(want) != strings.TrimSpace(got) {
		return fmt.Sprintf("want:\n%s\ngot:\n%s", want, got)
	}
	return ""
}

// sortArrays orders every array of a JSON value by its elements'
// encoding: the original listed in its store's order, this project lists
// by key (compat MG1).
func sortArrays(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			x[k] = sortArrays(x[k])
		}
	case []any:
		for i := range x {
			x[i] = sortArrays(x[i])
		}
		sort.Slice(x, func(i, j int) bool { return encode(x[i]) < encode(x[j]) })
	}
	return v
}

func jsonDiff(path string, w, g any) string {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: %v → %v\n", path, short(w), short(g))
		}
		var s string
		for k := range wv {
			s += jsonDiff(path+"."+k, wv[k], gv[k])
		}
		for k := range gv {
			if _, ok := wv[k]; !ok {
				s += fmt.Sprintf("%s.%s: absent → %v\n", path, k, short(gv[k]))
			}
		}
		return s
	case []any:
		gv, ok := g.([]any)
		if !ok || len(gv) != len(wv) {
			return fmt.Sprintf("%s: %v → %v\n", path, short(w), short(g))
		}
		var s string
		for i := range wv {
			s += jsonDiff(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i])
		}
		return s
	}
	if !reflect.DeepEqual(w, g) {
		return fmt.Sprintf("%s: %v → %v\n", path, short(w), short(g))
	}
	return ""
}

func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// checkTags: VLAN 300 and the allocated VXLAN ids stay reserved.
func checkTags(t *testing.T, base string) {
	t.Helper()
	code, body, _ := mastertest.DoReq(t, base, "POST", "/api/v1/networks/red:v300/", mastertest.NetBody("red", "v300", "vlan", "198.18.30.0/24", "", 300))
	if code/100 == 2 {
		t.Errorf("a network took VLAN 300, held by blue:db-net: %s", body)
	}
	for _, vni := range []int{10000, 10001, 10002} {
		code, body, _ := mastertest.DoReq(t, base, "POST", fmt.Sprintf("/api/v1/networks/red:vx%d/", vni), mastertest.NetBody("red", fmt.Sprintf("vx%d", vni), "vxlan", "198.18.31.0/24", "", vni))
		if code/100 == 2 {
			t.Errorf("a network took VXLAN %d, held by a migrated network: %s", vni, body)
		}
	}
	// A new VXLAN network gets a fresh id.
	code, body, _ = mastertest.DoReq(t, base, "POST", "/api/v1/networks/red:fresh/", mastertest.NetBody("red", "fresh", "vxlan", "198.18.32.0/24", "", 0))
	if code/100 != 2 {
		t.Fatalf("create a VXLAN network: %d %s", code, body)
	}
	out, _, _ := runNetctl(base, "net", "inspect", "-t", "red", "fresh")
	var insp struct {
		Oper struct {
			PktTag int `json:"pktTag"`
		} `json:"Oper"`
	}
	_ = json.Unmarshal([]byte(out), &insp)
	if insp.Oper.PktTag >= 10000 && insp.Oper.PktTag <= 10002 {
		t.Errorf("new VXLAN network got VNI %d, held by a migrated network", insp.Oper.PktTag)
	}
	mastertest.DoReq(t, base, "DELETE", "/api/v1/networks/red:fresh/", "")
}

// held is every address the fixture's endpoints, gateways and VIP hold.
func held(t *testing.T) map[string]string {
	held := map[string]string{}
	for id, ep := range fixtureEndpoints(t) {
		net := strings.TrimSuffix(ep.NetID, "")
		held[net+" "+ep.IPAddress] = id
		if ep.IPv6Address != "" {
			held[net+" "+ep.IPv6Address] = id
		}
	}
	for _, g := range []string{"web-net.blue 198.18.10.254", "web-net.red 198.18.10.254", "db-net.blue 198.18.11.254",
		"v6-net.blue 198.18.12.254", "v6-net.blue 2001:db8:12::fe", "big-net.default 198.18.127.254", "web-net.blue 198.18.10.1"} {
		held[g] = "gateway or VIP"
	}
	return held
}

// checkNewEndpoints: 500 new endpoints on the migrated networks never get
// an address the fixture holds (the group pool included).
func checkNewEndpoints(t *testing.T, base string, kv objdb.KV) {
	t.Helper()
	h := held(t)
	plan := []struct {
		tenant, net, group string
		n                  int
	}{{"blue", "web-net", "pooled", 40}, {"blue", "web-net", "", 100}, {"blue", "db-net", "backend", 80},
		{"blue", "v6-net", "", 60}, {"red", "web-net", "", 100}, {"default", "big-net", "", 120}}
	total := 0
	for _, p := range plan {
		for i := range p.n {
			c := fmt.Sprintf("new-%s-%s-%d", p.tenant, p.net, i)
			code, body, _ := mastertest.DoReq(t, base, "POST", "/plugin/createEndpoint", mastertest.EPBody(p.tenant, p.net, p.group, c, "hostN", "", ""))
			if code != 200 {
				t.Fatalf("createEndpoint %s: %d %s", c, code, body)
			}
			var r struct{ EndpointConfig state.Endpoint }
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Fatal(err)
			}
			netID := p.net + "." + p.tenant
			for _, a := range []string{r.EndpointConfig.IPAddress, r.EndpointConfig.IPv6Address} {
				if owner, ok := h[netID+" "+a]; a != "" && ok {
					t.Errorf("new endpoint %s got %s, held by %s", c, a, owner)
				}
			}
			if p.group == "pooled" {
				ip := netip.MustParseAddr(r.EndpointConfig.IPAddress)
				if ip.Less(netip.MustParseAddr("198.18.10.105")) || netip.MustParseAddr("198.18.10.150").Less(ip) {
					t.Errorf("new pooled endpoint %s got %s, outside the pool's free part", c, ip)
				}
			}
			total++
		}
	}
	if total != 500 {
		t.Fatalf("created %d endpoints", total)
	}
}

// checkDelete: deleting a migrated endpoint frees exactly its address.
func checkDelete(t *testing.T, base string, kv objdb.KV) {
	t.Helper()
	v4 := ipam.NewV4(kv)
	defer v4.Close()
	ctx := ctxT(t, time.Minute)
	before, err := v4.Taken(ctx, "web-net.blue")
	if err != nil {
		t.Fatal(err)
	}
	body := `{"TenantName":"blue","NetworkName":"web-net","ServiceName":"","EndpointID":"bw1","IPv4Address":""}`
	if code, b, _ := mastertest.DoReq(t, base, "POST", "/plugin/deleteEndpoint", body); code != 200 {
		t.Fatalf("deleteEndpoint bw1: %d %s", code, b)
	}
	v4b := ipam.NewV4(kv)
	defer v4b.Close()
	after, err := v4b.Taken(ctx, "web-net.blue")
	if err != nil {
		t.Fatal(err)
	}
	var freed []string
	for a := range before {
		if !after[a] {
			freed = append(freed, a.String())
		}
	}
	if len(freed) != 1 || freed[0] != "198.18.10.2" || len(after) != len(before)-1 {
		t.Errorf("deleting bw1 (198.18.10.2) freed %v (%d → %d taken)", freed, len(before), len(after))
	}
}
