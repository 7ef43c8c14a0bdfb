package controllers_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

func TestGlobal(t *testing.T) {
	e := newEnv(t)
	// 1.
	for i := 0; i < 2; i++ {
		e.SetGlobal(mastertest.DefaultGlobal)
	}
	e.SetGlobal(mastertest.GlobalBody("default", "1-4094", "1-10000", "bridge", "proxy", "172.20.0.0/16"))
	e.SetGlobal(mastertest.GlobalBody("aci", "1-4094", "1-10000", "bridge", "flood", "172.20.0.0/16"))
	e.SetGlobal(mastertest.GlobalBody("default", "1-4094", "1-10000", "bridge", "proxy", "172.20.0.0/16"))
	e.SetGlobal(mastertest.GlobalBody("default", "1-1000", "1001-2000", "bridge", "proxy", "172.19.0.0/16"))
	e.SetGlobal(mastertest.DefaultGlobal)
	// 2.
	for _, b := range []string{
		mastertest.GlobalBody("xyz", "1-4094", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
		mastertest.GlobalBody("default", "1-5000", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
		mastertest.GlobalBody("default", "0-4094", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
		mastertest.GlobalBody("default", "1", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
		mastertest.GlobalBody("default", "1?2", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
		mastertest.GlobalBody("default", "abcd", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
		mastertest.GlobalBody("default", "1-4094", "1-100000", "bridge", "proxy", "172.19.0.0/16"),
		mastertest.GlobalBody("default", "1-4094", "1-20000", "bridge", "proxy", "172.19.0.0/16"),
		mastertest.GlobalBody("default", "1-4094", "1-10000", "bridge", "proxy", "172.21.0.0/24"),
	} {
		e.Fail("POST", "/api/v1/globals/global/", b, "")
	}
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-5000", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
		"vlans: invalid range 1-5000, vlan values exceed 4095 max allowed")
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "1-20000", "bridge", "proxy", "172.19.0.0/16"),
		"vxlans: does not allow vxlan range to exceed 16000 range 1-20000")
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "1-100000", "bridge", "proxy", "172.19.0.0/16"),
		"vxlans: invalid range 1-100000, vxlan values exceed 65535 max allowed")

	// 3, 4, 5.
	e.CreateNet("default", "vx", "vxlan", "10.1.1.0/24", "", 1)
	gi := e.GlobalOper()
	if gi.Oper.VxlansInUse != "1" || gi.Oper.VlansInUse != "" || gi.Oper.NumNetworks != 1 {
		t.Fatalf("global oper with a vxlan network: %+v", gi.Oper)
	}
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"),
		"Unable to update forwarding mode due to existing 1 vxlans")
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "1-10000", "bridge", "proxy", "172.20.0.0/16"),
		"Unable to update private subnet due to existing 1 vxlans")
	e.CreateNet("default", "vl", "vlan", "10.1.2.0/24", "", 1)
	gi = e.GlobalOper()
	if gi.Oper.VlansInUse != "1" || gi.Oper.NumNetworks != 2 {
		t.Fatalf("global oper: %+v", gi.Oper)
	}
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"),
		"Unable to update forwarding mode due to existing 1 vlans and 1 vxlans")
	e.DeleteNet("default", "vx")
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "1-10000", "routing", "proxy", "172.19.0.0/16"),
		"Unable to update forwarding mode due to existing 1 vlans")
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "1-10000", "bridge", "proxy", "172.20.0.0/16"),
		"Unable to update private subnet due to existing 1 vlans")
	e.DeleteNet("default", "vl")
	e.SetGlobal(mastertest.GlobalBody("default", "1-4094", "1-10000", "routing", "proxy", "172.20.0.0/16"))
	e.SetGlobal(mastertest.DefaultGlobal)

	// 6.
	if gi := e.GlobalOper(); gi.Oper.ClusterMode != "test" || gi.Oper.FreeVXLANsStart != 0 {
		t.Fatalf("global oper: %+v", gi.Oper)
	}

	// 7. VLAN range dynamics.
	for i, tag := range []int{10, 11, 300} {
		e.CreateNet("default", fmt.Sprintf("n%d", i), "vlan", fmt.Sprintf("10.2.%d.0/24", i), "", tag)
	}
	e.SetGlobal(mastertest.GlobalBody("default", "9-301", "1-10000", "bridge", "proxy", "172.19.0.0/16"))
	e.Fail("POST", "/api/v1/networks/default:x/", mastertest.NetBody("default", "x", "vlan", "10.3.0.0/24", "", 10), "requested vlan not available - vlan:10")
	e.Fail("POST", "/api/v1/networks/default:x/", mastertest.NetBody("default", "x", "vlan", "10.3.0.0/24", "", 302), "requested vlan not available - vlan:302")
	e.CreateNet("default", "n299", "vlan", "10.3.1.0/24", "", 299)
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "50-301", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
		"cannot update the vlan range due to existing vlans 10-11, 299-300")
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-200", "1-10000", "bridge", "proxy", "172.19.0.0/16"), "")
	e.SetGlobal(mastertest.GlobalBody("default", "1-800", "1-10000", "bridge", "proxy", "172.19.0.0/16"))
	e.CreateNet("default", "n700", "vlan", "10.3.2.0/24", "", 700)
	e.DeleteNet("default", "n700")
	e.CreateNet("default", "n700", "vlan", "10.3.2.0/24", "", 700)
	for _, n := range []string{"n0", "n1", "n2", "n299", "n700"} {
		e.DeleteNet("default", n)
	}

	// 8. VXLAN range dynamics.
	e.SetGlobal(mastertest.DefaultGlobal)
	for i, vni := range []int{1000, 1001, 2000} {
		e.CreateNet("default", fmt.Sprintf("x%d", i), "vxlan", fmt.Sprintf("10.4.%d.0/24", i), "", vni)
		if ni := e.NetOper("default", fmt.Sprintf("x%d", i)); ni.Oper.PktTag != i+1 || ni.Oper.ExternalPktTag != vni {
			t.Fatalf("vxlan %d: oper %+v", vni, ni.Oper)
		}
	}
	e.SetGlobal(mastertest.GlobalBody("default", "1-4094", "1000-2500", "bridge", "proxy", "172.19.0.0/16"))
	e.Fail("POST", "/api/v1/networks/default:y/", mastertest.NetBody("default", "y", "vxlan", "10.5.0.0/24", "", 1000), "requested vxlan not available")
	e.Fail("POST", "/api/v1/networks/default:y/", mastertest.NetBody("default", "y", "vxlan", "10.5.0.0/24", "", 2501), "requested vxlan not available")
	e.CreateNet("default", "x2200", "vxlan", "10.5.1.0/24", "", 2200)
	if ni := e.NetOper("default", "x2200"); ni.Oper.PktTag != 4 {
		t.Fatalf("vni 2200 local vlan %d, want 4", ni.Oper.PktTag)
	}
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "2000-10000", "bridge", "proxy", "172.19.0.0/16"), "")
	e.Fail("POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "1000-2000", "bridge", "proxy", "172.19.0.0/16"),
		"cannot update the vxlan range due to existing vxlans 1000-1001, 2000, 2200")
	e.SetGlobal(mastertest.GlobalBody("default", "1-4094", "1000-9000", "bridge", "proxy", "172.19.0.0/16"))
	if gi := e.GlobalOper(); gi.Oper.FreeVXLANsStart != 999 || gi.Oper.VxlansInUse != "1000-1001, 2000, 2200" {
		t.Fatalf("global oper after range change: %+v", gi.Oper)
	}
	for i := 0; i < 2; i++ {
		e.CreateNet("default", "x3200", "vxlan", "10.5.2.0/24", "", 3200)
		if ni := e.NetOper("default", "x3200"); ni.Oper.PktTag != 5 {
			t.Fatalf("vni 3200 local vlan %d, want 5", ni.Oper.PktTag)
		}
		e.DeleteNet("default", "x3200")
	}

	// Delete (teardown) and re-create.
	for _, n := range []string{"x0", "x1", "x2", "x2200"} {
		e.DeleteNet("default", n)
	}
	e.OK("DELETE", "/api/v1/globals/global/", "")
	e.Fail("POST", "/api/v1/networks/default:z/", mastertest.NetBody("default", "z", "vlan", "10.6.0.0/24", "", 0),
		"Global configuration is not ready: global configuration is not ready")
	if code, _ := e.Do("GET", "/api/v1/inspect/globals/global/", ""); code != 404 {
		t.Fatalf("inspect of a deleted global: %d", code)
	}
	for _, k := range []string{"master/config/global", "state/global/global", "oper/global/global", "state/auto-vlan/global", "oper/auto-vxlan/global"} {
		if _, ok := e.Dump()[k]; ok {
			t.Fatalf("global delete left %s", k)
		}
	}
	e.SetGlobal(mastertest.DefaultGlobal)
	e.CreateNet("default", "z", "vlan", "10.6.0.0/24", "", 0)
}

