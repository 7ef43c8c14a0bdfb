package agent

import (
	"context"
	"fmt"
	"net"

	"github.com/contiv/netplugin/ofnet/pipeline"
)

// HostAccess describes the host NAT port contivh0 of the VXLAN routing datapath
// (docs/dataplane.md §3.7).
type HostAccess struct {
	Port uint32           // OpenFlow port of contivh0
	MAC  net.HardwareAddr // contivh0's MAC
	Addr *net.IPNet       // contivh0's private address; its network is the private subnet
}

func (h HostAccess) validate() error {
	switch {
	case h.Port == 0:
		return fmt.Errorf("host port: port number 0")
	case len(h.MAC) != 6:
		return fmt.Errorf("host port: MAC %q is not an Ethernet address", h.MAC)
	case h.Addr == nil || h.Addr.IP.To4() == nil:
		return fmt.Errorf("host port: address %v is not IPv4", h.Addr)
	}
	if ones, bits := h.Addr.Mask.Size(); bits != 32 || ones > 16 {
		return fmt.Errorf("host port: private subnet %v is smaller than a /16", h.Addr)
	}
	return nil
}

// PrivateIP is the host-private address of the endpoint on OpenFlow port p: the
// private subnet's base plus the port number (docs/dataplane.md §3.7). Ports at or
// above 0xfffe have none (0xfffe is contivh0's own number).
func (h HostAccess) PrivateIP(p uint32) (net.IP, bool) {
	if h.Addr == nil || p == 0 || p >= 0xfffe {
		return nil, false
	}
	base := h.Addr.IP.Mask(h.Addr.Mask).To4()
	if base == nil {
		return nil, false
	}
	ip := net.IPv4(base[0], base[1], base[2]|byte(p>>8), base[3]|byte(p)).To4()
	return ip, true
}

// SetHostAccess enables host access through contivh0 (VXLAN routing only):
// container traffic that the IP table does not route is source-NATed to the
// endpoint's private address and handed to the host, and the host reaches an
// endpoint at its private address. Idempotent.
func (a *Agent) SetHostAccess(ctx context.Context, h HostAccess) error {
	if a.cfg.Datapath != DatapathVrouter {
		return fmt.Errorf("agent %s: host access needs the %s datapath, not %s", a.cfg.Bridge, DatapathVrouter, a.cfg.Datapath)
	}
	if err := h.validate(); err != nil {
		return fmt.Errorf("agent %s: %w", a.cfg.Bridge, err)
	}
	return a.change(ctx, "set host access", func() func() {
		old := a.host
		a.host = &h
		return func() { a.host = old }
	})
}

// ClearHostAccess removes the host access flows. Idempotent.
func (a *Agent) ClearHostAccess(ctx context.Context) error {
	return a.change(ctx, "clear host access", func() func() {
		old := a.host
		a.host = nil
		return func() { a.host = old }
	})
}

// featureHostAccess holds the contivh0 flows of VXLAN routing (docs/dataplane.md §3.7).
type featureHostAccess struct{}

func (featureHostAccess) name() string { return "host-access" }

func keyHostAccess() string              { return "host-access" }
func keyHostAccessEP(ep endpoint) string { return "host-access:" + ep.ID }

func (featureHostAccess) flows(s *snapshot, d *desiredState) {
	h := s.a.host
	if h == nil {
		return
	}
	cookie := pipeline.CookieOf(pipeline.CatInit, "host-access")
	pvt := &net.IPNet{IP: h.Addr.IP.Mask(h.Addr.Mask), Mask: h.Addr.Mask}
	add := d.to(keyHostAccess())
	add(s.table(pipeline.ClassifierTable).BuildFlow(prioClassifierHostAccess).Cookie(cookie).MatchInPort(h.Port).
		Action().GotoTable(pipeline.HostDNATTable).Done())
	add(s.table(pipeline.IPTable).BuildFlow(prioIPHostDrop).Cookie(cookie).MatchInPort(h.Port).Action().Drop().Done())
	// Never towards another endpoint's private address through the host; the
	// host's own private address is allowed per endpoint below.
	add(s.table(pipeline.HostSNATTable).BuildFlow(prioHostSNATBlock).Cookie(cookie).MatchEthType(pipeline.EthTypeIPv4).
		MatchIPv4Dst(pvt.IP, pvt.Mask).Action().Drop().Done())
	hostIP := h.Addr.IP.To4()
	for _, ep := range s.locals {
		x, ok := h.PrivateIP(ep.Port)
		if !ok || ep.IP == nil {
			continue
		}
		epCookie := pipeline.CookieOf(pipeline.CatLocalEndpoint, "host-access:"+ep.ID)
		to := d.to(keyHostAccessEP(ep))
		snat := s.table(pipeline.HostSNATTable)
		to(snat.BuildFlow(prioHostSNATEndpoint).Cookie(epCookie).MatchEthType(pipeline.EthTypeIPv4).MatchInPort(ep.Port).
			Action().SetEthDst(h.MAC).SetIPv4Src(x).Output(h.Port).Done())
		to(snat.BuildFlow(prioHostSNATHostIP).Cookie(epCookie).MatchEthType(pipeline.EthTypeIPv4).MatchInPort(ep.Port).
			MatchIPv4Dst(hostIP, ipv4HostMask).Action().SetEthDst(h.MAC).SetIPv4Src(x).Output(h.Port).Done())
		to(s.table(pipeline.HostDNATTable).BuildFlow(prioHostDNAT).Cookie(epCookie).MatchEthType(pipeline.EthTypeIPv4).
			MatchInPort(h.Port).MatchIPv4Dst(x, ipv4HostMask).
			Action().SetEthDst(ep.MAC).SetIPv4Dst(ep.IP).SetMetadata(pipeline.VRFField, uint64(ep.VrfID)).
			GotoTable(pipeline.SrvProxySNATTable).Done())
	}
}

// hostAccessState lists contivh0's address and each local endpoint's private
// address (by endpoint id) for inspection.
func hostAccessState(h HostAccess, locals []endpoint) map[string]string {
	m := map[string]string{"contivh0": h.Addr.String()}
	for _, ep := range locals {
		if x, ok := h.PrivateIP(ep.Port); ok {
			m[ep.ID] = x.String()
		}
	}
	return m
}
