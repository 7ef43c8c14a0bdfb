package mastertest

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/contiv/netplugin/netmaster/ipam"
)

// The helpers below drive the contivmodel API and the /plugin/* calls of a
// term; the tests of several packages share them.

type GroupRecord struct {
	EndpointGroupID int    `json:"endpointGroupId"`
	EpCount         int    `json:"epCount"`
	PktTag          int    `json:"pktTag"`
	IPPool          string `json:"IPPool"`
	GroupTag        string `json:"groupTag"`
}

func GlobalBody(infra, vlans, vxlans, fwd, arp, pvt string) string {
	return fmt.Sprintf(`{"name":"global","networkInfraType":%q,"vlans":%q,"vxlans":%q,"fwdMode":%q,"arpMode":%q,"pvtSubnet":%q}`,
		infra, vlans, vxlans, fwd, arp, pvt)
}

const DefaultGlobal = `{"name":"global","networkInfraType":"default","vlans":"1-4094","vxlans":"1-10000","fwdMode":"bridge","arpMode":"proxy","pvtSubnet":"172.19.0.0/16"}`

func (e *Env) SetGlobal(body string) {
	e.T.Helper()
	e.OK("POST", "/api/v1/globals/global/", body)
	var got, want map[string]any
	_ = json.Unmarshal([]byte(e.OK("GET", "/api/v1/globals/global/", "")), &got)
	_ = json.Unmarshal([]byte(body), &want)
	for _, k := range []string{"networkInfraType", "vlans", "vxlans", "pvtSubnet"} {
		if got[k] != want[k] {
			e.T.Fatalf("global %s: got %v want %v", k, got[k], want[k])
		}
	}
}

func NetBody(tenant, name, encap, subnet, gw string, tag int) string {
	return fmt.Sprintf(`{"tenantName":%q,"networkName":%q,"encap":%q,"subnet":%q,"gateway":%q,"pktTag":%d}`,
		tenant, name, encap, subnet, gw, tag)
}

func (e *Env) CreateNet(tenant, name, encap, subnet, gw string, tag int) {
	e.T.Helper()
	e.OK("POST", "/api/v1/networks/"+tenant+":"+name+"/", NetBody(tenant, name, encap, subnet, gw, tag))
}

func (e *Env) DeleteNet(tenant, name string) {
	e.T.Helper()
	e.OK("DELETE", "/api/v1/networks/"+tenant+":"+name+"/", "")
}

func (e *Env) Inspect(path string, v any) {
	e.T.Helper()
	b := e.OK("GET", "/api/v1/inspect/"+path, "")
	if err := json.Unmarshal([]byte(b), v); err != nil {
		e.T.Fatalf("decode inspect %s: %v (%s)", path, err, b)
	}
}

type NetInspect struct {
	Oper struct {
		PktTag                  int    `json:"pktTag"`
		ExternalPktTag          int    `json:"externalPktTag"`
		NumEndpoints            int    `json:"numEndpoints"`
		AllocatedAddressesCount int    `json:"allocatedAddressesCount"`
		AllocatedIPAddresses    string `json:"allocatedIPAddresses"`
		AvailableIPAddresses    string `json:"availableIPAddresses"`
		NetworkTag              string `json:"networkTag"`
		Endpoints               []struct {
			EndpointID string   `json:"endpointID"`
			IPAddress  []string `json:"ipAddress"`
		} `json:"endpoints"`
	}
}

type GlobalInspect struct {
	Oper struct {
		NumNetworks     int    `json:"numNetworks"`
		VlansInUse      string `json:"vlansInUse"`
		VxlansInUse     string `json:"vxlansInUse"`
		FreeVXLANsStart int    `json:"freeVXLANsStart"`
		ClusterMode     string `json:"clusterMode"`
	}
}

func (e *Env) NetOper(tenant, name string) NetInspect {
	e.T.Helper()
	var ni NetInspect
	e.Inspect("networks/"+tenant+":"+name+"/", &ni)
	return ni
}

func (e *Env) GlobalOper() GlobalInspect {
	e.T.Helper()
	var gi GlobalInspect
	e.Inspect("globals/global/", &gi)
	return gi
}

