package master_test

import (
	"encoding/json"
	"strings"
	"testing"
)

func bgpPath(host string) string { return "/api/v1/Bgps/" + host + "/" }

func bgpBody(host, routerIP, as, neighbor, neighborAs string) string {
	return `{"hostname":"` + host + `","routerip":"` + routerIP + `","as":"` + as +
		`","neighbor":"` + neighbor + `","neighbor-as":"` + neighborAs + `"}`
}

// bgpState decodes state/bgp/<host>; ok is false when it does not exist.
func (e *env) bgpState(host string) (map[string]string, bool) {
	e.t.Helper()
	raw, ok := e.dump()["state/bgp/"+host]
	if !ok {
		return nil, false
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		e.t.Fatalf("bgp state %s: %v", raw, err)
	}
	return m, true
}

func TestBgp(t *testing.T) {
	e := newEnv(t)
	e.setGlobal(globalBody("default", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"))

	// 35: create and read back.
	body := bgpBody("hostA", "65.1.1.1/24", "65001", "16.1.2.3", "65002")
	e.ok("POST", bgpPath("hostA"), body)
	b := e.ok("GET", bgpPath("hostA"), "")
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
	e.ok("POST", bgpPath("hostA"), bgpBody("hostA", "66.1.1.1/24", "65011", "16.1.2.4", "65012"))
	if st, _ := e.bgpState("hostA"); st["router-ip"] != "66.1.1.1/24" || st["as"] != "65011" || st["neighbor"] != "16.1.2.4" || st["neighbor-as"] != "65012" {
		t.Fatalf("updated bgp state %v", st)
	}
	if b := e.ok("GET", bgpPath("hostA"), ""); !strings.Contains(b, `"routerip":"66.1.1.1/24"`) || !strings.Contains(b, `"neighbor-as":"65012"`) {
		t.Fatalf("updated bgp %s", b)
	}
	e.fail("POST", bgpPath("hostB"), `{"hostname":"hostB"}`, "")

	// Leaving routing is refused while a BGP config exists.
	e.fail("POST", "/api/v1/globals/global/", globalBody("default", "1-4094", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
		"please delete existing Bgp configs")

	// ACI mode refuses create and update.
	e.setGlobal(globalBody("aci", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"))
	e.fail("POST", bgpPath("hostB"), bgpBody("hostB", "65.1.1.2/24", "65001", "16.1.2.3", "65002"), "not supported in ACI fabric mode")
	e.fail("POST", bgpPath("hostA"), body, "not supported in ACI fabric mode")
	e.setGlobal(globalBody("default", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"))

	// Delete removes the state; then the mode can change.
	e.ok("POST", bgpPath("hostB"), bgpBody("hostB", "65.1.1.2/24", "65001", "16.1.2.3", "65002"))
	e.ok("DELETE", bgpPath("hostA"), "")
	if _, ok := e.bgpState("hostA"); ok {
		t.Fatalf("bgp state of hostA left behind")
	}
	if _, ok := e.bgpState("hostB"); !ok {
		t.Fatalf("bgp state of hostB missing")
	}
	e.ok("DELETE", bgpPath("hostB"), "")
	if ks := e.stateKeys("state/bgp/"); len(ks) != 0 {
		t.Fatalf("bgp states left: %v", ks)
	}
	e.setGlobal(globalBody("default", "1-4094", "1-10000", "bridge", "proxy", "172.19.0.0/16"))
}
