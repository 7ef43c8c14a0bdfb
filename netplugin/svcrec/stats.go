package svcrec

import (
	"context"
	"strconv"
)

// StatsEntry is one endpoint's entry of /svcstats (docs/services.md): the
// provider endpoint "<ip>:<tenant>" with what each service sent it.
type StatsEntry struct {
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

// Stats merges the service counters of both bridges, keyed by provider
// endpoint, as GET /svcstats serves them.
func (r *Reconciler) Stats(ctx context.Context) (map[string]*StatsEntry, error) {
	out := map[string]*StatsEntry{}
	for _, a := range r.cfg.Datapaths {
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
						e = &StatsEntry{EndpointIP: prov, VrfName: s.Vrf, SvcStats: map[string]svcPortStats{}}
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
