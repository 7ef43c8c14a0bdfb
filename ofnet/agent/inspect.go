package agent

import (
	"maps"
	"net"
	"sort"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// State is the agent's inspect dump (/inspect/driver).
type State struct {
	LocalIp        string
	MyPort         uint16
	MyAddr         string
	IsConnected    bool
	DpName         string
	Bridge         string
	ArpMode        string
	RestartDone    bool
	MasterDb       map[string]ofrpc.OfnetNode
	VtepTable      map[string]uint32
	EndpointDb     map[string]ofrpc.OfnetEndpoint // local (as pushed) and remote endpoints
	LocalEndpoints map[uint32]EndpointInfo
	VrfNameIdMap   map[string]uint8
	Networks       map[uint16]NetworkState
	Uplinks        map[uint32]string
	PolicyRules    map[string]ofrpc.OfnetPolicyRule
	RefusedRules   map[string]string `json:",omitempty"` // rule id → why it was refused (docs/security.md, "Fail closed")
	HostAccess     map[string]string `json:",omitempty"` // contivh0 and each endpoint's private address
	Tables         []string
	Flows          []string // installed flows, ovs-ofctl syntax with cookies
	Groups         []string
}

// NetworkState is a network as the agent knows it.
type NetworkState struct {
	Vni     uint32
	Vrf     string
	Gateway string
}

// State returns a snapshot of the agent's state for inspection.
func (a *Agent) State() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := State{LocalIp: a.cfg.LocalIP.String(), MyPort: a.cfg.RPCPort, IsConnected: a.connected,
		DpName: a.cfg.Datapath, Bridge: a.cfg.Bridge, ArpMode: "proxy", RestartDone: a.finished,
		MasterDb: map[string]ofrpc.OfnetNode{}, VtepTable: map[string]uint32{},
		EndpointDb: map[string]ofrpc.OfnetEndpoint{}, LocalEndpoints: map[uint32]EndpointInfo{},
		VrfNameIdMap: map[string]uint8{}, Networks: map[uint16]NetworkState{},
		Uplinks: map[uint32]string{}, PolicyRules: map[string]ofrpc.OfnetPolicyRule{}}
	if a.cfg.RPCListener != nil {
		st.MyAddr = a.cfg.RPCListener.Addr().String()
	}
	if a.arpFlood {
		st.ArpMode = "flood"
	}
	for k, v := range a.masters {
		st.MasterDb[k] = v
	}
	for k, v := range a.vteps {
		st.VtepTable[k] = v
	}
	for k, v := range a.remotes {
		st.EndpointDb[k] = v
	}
	for p, l := range a.locals {
		st.LocalEndpoints[p] = l.EndpointInfo
		if l.pushed != nil {
			st.EndpointDb[l.pushed.EndpointID] = *l.pushed
		}
	}
	for k, v := range a.vrfs {
		st.VrfNameIdMap[k] = v.ID
	}
	for k, v := range a.networks {
		ns := NetworkState{Vni: v.Vni, Vrf: v.Vrf}
		if v.Gateway != nil {
			ns.Gateway = v.Gateway.String()
		}
		st.Networks[k] = ns
	}
	for k, v := range a.uplinks {
		st.Uplinks[k] = v
	}
	for k, v := range a.rules {
		st.PolicyRules[k] = v
	}
	if len(a.refused) > 0 {
		st.RefusedRules = maps.Clone(a.refused)
	}
	if a.host != nil {
		st.HostAccess = hostAccessState(*a.host, a.localEndpointsLocked())
	}
	for _, t := range a.tables.All() {
		st.Tables = append(st.Tables, t.ID.String()+": miss "+t.Miss.String())
	}
	var flows []ofctrl.Flow
	for _, m := range a.cache {
		for _, f := range m {
			flows = append(flows, f)
		}
	}
	st.Flows = pipeline.Render(flows, true)
	groups := make([]ofctrl.Group, 0, len(a.groups))
	for _, g := range a.groups {
		groups = append(groups, g)
	}
	st.Groups = pipeline.RenderGroups(groups)
	sort.Strings(st.Tables)
	return st
}

// desiredFlows renders what the features want for the current state, without
// cookies (for tests comparing event orders).
func (a *Agent) desiredFlows() ([]string, []string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, err := a.desiredLocked()
	if err != nil {
		return nil, nil, err
	}
	var flows []ofctrl.Flow
	for _, fs := range d.flows {
		flows = append(flows, fs...)
	}
	groups := make([]ofctrl.Group, 0, len(d.groups))
	for _, g := range d.groups {
		groups = append(groups, g)
	}
	return pipeline.Render(flows, false), pipeline.RenderGroups(groups), nil
}

// Stats is the agent's state reduced to counts, cheap enough for every
// metrics scrape (docs/operations.md, "Metrics").
type Stats struct {
	Bridge          string
	Connected       bool
	FlowsByTable    map[string]int // installed flows by table name
	LocalEndpoints  int
	RemoteEndpoints int
}

// Stats counts the installed flows per table and the endpoints.
func (a *Agent) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Stats{Bridge: a.cfg.Bridge, Connected: a.connected, FlowsByTable: map[string]int{},
		LocalEndpoints: len(a.locals), RemoteEndpoints: len(a.remotes)}
	for _, m := range a.cache {
		for _, f := range m {
			s.FlowsByTable[pipeline.TableID(f.Table).String()]++
		}
	}
	return s
}

// DescribeCookie names the object whose flows carry cookie: its category
// and key, e.g. "rule default:p1:1-..." or "remote-endpoint <id>"
// (docs/operations.md, "Packet trace"). Unknown cookies give "".
func (a *Agent) DescribeCookie(cookie uint64) (category, object string) {
	cat := pipeline.CookieCategory(cookie)
	a.mu.Lock()
	defer a.mu.Unlock()
	var keys []string
	switch cat {
	case pipeline.CatRule:
		for k := range a.rules {
			keys = append(keys, k)
		}
	case pipeline.CatRemoteEndpoint:
		for k := range a.remotes {
			keys = append(keys, k)
		}
	case pipeline.CatLocalEndpoint:
		for _, ep := range a.localEndpointsLocked() {
			keys = append(keys, ep.ID)
		}
	case pipeline.CatVtep:
		for k := range a.vteps {
			keys = append(keys, k)
		}
	case pipeline.CatInit:
		keys = append(keys, "base")
	case pipeline.CatService, pipeline.CatSvcAffinity:
		keys = append(keys, "affinity")
		for k := range a.services {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if pipeline.CookieOf(cat, k) == cookie {
			return cat.String(), k
		}
	}
	return cat.String(), ""
}

// MACOf is the MAC of the endpoint (local or remote) with address ip.
func (a *Agent) MACOf(ip net.IP) (net.HardwareAddr, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range a.locals {
		if l.IpAddr.Equal(ip) {
			return l.MacAddr, true
		}
	}
	for _, r := range a.remotes {
		if r.IpAddr.Equal(ip) {
			if mac, err := net.ParseMAC(r.MacAddrStr); err == nil {
				return mac, true
			}
		}
	}
	return nil, false
}

// RouterMAC is the gateway MAC containers send routed traffic to.
func RouterMAC() net.HardwareAddr { return append(net.HardwareAddr(nil), routerMAC...) }

// RemoteEndpoints returns the remote endpoints the agent holds (those
// masters sent it), installed or deferred.
func (a *Agent) RemoteEndpoints() []ofrpc.OfnetEndpoint {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]ofrpc.OfnetEndpoint, 0, len(a.remotes))
	for _, r := range a.remotes {
		out = append(out, r)
	}
	return out
}