func TestTenant(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"tenant1", "tenant-valid"} {
		e.OK("POST", "/api/v1/tenants/"+n+"/", fmt.Sprintf(`{"tenantName":%q}`, n))
		if b := e.OK("GET", "/api/v1/tenants/"+n+"/", ""); !strings.Contains(b, `"tenantName":"`+n+`"`) {
			t.Fatalf("get tenant: %s", b)
		}
	}
	for _, n := range []string{"tenant:invalid", "tenant|invalid", "tenant#invalid", "-tenant", "tenant@invalid",
		"tenant!invalid", "tenant~invalid", "tenant*invalid", "tenant^invalid"} {
		b, _ := json.Marshal(map[string]string{"tenantName": n})
		e.Fail("POST", "/api/v1/tenants/x/", string(b), "")
	}
	e.Fail("POST", "/api/v1/tenants/tenant1/", `{"tenantName":"tenant1"}`, "Cant change tenant parameters after its created")
	e.OK("DELETE", "/api/v1/tenants/tenant-valid/", "")
	e.Fail("GET", "/api/v1/tenants/tenant-valid/", "", "tenant not found")

	e.CreateNet("tenant1", "net1", "vlan", "10.1.1.0/24", "", 0)
	e.OK("POST", "/api/v1/endpointGroups/tenant1:g1/", `{"tenantName":"tenant1","groupName":"g1","networkName":"net1"}`)
	e.Fail("DELETE", "/api/v1/tenants/tenant1/", "", "cannot delete tenant1 has 1 endpoint groups")
	e.OK("DELETE", "/api/v1/endpointGroups/tenant1:g1/", "")
	e.Fail("DELETE", "/api/v1/tenants/tenant1/", "", "cannot delete tenant1 has 1 networks")
	var ti struct {
		Oper struct {
			TotalNetworks int `json:"totalNetworks"`
			Networks      []struct {
				PktTag int `json:"pktTag"`
			} `json:"networks"`
		}
	}
	e.Inspect("tenants/tenant1/", &ti)
	if ti.Oper.TotalNetworks != 1 || len(ti.Oper.Networks) != 1 || ti.Oper.Networks[0].PktTag != 1 {
		t.Fatalf("tenant oper: %+v", ti.Oper)
	}
	e.DeleteNet("tenant1", "net1")
	e.OK("DELETE", "/api/v1/tenants/tenant1/", "")
	e.Fail("DELETE", "/api/v1/tenants/tenant1/", "", "tenant not found")
}

