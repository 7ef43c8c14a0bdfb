package agent

import (
	"context"
	"fmt"
	"net"
	"sort"

	"github.com/contiv/netplugin/ofnet/pipeline"
)

// DatapathVlrouter is VLAN routing on contivVlanBridge (docs/dataplane.md §3.4).
const DatapathVlrouter = "vlrouter"

// bgpState is what VLAN routing knows of BGP: the port of the router address
// (inb01), the peer's MAC once known, and the routes learned from the peer.
type bgpState struct {
	port     uint32
	routerIP net.IP
	peerMAC  net.HardwareAddr
	routes   map[string]*net.IPNet
}

// SetBgpPort names the port holding the BGP router address (VLAN routing):
// everything it sends leaves by the first uplink, and what comes in from the
// uplink for the router address or as ARP goes to it. Port 0 clears it.
func (a *Agent) SetBgpPort(ctx context.Context, port uint32, routerIP net.IP) error {
	if a.cfg.Datapath != DatapathVlrouter {
		return fmt.Errorf("agent %s: BGP needs the %s datapath, not %s", a.cfg.Bridge, DatapathVlrouter, a.cfg.Datapath)
	}
	if port != 0 && routerIP.To4() == nil {
		return fmt.Errorf("agent %s: BGP router address %v is not IPv4", a.cfg.Bridge, routerIP)
	}
	return a.change(ctx, "set BGP port", func() func() {
		oldPort, oldIP := a.bgp.port, a.bgp.routerIP
		a.bgp.port, a.bgp.routerIP = port, routerIP.To4()
		return func() { a.bgp.port, a.bgp.routerIP = oldPort, oldIP }
	})
}

// SetBgpPeerMAC sets the MAC learned routes are sent to (nil: routes are not
// installed until it is known).
func (a *Agent) SetBgpPeerMAC(ctx context.Context, mac net.HardwareAddr) error {
	if mac != nil && len(mac) != 6 {
		return fmt.Errorf("agent %s: BGP peer MAC %v is not an Ethernet address", a.cfg.Bridge, mac)
	}
	return a.change(ctx, "set BGP peer MAC", func() func() {
		old := a.bgp.peerMAC
		a.bgp.peerMAC = mac
		return func() { a.bgp.peerMAC = old }
	})
}

// AddBgpRoute installs a route learned over BGP: to the peer by the uplink.
func (a *Agent) AddBgpRoute(ctx context.Context, pfx *net.IPNet) error {
	if pfx == nil || pfx.IP.To4() == nil {
		return fmt.Errorf("agent %s: BGP route %v is not IPv4", a.cfg.Bridge, pfx)
	}
	n := &net.IPNet{IP: pfx.IP.Mask(pfx.Mask).To4(), Mask: pfx.Mask}
	return a.change(ctx, "add BGP route "+n.String(), func() func() {
		if a.bgp.routes == nil {
			a.bgp.routes = map[string]*net.IPNet{}
		}
		if _, ok := a.bgp.routes[n.String()]; ok {
			return nil
		}
		a.bgp.routes[n.String()] = n
		return func() { delete(a.bgp.routes, n.String()) }
	})
}

// RemoveBgpRoute removes a learned route. Idempotent.
func (a *Agent) RemoveBgpRoute(ctx context.Context, pfx *net.IPNet) error {
	if pfx == nil {
		return nil
	}
	key := (&net.IPNet{IP: pfx.IP.Mask(pfx.Mask), Mask: pfx.Mask}).String()
	return a.change(ctx, "remove BGP route "+key, func() func() {
		old, ok := a.bgp.routes[key]
		if !ok {
			return nil
		}
		delete(a.bgp.routes, key)
		return func() { a.bgp.routes[key] = old }
	})
}

// FlushBgpRoutes removes every learned route (the BGP session dropped).
func (a *Agent) FlushBgpRoutes(ctx context.Context) error {
	return a.change(ctx, "flush BGP routes", func() func() {
		old := a.bgp.routes
		a.bgp.routes = nil
		return func() { a.bgp.routes = old }
	})
}

// BgpRoutes lists the installed learned routes.
func (a *Agent) BgpRoutes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.bgp.routes))
	for k := range a.bgp.routes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// bgpRouteCoversLocked reports whether a learned route covers ip.
