package controllers_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

func bgpPath(host string) string { return "/api/v1/Bgps/" + host + "/" }

func bgpBody(host, routerIP, as, neighbor, neighborAs string) string {
	return `{"hostname":"` + host + `","routerip":"` + routerIP + `","as":"` + as +
		`","neighbor":"` + neighbor + `","neighbor-as":"` + neighborAs + `"}`
}

// bgpState decodes state/bgp/<host>; ok is false when it does not exist.
func (e *env) bgpState(host string) (map[string]string, bool) {
	e.T.Helper()
	raw, ok := e.Dump()["state/bgp/"+host]
	if !ok {
		return nil, false
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		e.T.Fatalf("bgp state %s: %v", raw, err)
	}
	return m, true
}

func TestBgp(t *testing.T) {
	e := newEnv(t)
	e.SetGlobal(mastertest.GlobalBody("default", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"))

	// 35: create and read back.
	body := bgpBody("hostA", "65.1.1.1/24", "65001", "16.1.2.3", "65002")
	e.OK("POST", bgpPath("hostA"), body)
	b := e.OK("GET", bgpPath("hostA"), "")
	for _, want := range []string{`"as":"65001"`, `"hostname":"hostA"`, `"neighbor":"16.1.2.3"`, `"neighbor-as":"65002"`, `"routerip":"65.1.1.1/24"`} {
		if !strings.Contains(b, want) {
			t.Fatalf("bgp %s lacks %s", b, want)
		}
	}
	want := map[string]string{"id": "hostA", "hostname": "hostA", "router-ip": "65.1.1.1/24", "as": "65001", "neighbor-as": "65002", "neighbor": "16.1.2.3"}
	if st, ok := e.bgpState("hostA"); !ok || len(st) != len(want) {
		t.Fatalf("bgp state %v", st)
	} else {
		for k, v := range want {
			if st[k] != v {
				t.Fatalf("bgp state %s = %q, want %q", k, st[k], v)
			}
		}
	}

	// Update rewrites the state and the stored fields.
	e.OK("POST", bgpPath("hostA"), bgpBody("hostA", "66.1.1.1/24", "65011", "16.1.2.4", "65012"))
	if st, _ := e.bgpState("hostA"); st["router-ip"] != "66.1.1.1/24" || st["as"] != "65011" || st["neighbor"] != "16.1.2.4" || st["neighbor-as"] != "65012" {
		t.Fatalf("updated bgp state %v", st)
	}
	if b := e.OK("GET", bgpPath("hostA"), ""); !strings.Contains(b, `"routerip":"66.1.1.1/24"`) || !strings.Contains(b, `"neighbor-as":"65012"`) {
		t.Fatalf("updated bgp %s", b)
	}
	e.Fail("POST", bgpPath("hostB"), `{"hostname":"hostB"}`, "")

	// Leaving routing is refused while a BGP config exists.
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
		"please delete existing Bgp configs")

	// ACI mode refuses create and update.
	e.SetGlobal(mastertest.GlobalBody("aci", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"))
	e.Fail("POST", bgpPath("hostB"), bgpBody("hostB", "65.1.1.2/24", "65001", "16.1.2.3", "65002"), "not supported in ACI fabric mode")
	e.Fail("POST", bgpPath("hostA"), body, "not supported in ACI fabric mode")
	e.SetGlobal(mastertest.GlobalBody("default", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"))

	// Delete removes the state; then the mode can change.
	e.OK("POST", bgpPath("hostB"), bgpBody("hostB", "65.1.1.2/24", "65001", "16.1.2.3", "65002"))
	e.OK("DELETE", bgpPath("hostA"), "")
	if _, ok := e.bgpState("hostA"); ok {
		t.Fatalf("bgp state of hostA left behind")
	}
	if _, ok := e.bgpState("hostB"); !ok {
		t.Fatalf("bgp state of hostB missing")
	}
	e.OK("DELETE", bgpPath("hostB"), "")
	if ks := e.StateKeys("state/bgp/"); len(ks) != 0 {
		t.Fatalf("bgp states left: %v", ks)
	}
	e.SetGlobal(mastertest.GlobalBody("default", "1-4094", "1-10000", "bridge", "proxy", "172.19.0.0/16"))
}

// 35: inspect fetches the live state from the agent registered with the
// object's host name: the first peer's session and admin state and the
// routes; the agent's errors reach the client as 500 with their text.
func TestBgpInspect(t *testing.T) {
	np := mastertest.StartFakeNetplugins(t, "127.0.0.2", "127.0.0.3")
	cfg := mastertest.DefaultConfig()
	cfg.NetpluginPort = np.Port
	e := newEnvCfg(t, cfg)
	e.SetGlobal(mastertest.GlobalBody("default", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"))
	e.RegisterNetplugin("127.0.0.2", 9002, "hostA")
	e.RegisterNetplugin("127.0.0.3", 9002, "hostB")
	e.OK("POST", bgpPath("hostA"), bgpBody("hostA", "65.1.1.1/24", "65001", "16.1.2.3", "65002"))
	e.OK("POST", bgpPath("hostB"), bgpBody("hostB", "65.1.1.2/24", "65001", "16.1.2.3", "65002"))

	np.SetBgp("127.0.0.2", mastertest.FakeAnswer{Code: 200, Body: `{"Peers":[{"Conf":{"NeighborAddress":"16.1.2.3"},"State":{"SessionState":"established","AdminState":"up"}},` +
		`{"State":{"SessionState":"idle","AdminState":"down"}}],"Dsts":["198.18.7.0/24","198.18.8.0/24"]}`})
	np.SetBgp("127.0.0.3", mastertest.FakeAnswer{Code: 200, Body: `{"Peers":[{"State":{"SessionState":6,"AdminState":0}}],"Dsts":[]}`})
	type inspectAnswer struct {
		Config map[string]any
		Oper   struct {
			AdminStatus    string   `json:"adminStatus"`
			NeighborStatus string   `json:"neighborStatus"`
			NumRoutes      int      `json:"numRoutes"`
			Routes         []string `json:"routes"`
		}
	}
	var got inspectAnswer
	inspect := func(host string) {
		t.Helper()
		got = inspectAnswer{}
		if err := json.Unmarshal([]byte(e.OK("GET", "/api/v1/inspect/Bgps/"+host+"/", "")), &got); err != nil {
			t.Fatal(err)
		}
	}
	inspect("hostA")
	if o := got.Oper; o.AdminStatus != "up" || o.NeighborStatus != "established" || o.NumRoutes != 2 ||
		strings.Join(o.Routes, ",") != "198.18.7.0/24,198.18.8.0/24" {
		t.Fatalf("hostA oper %+v", o)
	}
	if got.Config["hostname"] != "hostA" || got.Config["routerip"] != "65.1.1.1/24" {
		t.Fatalf("hostA config %v", got.Config)
	}
	// The agent is chosen by host name; numeric states are shown as numbers.
	inspect("hostB")
	if o := got.Oper; o.AdminStatus != "0" || o.NeighborStatus != "6" || o.NumRoutes != 0 {
		t.Fatalf("hostB oper %+v", o)
	}
	reqs := np.Take()
	if strings.Join(reqs, "|") != "GET 127.0.0.2 /inspect/bgp|GET 127.0.0.3 /inspect/bgp" {
		t.Fatalf("agent requests %v", reqs)
	}

	// Agent errors: its 500 body, "page not found" for 404, the status otherwise.
	np.SetBgp("127.0.0.2", mastertest.FakeAnswer{Code: 500, Body: "Error fetching bgp\n"})
	e.Fail("GET", "/api/v1/inspect/Bgps/hostA/", "", "Error fetching bgp")
	np.SetBgp("127.0.0.2", mastertest.FakeAnswer{Code: 403, Body: ""})
	e.Fail("GET", "/api/v1/inspect/Bgps/hostA/", "", "access denied")
	np.SetBgp("127.0.0.2", mastertest.FakeAnswer{Code: 418, Body: ""})
	e.Fail("GET", "/api/v1/inspect/Bgps/hostA/", "", "418 I'm a teapot")
	np.SetBgp("127.0.0.2", mastertest.FakeAnswer{Code: 200, Body: "{not json"})
	e.Fail("GET", "/api/v1/inspect/Bgps/hostA/", "", "decode bgp inspect of hostA: invalid character 'n' looking for beginning of object key string")
	np.ClearBgp("127.0.0.2")
	e.Fail("GET", "/api/v1/inspect/Bgps/hostA/", "", "page not found")
}

// Issue 15: bad AS numbers and addresses are refused (400, the field named)
// and leave the store byte-identical, on create and on update.
func TestBgpRefusals(t *testing.T) {
	e := newEnv(t)
	e.SetGlobal(mastertest.GlobalBody("default", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"))
	e.OK("POST", bgpPath("hostA"), bgpBody("hostA", "198.18.50.11/24", "65001", "198.18.50.1", "65000"))
	for _, host := range []string{"hostA", "hostB"} {
		for _, c := range []struct{ routerIP, as, neighbor, neighborAs, msg string }{
			{"198.18.50.11/24", "x", "198.18.50.1", "65000", `Invalid as "x": want an AS number 1-4294967294`},
			{"198.18.50.11/24", "0", "198.18.50.1", "65000", `Invalid as "0": want an AS number 1-4294967294`},
			{"198.18.50.11/24", "4294967295", "198.18.50.1", "65000", ""},
			{"198.18.50.11/24", "-1", "198.18.50.1", "65000", ""},
			{"198.18.50.11/24", "65001 ", "198.18.50.1", "65000", ""},
			{"198.18.50.11/24", "4294967296", "198.18.50.1", "65000", ""},
			{"198.18.50.11/24", "", "198.18.50.1", "65000", ""},
			{"198.18.50.11/24", "65001", "198.18.50.1", "6500a", `Invalid neighbor-as "6500a": want an AS number 1-4294967294`},
			{"198.18.50.11/24", "65001", "198.18.50.1", "", ""},
			{"198.18.50.11", "65001", "198.18.50.1", "65000", ""},
			{"198.18.50.300/24", "65001", "198.18.50.1", "65000", ""},
			{"x/24", "65001", "198.18.50.1", "65000", ""},
			{"198.18.50.11/24", "65001", "198.18.50", "65000", ""},
			{"198.18.50.11/24", "65001", "fe80::1", "65000", ""},
		} {
			e.FailStatus("POST", bgpPath(host), bgpBody(host, c.routerIP, c.as, c.neighbor, c.neighborAs), 400, c.msg)
		}
	}
	if st, _ := e.bgpState("hostA"); st["as"] != "65001" || st["router-ip"] != "198.18.50.11/24" {
		t.Fatalf("bgp state after refusals: %v", st)
	}
}
