package master_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// netState reads a network's stored tags.
func (e *env) netState(id string) (tags struct{ PktTag, ExtPktTag int }) {
	e.T.Helper()
	if err := json.Unmarshal([]byte(e.Dump()["state/nets/"+id]), &tags); err != nil {
		e.T.Fatalf("network state %s: %v", id, err)
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
	e.CreateNet("default", "own", "vlan", "198.18.60.0/24", "198.18.60.254", 0)
	e.CreateEPG("default", "pg", "own", `"ipPool":"198.18.60.100-198.18.60.109"`)
	e.OK("POST", svcPath("default", "vip"), svcBody("default", "vip", "own", "198.18.60.50", []string{"a=b"}, []string{"80:80:TCP"}))
	ep := e.CreateEndpoint(mastertest.CreateEP("default", "own", "", "c1", "")).EndpointConfig.IPAddress
	if ep != "198.18.60.1" {
		t.Fatalf("endpoint got %s", ep)
	}
	var alloc struct{ IPv4Address string }
	if err := json.Unmarshal([]byte(e.OK("POST", "/plugin/allocAddress", `{"NetworkID":"own.default"}`)), &alloc); err != nil || alloc.IPv4Address != "198.18.60.2/24" {
		t.Fatalf("allocAddress: %+v %v", alloc, err)
	}

	const tail = " and cannot be released; release it through its owner"
	for _, c := range []struct{ netID, ip, owner string }{
		{"own.default", "198.18.60.1", "held by endpoint own.default-c1"},
		{"own.default", "198.18.60.254", "the gateway of network own.default"},
		{"own.default", "198.18.60.50", "the VIP of service vip:default"},
		{"own.default", "198.18.60.105", "in the IP pool 198.18.60.100-198.18.60.109 of group pg:default"},
	} {
		e.Refused("POST", "/plugin/releaseAddress", releaseBody(c.netID, c.ip), http.StatusConflict, "address "+c.ip+" is "+c.owner+tail)
	}
	// None of them is handed out again.
	if got := e.CreateEndpoint(mastertest.CreateEP("default", "own", "", "c2", "")).EndpointConfig.IPAddress; got != "198.18.60.3" {
		t.Fatalf("next endpoint got %s, want 198.18.60.3", got)
	}

	// What allocAddress handed out is released, once; its record goes.
	e.OK("POST", "/plugin/releaseAddress", releaseBody("own.default", "198.18.60.2"))
	if _, ok := e.Dump()["state/ipalloc/own.default/198.18.60.2"]; ok {
		t.Fatal("address record kept after the release")
	}
	e.OK("POST", "/plugin/releaseAddress", releaseBody("own.default", "198.18.60.2"))
	if ni := e.NetOper("default", "own"); ni.Oper.NumEndpoints != 2 {
		t.Fatalf("after the releases: %+v", ni.Oper)
	}
	// The released address is the next one handed out, to one owner.
	if got := e.CreateEndpoint(mastertest.CreateEP("default", "own", "", "c3", "")).EndpointConfig.IPAddress; got != "198.18.60.2" {
		t.Fatalf("endpoint after the release got %s", got)
	}
}

// A global deleted and created again while networks exist keeps their
// tags: the next network gets another VLAN, and a range that leaves a
// network's tag out is refused with the tags named and the store unchanged
// (docs/allocation-integrity.md).
func TestGlobalRecreateKeepsTags(t *testing.T) {
	e := newEnv(t)
	e.SetGlobal(mastertest.GlobalBody("default", "100-110", "5000-5010", "bridge", "proxy", "172.19.0.0/16"))
	e.CreateNet("default", "v1", "vlan", "198.18.70.0/24", "", 0)
	e.CreateNet("default", "x1", "vxlan", "198.18.71.0/24", "", 0)
	v1, x1 := e.netState("v1.default"), e.netState("x1.default")
	if v1.PktTag != 100 || x1.ExtPktTag != 5000 {
		t.Fatalf("tags before: vlan %d, vni %d", v1.PktTag, x1.ExtPktTag)
	}
	e.OK("DELETE", "/api/v1/globals/global/", "")

	e.Refused("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "101-110", "5000-5010", "bridge", "proxy", "172.19.0.0/16"),
		http.StatusConflict, "cannot update the vlan range due to existing vlans 100")
	e.Refused("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "100-110", "5001-5010", "bridge", "proxy", "172.19.0.0/16"),
		http.StatusConflict, "cannot update the vxlan range due to existing vxlans 5000")

	e.OK("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "100-110", "5000-5010", "bridge", "proxy", "172.19.0.0/16"))
	if g := e.GlobalOper(); g.Oper.VlansInUse != "100" || g.Oper.VxlansInUse != "5000" {
		t.Fatalf("global after re-create: %+v", g.Oper)
	}
	e.CreateNet("default", "v2", "vlan", "198.18.72.0/24", "", 0)
	e.CreateNet("default", "x2", "vxlan", "198.18.73.0/24", "", 0)
	v2, x2 := e.netState("v2.default"), e.netState("x2.default")
	if v2.PktTag != 101 || x2.ExtPktTag != 5001 || x2.PktTag == x1.PktTag {
		t.Fatalf("networks after re-create: vlan %d (want 101), vni %d (want 5001), local vlan %d (x1 has %d)",
			v2.PktTag, x2.ExtPktTag, x2.PktTag, x1.PktTag)
	}
	// Requesting a held tag explicitly is refused too.
	e.Refused("POST", "/api/v1/networks/default:v3/", mastertest.NetBody("default", "v3", "vlan", "198.18.74.0/24", "", 100),
		http.StatusConflict, "requested vlan not available - vlan:100")
}