func (a *Agent) bgpRouteCoversLocked(ip net.IP) bool {
	for _, r := range a.bgp.routes {
		if r.Contains(ip) {
			return true
		}
	}
	return false
}

// firstUplinkLocked is the uplink VLAN routing uses (the lowest port number).
func (a *Agent) firstUplinkLocked() (uint32, bool) {
	var best uint32
	for p := range a.uplinks {
		if best == 0 || p < best {
			best = p
		}
	}
	return best, best != 0
}

// featureVlanRouting is VLAN routing (docs/dataplane.md §3.4): local endpoints are
// routed in the IP table with the anycast router MAC; fabric traffic from the uplink
// enters the IP table; routes learned over BGP leave by the uplink to the peer.
type featureVlanRouting struct{}

func (featureVlanRouting) name() string { return "vlan-routing" }

func keyBgp() string               { return "bgp" }
func keyBgpRoute(r string) string  { return "bgp-route:" + r }
func keyVlrUplink(p uint32) string { return "vlr-uplink:" + itoa(uint64(p)) }

func (featureVlanRouting) flows(s *snapshot, d *desiredState) {
	ipt := s.table(pipeline.IPTable)
	for _, ep := range s.locals {
		portFlows(s, d, ep, false)
		if ep.IP == nil {
			continue
		}
		cookie := pipeline.CookieOf(pipeline.CatLocalEndpoint, ep.ID)
		d.to(keyLocal(ep))(ipt.BuildFlow(prioIPLocalVlr).Cookie(cookie).MatchIPv4Dst(ep.IP, nil).
			Action().SetEthSrc(routerMAC).SetEthDst(ep.MAC).Output(ep.Port).Done())
		if ep.IPv6 != nil {
			d.to(keyLocal(ep))(ipt.BuildFlow(prioIPEndpoint).Cookie(cookie).MatchIPv6Dst(ep.IPv6).
				Action().SetEthSrc(routerMAC).SetEthDst(ep.MAC).Output(ep.Port).Done())
		}
	}
	up, ok := s.a.firstUplinkLocked()
	if !ok {
		return
	}
	key := keyVlrUplink(up)
	d.to(key)(s.table(pipeline.VlanTable).BuildFlow(prioVlanFabric).Cookie(pipeline.CookieOf(pipeline.CatUplink, key)).
		MatchInPort(up).Action().GotoTable(pipeline.SrvProxySNATTable).Done())
	b := s.a.bgp
	if b.port == 0 {
		return
	}
	cookie := pipeline.CookieOf(pipeline.CatInit, "bgp")
	t0 := s.table(pipeline.ClassifierTable)
	add := d.to(keyBgp())
	add(t0.BuildFlow(prioClassifierBGP).Cookie(cookie).MatchInPort(b.port).Action().Output(up).Done())
	add(t0.BuildFlow(prioClassifierBGP).Cookie(cookie).MatchInPort(up).MatchEthType(pipeline.EthTypeARP).Action().Output(b.port).Done())
	add(t0.BuildFlow(prioClassifierBGP).Cookie(cookie).MatchInPort(up).MatchIPv4Dst(b.routerIP, nil).Action().Output(b.port).Done())
	if b.peerMAC == nil {
		return
	}
	src := routerMAC
	if m, err := net.ParseMAC(s.a.cfg.UplinkMAC); err == nil {
		src = m
	}
	for k, r := range b.routes {
		ones, _ := r.Mask.Size()
		d.to(keyBgpRoute(k))(ipt.BuildFlow(prioIPBGPRoute).Cookie(pipeline.CookieOf(pipeline.CatRemoteEndpoint, "bgp:"+k)).
			MatchIPv4Dst(r.IP, maskOrHost(r.Mask, ones)).
			Action().SetEthSrc(src).SetEthDst(b.peerMAC).Output(up).Done())
	}
}

// maskOrHost passes a /32 as nil (an exact match) and other masks as they are.
func maskOrHost(m net.IPMask, ones int) net.IPMask {
	if ones == 32 {
		return nil
	}
	return m
}

// vlanDatapath reports whether the agent runs on the VLAN bridge (bridging or
// routing): remote endpoints carry no VNI there.
func (a *Agent) vlanDatapath() bool {
	return a.cfg.Datapath == DatapathVlan || a.cfg.Datapath == DatapathVlrouter
}
