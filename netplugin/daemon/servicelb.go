package daemon

import (
	"context"
	"net"
	"strings"

	"github.com/contiv/netplugin/netplugin/nameserver"
	"github.com/contiv/netplugin/state"
)

// nameEndpoint is an endpoint as the name server sees it.
func (d *Daemon) nameEndpoint(ep state.Endpoint) (nameserver.Endpoint, bool) {
	tenant := ""
	if nw, ok := d.nets.KnownNetwork(ep.NetID); ok {
		tenant = nw.Tenant
	}
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
