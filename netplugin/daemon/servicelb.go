package daemon

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/contiv/netplugin/netplugin/nameserver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
)

// serviceSpec turns a service LB state (docs/services.md) into the
// datapath's spec. Ports are "<svcPort>:<provPort>:<protocol>"; one
// malformed entry refuses the whole service (§6.3).
func serviceSpec(s state.ServiceLB) (agent.ServiceSpec, error) {
	spec := agent.ServiceSpec{Vrf: s.Tenant, IpAddress: s.IPAddress}
	for _, p := range s.Ports {
		parts := strings.Split(p, ":")
		if len(parts) != 3 {
			return spec, fmt.Errorf("service %s: port %q is not <svcPort>:<provPort>:<protocol>", s.ID, p)
		}
		svc, err1 := strconv.ParseUint(parts[0], 10, 16)
		prov, err2 := strconv.ParseUint(parts[1], 10, 16)
		if err1 != nil || err2 != nil {
			return spec, fmt.Errorf("service %s: port %q: ports must be 0..65535", s.ID, p)
		}
		spec.Ports = append(spec.Ports, agent.ServicePort{Protocol: strings.ToUpper(parts[2]),
			SvcPort: uint16(svc), ProvPort: uint16(prov)})
	}
	return spec, nil
}

// serviceAgents are the datapaths a service lives in: both bridges, as the
// original (the VIP's network decides which one carries its clients).
func (d *Daemon) serviceAgents() []datapath { return []datapath{d.vx, d.vl} }

// svcStatsEntry is one endpoint's entry of /svcstats (docs/services.md): the
// provider endpoint "<ip>:<tenant>" with what each service sent it.
type svcStatsEntry struct {
	EndpointIP string
	VrfName    string
	PortStats  dpStats
	SvcStats   map[string]svcPortStats
}

type dpStats struct {
	PacketsIn, BytesIn, PacketsOut, BytesOut uint64
}

type svcPortStats struct {
	ServiceIP   string
	ServiceVRF  string
	Protocol    string
	SvcPort     uint16
	ProvPort    uint16
	Connections uint64
	SvcStats    dpStats // through the VIP to this provider, and its translated replies
	ProvStats   dpStats // what the provider's port sent (local providers)
}

// svcStats merges the service counters of both bridges, keyed by provider
// endpoint, as GET /svcstats serves them.
func (d *Daemon) svcStats(ctx context.Context) (map[string]*svcStatsEntry, error) {
	out := map[string]*svcStatsEntry{}
	for _, a := range d.serviceAgents() {
		stats, err := a.ServiceStats(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range stats {
			for _, p := range s.Ports {
				for prov, ps := range p.Providers {
					key := prov + ":" + s.Vrf
					e := out[key]
					if e == nil {
						e = &svcStatsEntry{EndpointIP: prov, VrfName: s.Vrf, SvcStats: map[string]svcPortStats{}}
						out[key] = e
					}
					k := s.Service + "/" + p.Protocol + "/" + strconv.Itoa(int(p.SvcPort))
					cur := e.SvcStats[k]
					cur.ServiceIP, cur.ServiceVRF, cur.Protocol, cur.SvcPort, cur.ProvPort = s.VIP, s.Vrf, p.Protocol, p.SvcPort, p.ProvPort
					cur.Connections += ps.Connections
					cur.SvcStats.PacketsIn += ps.PacketsIn
					cur.SvcStats.BytesIn += ps.BytesIn
					cur.ProvStats.PacketsOut += ps.PacketsOut
					cur.ProvStats.BytesOut += ps.BytesOut
					e.SvcStats[k] = cur
					e.PortStats.PacketsIn += ps.PacketsIn
					e.PortStats.BytesIn += ps.BytesIn
					e.PortStats.PacketsOut += ps.PacketsOut
					e.PortStats.BytesOut += ps.BytesOut
				}
			}
		}
	}
	return out, nil
}

// nameEndpoint is an endpoint as the name server sees it.
func (d *Daemon) nameEndpoint(ep state.Endpoint) (nameserver.Endpoint, bool) {
	tenant := ""
	d.mu.Lock()
	if nw, ok := d.networks[ep.NetID]; ok {
		tenant = nw.Tenant
	}
	d.mu.Unlock()
	if tenant == "" {
		if i := strings.LastIndex(ep.NetID, "."); i >= 0 {
			tenant = ep.NetID[i+1:]
		}
	}
	if tenant == "" {
		return nameserver.Endpoint{}, false
	}
	group := ep.EndpointGroupKey
	if i := strings.LastIndex(group, ":"); i >= 0 {
		group = group[:i]
	}
	return nameserver.Endpoint{ID: ep.ID, Tenant: tenant, Name: ep.EPCommonName, Group: group,
		IPv4: net.ParseIP(ep.IPAddress), IPv6: net.ParseIP(ep.IPv6Address)}, true
}

// endpointNamesPut and endpointNamesDel keep the name server's endpoint
// records in step with state/eps (docs/dns.md).
// A deleted endpoint of this host also leaves the datapath (its
// reconciler, endpoint/<id>).
func (d *Daemon) endpointNamesPut(_ context.Context, ep state.Endpoint, _ *state.Endpoint) {
	if ne, ok := d.nameEndpoint(ep); ok {
		d.names.SetEndpoint(ne)
	}
}

func (d *Daemon) endpointNamesDel(_ context.Context, ep state.Endpoint) {
	if ep.HomingHost == d.cfg.HostLabel {
		d.rec.Enqueue(kindEndpoint, ep.ID)
	}
	d.names.RemoveEndpoint(ep.ID)
}