func EPGBody(tenant, group, net string, extra string) string {
	b := fmt.Sprintf(`{"tenantName":%q,"groupName":%q,"networkName":%q`, tenant, group, net)
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

func (e *Env) CreateEPG(tenant, group, net, extra string) {
	e.T.Helper()
	e.OK("POST", "/api/v1/endpointGroups/"+tenant+":"+group+"/", EPGBody(tenant, group, net, extra))
}

func (e *Env) GroupState(tenant, group string) (GroupRecord, bool) {
	e.T.Helper()
	raw, ok := e.Dump()["state/endpointGroups/"+group+":"+tenant]
	var gs GroupRecord
	if ok {
		if err := json.Unmarshal([]byte(raw), &gs); err != nil {
			e.T.Fatalf("decode group state: %v", err)
		}
	}
	return gs, ok
}

func CreateEP(tenant, net, group, container, ip string) string {
	return fmt.Sprintf(`{"TenantName":%q,"NetworkName":%q,"ServiceName":%q,"EndpointID":%q,"EPCommonName":"n-%s","ConfigEP":{"Container":%q,"Host":"host1","IPAddress":%q,"ServiceName":%q}}`,
		tenant, net, group, container, container, container, ip, group)
}

func DeleteEP(tenant, net, group, container string) string {
	return fmt.Sprintf(`{"TenantName":%q,"NetworkName":%q,"ServiceName":%q,"EndpointID":%q}`, tenant, net, group, container)
}

type EPResp struct {
	EndpointConfig struct {
		ID               string `json:"id"`
		NetID            string `json:"netID"`
		EndpointGroupID  int    `json:"endpointGroupId"`
		EndpointGroupKey string `json:"endpointGroupKey"`
		IPAddress        string `json:"ipAddress"`
		MacAddress       string `json:"macAddress"`
		HomingHost       string `json:"homingHost"`
	}
}

func (e *Env) CreateEndpoint(body string) EPResp {
	e.T.Helper()
	var r EPResp
	if err := json.Unmarshal([]byte(e.OK("POST", "/plugin/createEndpoint", body)), &r); err != nil {
		e.T.Fatalf("decode createEndpoint: %v", err)
	}
	return r
}

// refused requires status and exact body (message + "\n") and an
// unchanged store.
func (e *Env) Refused(method, path, body string, status int, msg string) {
	e.T.Helper()
	before := e.Dump()
	code, b := e.Do(method, path, body)
	if code != status || b != msg+"\n" {
		e.T.Fatalf("%s %s %s: got %d %q, want %d %q", method, path, body, code, b, status, msg)
	}
	if d := DiffDumps(before, e.Dump()); d != "" {
		e.T.Fatalf("%s %s %s refused (%q) but changed the store:\n%s", method, path, body, b, d)
	}
}

// epBody is a /plugin/createEndpoint request on host with optional
// preferred addresses.
func EPBody(tenant, net, group, container, host, ip, ip6 string) string {
	return fmt.Sprintf(`{"TenantName":%q,"NetworkName":%q,"ServiceName":%q,"EndpointID":%q,"EPCommonName":"n-%s",`+
		`"ConfigEP":{"Container":%q,"Host":%q,"IPAddress":%q,"IPv6Address":%q,"ServiceName":%q}}`,
		tenant, net, group, container, container, container, host, ip, ip6, group)
}

// createDualNet creates a network with an IPv6 subnet and gateway.
func (e *Env) CreateDualNet(tenant, name, subnet, gw, subnet6, gw6 string) {
	e.T.Helper()
	e.OK("POST", "/api/v1/networks/"+tenant+":"+name+"/", fmt.Sprintf(
		`{"tenantName":%q,"networkName":%q,"encap":"vlan","subnet":%q,"gateway":%q,"ipv6Subnet":%q,"ipv6Gateway":%q}`,
		tenant, name, subnet, gw, subnet6, gw6))
}

// v6Taken lists the taken addresses of an IPv6 pool.
func (e *Env) V6Taken(pool string) []string {
	e.T.Helper()
	list, err := ipam.NewV6(e.St).Allocated(Ctx(e.T, 10*time.Second), pool)
	if err != nil {
		e.T.Fatalf("list ipv6 pool %s: %v", pool, err)
	}
	var out []string
	for _, a := range list {
		out = append(out, a.String())
	}
	slices.Sort(out)
	return out
}