func TestNetwork(t *testing.T) {
	e := newEnv(t)
	// 11.
	e.CreateNet("default", "contiv", "vlan", "10.1.1.1/24", "10.1.1.254", 1)
	ni := e.NetOper("default", "contiv")
	if ni.Oper.PktTag != 1 || ni.Oper.AllocatedAddressesCount != 0 || ni.Oper.AllocatedIPAddresses != "10.1.1.254" ||
		ni.Oper.AvailableIPAddresses != "10.1.1.1-10.1.1.253" || ni.Oper.NetworkTag != "contiv.default" {
		t.Fatalf("network oper: %+v", ni.Oper)
	}
	var ns struct {
		SubnetIP  string `json:"subnetIP"`
		SubnetLen int    `json:"subnetLen"`
		PktTag    int    `json:"pktTag"`
		PktType   string `json:"pktTagType"`
	}
	_ = json.Unmarshal([]byte(e.Dump()["state/nets/contiv.default"]), &ns)
	if ns.SubnetIP != "10.1.1.0" || ns.SubnetLen != 24 || ns.PktTag != 1 || ns.PktType != "vlan" {
		t.Fatalf("network state: %+v", ns)
	}
	b := e.OK("GET", "/api/v1/networks/default:contiv/", "")
	if b != `{"key":"default:contiv","encap":"vlan","gateway":"10.1.1.254","networkName":"contiv","nwType":"data","pktTag":1,"subnet":"10.1.1.1/24","tenantName":"default","link-sets":{},"links":{"Tenant":{"type":"tenant","key":"default"}}}`+"\n" {
		t.Fatalf("network GET: %s", b)
	}
	if b := e.OK("GET", "/api/v1/tenants/default/", ""); !strings.Contains(b, `"Networks":{"default:contiv":{"type":"network","key":"default:contiv"}}`) {
		t.Fatalf("tenant links: %s", b)
	}
	e.Fail("POST", "/api/v1/networks/default:contiv/", mastertest.NetBody("default", "contiv", "vlan", "10.1.1.1/24", "10.1.1.254", 1),
		"Cant change network parameters after its created")
	e.DeleteNet("default", "contiv")
	e.Fail("DELETE", "/api/v1/networks/default:contiv/", "", "network not found")
	e.CreateNet("default", "vx", "vxlan", "10.1.1.0/24", "", 1)
	if ni := e.NetOper("default", "vx"); ni.Oper.PktTag != 1 || ni.Oper.ExternalPktTag != 1 {
		t.Fatalf("vxlan oper: %+v", ni.Oper)
	}
	e.DeleteNet("default", "vx")

	// 12.
	e.CreateNet("default", "contiv-net", "vlan", "10.1.1.0/24", "", 0)
	if ni := e.NetOper("default", "contiv-net"); ni.Oper.AllocatedIPAddresses != "" {
		t.Fatalf("no-gateway network: %+v", ni.Oper)
	}
	e.OK("POST", "/api/v1/networks/default:v6/", `{"tenantName":"default","networkName":"v6","encap":"vlan","subnet":"10.9.1.0/24","ipv6Subnet":"2016:0617::/120"}`)
	if got := e.Dump()["state/nets/v6.default"]; !strings.Contains(got, `"ipv6SubnetLen":120`) {
		t.Fatalf("ipv6 state: %s", got)
	}
	e.OK("POST", "/api/v1/networks/default:infra1/", `{"tenantName":"default","networkName":"infra1","encap":"vlan","subnet":"10.9.2.0/24","nwType":"infra"}`)
	for _, n := range []string{"contiv-net", "v6", "infra1"} {
		e.DeleteNet("default", n)
	}

	// 13.
	bad := []string{
		mastertest.NetBody("default", "contiv:invalid", "vlan", "10.1.1.0/24", "", 0),
		mastertest.NetBody("default", "-invalid", "vlan", "10.1.1.0/24", "", 0),
		`{"tenantName":"default","networkName":"x","encap":"vlan","subnet":"10.1.1.0/24","nwType":"infratest"}`,
		`{"tenantName":"default","networkName":"x","encap":"vlan","subnet":"10.1.1.0/24","nwType":"datatest"}`,
		mastertest.NetBody("default", "x", "vvvv", "10.1.1.0/24", "", 0),
		mastertest.NetBody("default", "x", "vlan", "10.1.1.0/24", "", 5000),
		mastertest.NetBody("default", "x", "vxlan", "10.1.1.0/24", "", 20000),
		`{"tenantName":"default","networkName":"x","encap":"vlan","subnet":"10.1.1.0/24","ipv6Subnet":"2016:0617::/128"}`,
		`{"tenantName":"default","networkName":"x","encap":"vlan","subnet":"10.1.1.0/24","cfgdTag":"tag=contiv-net"}`,
		`{"tenantName":"default","networkName":"x","encap":"vlan","subnet":"10.1.1.0/24","cfgdTag":"io.contiv.network/test"}`,
		mastertest.NetBody("nosuchtenant", "x", "vlan", "10.1.1.0/24", "", 0),
	}
	for _, s := range []string{"10.1.1.10-20/24", "10.1.1.10-10.1.20/24", "10.1.1.10-10.1.1.1/24", "10.1.1.10-10.1.2.30/24",
		"10.1.1.10-10.2.1.30/16", "10.1.1.10-10.1.1.1.30/24", "10.1.1/24", "10.1.1.256/24", "10.1.1.1-70/26", "10.1.1.1/32"} {
		bad = append(bad, mastertest.NetBody("default", "x", "vlan", s, "", 0))
	}
	for _, body := range bad {
		var key struct{ TenantName, NetworkName string }
		_ = json.Unmarshal([]byte(body), &key)
		e.Fail("POST", "/api/v1/networks/"+key.TenantName+":"+key.NetworkName+"/", body, "")
	}
	e.Fail("POST", "/api/v1/networks/default:x/", mastertest.NetBody("default", "x", "vlan", "10.1.1.10-10.1.1.1/24", "", 0), "Network subnet format not valid")
	e.Fail("POST", "/api/v1/networks/default:x/", mastertest.NetBody("default", "x", "vlan", "10.1.1.0/24", "10.1.2.1", 0),
		"gateway 10.1.2.1 is outside subnet 10.1.1.0/24")
	e.Fail("POST", "/api/v1/networks/nosuch:x/", mastertest.NetBody("nosuch", "x", "vlan", "10.1.1.0/24", "", 0), "Tenant nosuch not found")
	e.Fail("POST", "/api/v1/networks/default:x/", mastertest.NetBody("default", "x", "vlan", "10.1.1.0/7", "", 0), "")

	// 14.
	e.CreateNet("default", "r1", "vlan", "10.1.1.10-10.1.1.20/24", "", 0)
	if ni := e.NetOper("default", "r1"); ni.Oper.AvailableIPAddresses != "10.1.1.10-10.1.1.20" {
		t.Fatalf("range network: %+v", ni.Oper)
	}
	e.CreateNet("default", "r2", "vlan", "10.2.1.10-10.2.5.254/16", "", 0)
	e.OK("POST", "/api/v1/networks/default:t1/", `{"tenantName":"default","networkName":"t1","encap":"vlan","subnet":"10.3.1.0/24","cfgdTag":"contiv-net"}`)
	if ni := e.NetOper("default", "t1"); ni.Oper.NetworkTag != "contiv-net" {
		t.Fatalf("tag: %+v", ni.Oper)
	}
	e.OK("POST", "/api/v1/networks/default:t2/", `{"tenantName":"default","networkName":"t2","encap":"vlan","subnet":"10.4.1.0/24","cfgdTag":"io.contiv.network.test"}`)
	for _, n := range []string{"r1", "r2", "t1", "t2"} {
		e.DeleteNet("default", n)
	}

	// 15. Auto tags.
	e.CreateNet("default", "a1", "vlan", "10.1.1.0/24", "", 0)
	e.CreateNet("default", "a2", "vxlan", "10.1.2.0/24", "", 0)
	e.CreateNet("default", "a3", "vxlan", "10.1.3.0/24", "", 0)
	e.CreateNet("default", "a4", "vxlan", "10.1.4.0/24", "", 1000)
	for n, want := range map[string][2]int{"a1": {1, 0}, "a2": {1, 1}, "a3": {2, 2}, "a4": {3, 1000}} {
		if ni := e.NetOper("default", n); ni.Oper.PktTag != want[0] || ni.Oper.ExternalPktTag != want[1] {
			t.Fatalf("%s: oper %+v want %v", n, ni.Oper, want)
		}
	}
	e.Fail("POST", "/api/v1/networks/default:dup/", mastertest.NetBody("default", "dup", "vlan", "10.1.1.0/24", "", 1), "")
	e.Fail("POST", "/api/v1/networks/default:dup/", mastertest.NetBody("default", "dup", "vxlan", "10.1.2.0/24", "", 1), "")
	for _, n := range []string{"a1", "a2", "a3", "a4"} {
		e.DeleteNet("default", n)
	}
	e.SetGlobal(mastertest.GlobalBody("default", "100-1000", "1001-2000", "bridge", "proxy", "172.19.0.0/16"))
	e.Fail("POST", "/api/v1/networks/default:q/", mastertest.NetBody("default", "q", "vlan", "10.1.1.0/24", "", 1001), "requested vlan not available - vlan:1001")
	e.Fail("POST", "/api/v1/networks/default:q/", mastertest.NetBody("default", "q", "vlan", "10.1.1.0/24", "", 99), "requested vlan not available - vlan:99")
	e.Fail("POST", "/api/v1/networks/default:q/", mastertest.NetBody("default", "q", "vxlan", "10.1.1.0/24", "", 2001), "requested vxlan not available")
	e.Fail("POST", "/api/v1/networks/default:q/", mastertest.NetBody("default", "q", "vxlan", "10.1.1.0/24", "", 1000), "requested vxlan is out of range")
	e.SetGlobal(mastertest.DefaultGlobal)

	// 16. Overlaps.
	e.CreateNet("default", "o1", "vlan", "10.1.1.0/24", "", 0)
	e.CreateNet("default", "o2", "vlan", "10.1.2.0/24", "", 0)
	e.Fail("POST", "/api/v1/networks/default:o3/", mastertest.NetBody("default", "o3", "vxlan", "10.1.1.0/24", "10.1.1.1", 0),
		"network o1 conflicts with subnet 10.1.1.0/24")
	e.Fail("POST", "/api/v1/networks/default:o3/", mastertest.NetBody("default", "o3", "vlan", "10.1.0.0/16", "", 0), "")
	e.DeleteNet("default", "o1")
	e.DeleteNet("default", "o2")
	e.CreateNet("default", "w", "vlan", "10.1.1.0/16", "", 0)
	e.Fail("POST", "/api/v1/networks/default:o3/", mastertest.NetBody("default", "o3", "vlan", "10.1.2.0/24", "", 0), "network w conflicts with subnet 10.1.2.0/24")
	e.DeleteNet("default", "w")
	e.CreateNet("default", "ra", "vlan", "20.1.1.10-20.1.1.45/24", "", 0)
	e.CreateNet("default", "rb", "vlan", "20.1.1.46-20.1.1.100/24", "", 0)
	e.CreateNet("default", "rc", "vlan", "20.1.1.0-20.1.1.9/24", "", 0)
	e.Fail("POST", "/api/v1/networks/default:rd/", mastertest.NetBody("default", "rd", "vlan", "20.1.1.0-20.1.1.10/24", "", 0), "network ra conflicts with subnet 20.1.1.0-20.1.1.10/24")
	v6 := func(name, sub string) string {
		return fmt.Sprintf(`{"tenantName":"default","networkName":%q,"encap":"vlan","subnet":"30.%d.0.0/16","ipv6Subnet":%q}`, name, len(name)+len(sub), sub)
	}
	e.OK("POST", "/api/v1/networks/default:s1/", v6("s1", "::/64"))
	e.OK("POST", "/api/v1/networks/default:s2/", v6("s2", "1::/64"))
	e.Fail("POST", "/api/v1/networks/default:s3x/", v6("s3x", "1::/64"), "network s2 conflicts with subnetv6  1::/64")
	e.OK("POST", "/api/v1/networks/default:s4/", v6("s4", "2001:2000::/32"))
	e.Fail("POST", "/api/v1/networks/default:s5/", v6("s5", "2001:2000:1234:4422::/64"), "")
	e.OK("POST", "/api/v1/tenants/other/", `{"tenantName":"other"}`)
	e.CreateNet("other", "ra", "vlan", "20.1.1.10-20.1.1.45/24", "", 0)

	// 18.
	e.CreateNet("default", "base", "vlan", "40.1.1.0/24", "", 0)
	e.OK("POST", "/api/v1/endpointGroups/default:epg1/", `{"tenantName":"default","groupName":"epg1","networkName":"base"}`)
	e.Fail("POST", "/api/v1/networks/default:epg1/", mastertest.NetBody("default", "epg1", "vlan", "40.2.1.0/24", "", 0), "EndpointGroup epg1 conflicts with the network name")
	e.Fail("DELETE", "/api/v1/networks/default:base/", "", "cannot delete base has 1 endpoint groups")
}
