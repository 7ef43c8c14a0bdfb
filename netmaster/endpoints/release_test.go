package endpoints_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

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
	e.OK("POST", mastertest.SvcPath("default", "vip"), mastertest.SvcBody("default", "vip", "own", "198.18.60.50", []string{"a=b"}, []string{"80:80:TCP"}))
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
