package controllers_test

import (
	"encoding/json"
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
