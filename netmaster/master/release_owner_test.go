package master_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// refused requires status and exact body (message + "\n") and an
// unchanged store.
func (e *env) refused(method, path, body string, status int, msg string) {
	e.t.Helper()
	before := e.dump()
	code, b := e.do(method, path, body)
	if code != status || b != msg+"\n" {
		e.t.Fatalf("%s %s %s: got %d %q, want %d %q", method, path, body, code, b, status, msg)
	}
	if d := diffDumps(before, e.dump()); d != "" {
		e.t.Fatalf("%s %s %s refused (%q) but changed the store:\n%s", method, path, body, b, d)
	}
}

// netState reads a network's stored tags.
func (e *env) netState(id string) (tags struct{ PktTag, ExtPktTag int }) {
	e.t.Helper()
	if err := json.Unmarshal([]byte(e.dump()["state/nets/"+id]), &tags); err != nil {
		e.t.Fatalf("network state %s: %v", id, err)
	}
	return tags
}

func releaseBody(netID, ip string) string {
	return fmt.Sprintf(`{"NetworkID":%q,"IPv4Address":%q}`, netID, ip)
}

// /plugin/releaseAddress gives back only what allocAddress handed out (or
// what has no owner): an endpoint's address, the gateway, a service VIP
// or an address of a group's IP pool is refused with 409, a message naming
// the owner, and an unchanged store; the next allocation does not get it
// (docs/allocation-integrity.md).
func TestReleaseAddressChecksOwner(t *testing.T) {
	e := newEnv(t)
	e.createNet("default", "own", "vlan", "198.18.60.0/24", "198.18.60.254", 0)
	e.createEPG("default", "pg", "own", `"ipPool":"198.18.60.100-198.18.60.109"`)
	e.ok("POST", svcPath("default", "vip"), svcBody("default", "vip", "own", "198.18.60.50", []string{"a=b"}, []string{"80:80:TCP"}))
	ep := e.createEndpoint(createEP("default", "own", "", "c1", "")).EndpointConfig.IPAddress
	if ep != "198.18.60.1" {
		t.Fatalf("endpoint got %s", ep)
	}
	var alloc struct{ IPv4Address string }
	if err := json.Unmarshal([]byte(e.ok("POST", "/plugin/allocAddress", `{"NetworkID":"own.default"}`)), &alloc); err != nil || alloc.IPv4Address != "198.18.60.2/24" {
		t.Fatalf("allocAddress: %+v %v", alloc, err)
	}

	const tail = " and cannot be released; release it through its owner"
	for _, c := range []struct{ netID, ip, owner string }{
		{"own.default", "198.18.60.1", "held by endpoint own.default-c1"},
		{"own.default", "198.18.60.254", "the gateway of network own.default"},
		{"own.default", "198.18.60.50", "the VIP of service vip:default"},
		{"own.default", "198.18.60.105", "in the IP pool 198.18.60.100-198.18.60.109 of group pg:default"},
	} {
		e.refused("POST", "/plugin/releaseAddress", releaseBody(c.netID, c.ip), http.StatusConflict, "address "+c.ip+" is "+c.owner+tail)
	}
	// None of them is handed out again.
	if got := e.createEndpoint(createEP("default", "own", "", "c2", "")).EndpointConfig.IPAddress; got != "198.18.60.3" {
		t.Fatalf("next endpoint got %s, want 198.18.60.3", got)
	}

	// What allocAddress handed out is released, once; its record goes.
	e.ok("POST", "/plugin/releaseAddress", releaseBody("own.default", "198.18.60.2"))
	if _, ok := e.dump()["state/ipalloc/own.default/198.18.60.2"]; ok {
		t.Fatal("address record kept after the release")
	}
	e.ok("POST", "/plugin/releaseAddress", releaseBody("own.default", "198.18.60.2"))
	if ni := e.netOper("default", "own"); ni.Oper.NumEndpoints != 2 {
		t.Fatalf("after the releases: %+v", ni.Oper)
	}
	// The released address is the next one handed out, to one owner.
	if got := e.createEndpoint(createEP("default", "own", "", "c3", "")).EndpointConfig.IPAddress; got != "198.18.60.2" {
		t.Fatalf("endpoint after the release got %s", got)
	}
}

// A global deleted and created again while networks exist keeps their
// tags: the next network gets another VLAN, and a range that leaves a
// network's tag out is refused with the tags named and the store unchanged
// (docs/allocation-integrity.md).
func TestGlobalRecreateKeepsTags(t *testing.T) {
	e := newEnv(t)
	e.setGlobal(globalBody("default", "100-110", "5000-5010", "bridge", "proxy", "172.19.0.0/16"))
	e.createNet("default", "v1", "vlan", "198.18.70.0/24", "", 0)
	e.createNet("default", "x1", "vxlan", "198.18.71.0/24", "", 0)
	v1, x1 := e.netState("v1.default"), e.netState("x1.default")
	if v1.PktTag != 100 || x1.ExtPktTag != 5000 {
		t.Fatalf("tags before: vlan %d, vni %d", v1.PktTag, x1.ExtPktTag)
	}
	e.ok("DELETE", "/api/v1/globals/global/", "")

	e.refused("POST", "/api/v1/globals/global/", globalBody("default", "101-110", "5000-5010", "bridge", "proxy", "172.19.0.0/16"),
		http.StatusConflict, "cannot update the vlan range due to existing vlans 100")
	e.refused("POST", "/api/v1/globals/global/", globalBody("default", "100-110", "5001-5010", "bridge", "proxy", "172.19.0.0/16"),
		http.StatusConflict, "cannot update the vxlan range due to existing vxlans 5000")

	e.ok("POST", "/api/v1/globals/global/", globalBody("default", "100-110", "5000-5010", "bridge", "proxy", "172.19.0.0/16"))
	if g := e.globalOper(); g.Oper.VlansInUse != "100" || g.Oper.VxlansInUse != "5000" {
		t.Fatalf("global after re-create: %+v", g.Oper)
	}
	e.createNet("default", "v2", "vlan", "198.18.72.0/24", "", 0)
	e.createNet("default", "x2", "vxlan", "198.18.73.0/24", "", 0)
	v2, x2 := e.netState("v2.default"), e.netState("x2.default")
	if v2.PktTag != 101 || x2.ExtPktTag != 5001 || x2.PktTag == x1.PktTag {
		t.Fatalf("networks after re-create: vlan %d (want 101), vni %d (want 5001), local vlan %d (x1 has %d)",
			v2.PktTag, x2.ExtPktTag, x2.PktTag, x1.PktTag)
	}
	// Requesting a held tag explicitly is refused too.
	e.refused("POST", "/api/v1/networks/default:v3/", netBody("default", "v3", "vlan", "198.18.74.0/24", "", 100),
		http.StatusConflict, "requested vlan not available - vlan:100")
}
