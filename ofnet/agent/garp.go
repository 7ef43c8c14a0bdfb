package agent

import (
	"context"
	"hash/fnv"
	"sort"
	"time"

	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/ofnet/packet"
)

// garpRequest asks the GARP loop for one GARP of an endpoint (single) or a burst of
// GarpRounds rounds for an EPG (0 = every EPG).
type garpRequest struct {
	single *EndpointInfo
	epg    int
}

// garpForEndpoint queues the one GARP a new local endpoint gets (VLAN bridging,
// tagged with the network vlan, §3.3) and, when it has an EPG vlan, a burst for its EPG.
func (a *Agent) garpForEndpoint(ep EndpointInfo) {
	if a.cfg.Datapath != DatapathVlan {
		return
	}
	a.queueGARP(context.Background(), garpRequest{single: &ep})
	if ep.EndpointGroupVlan != 0 {
		a.queueGARP(context.Background(), garpRequest{epg: ep.EndpointGroup})
	}
}

// InjectGARPs starts a burst of GARPRounds rounds, GARPInterval apart, announcing every
// local endpoint of the EPG (0: all) on an uplink (VLAN bridging only; a no-op
// otherwise). A burst already running for the EPG restarts.
func (a *Agent) InjectGARPs(ctx context.Context, epg int) {
	if a.cfg.Datapath != DatapathVlan {
		return
	}
	a.queueGARP(ctx, garpRequest{epg: epg})
}

func (a *Agent) queueGARP(ctx context.Context, r garpRequest) {
	select {
	case a.garps <- r:
	case <-ctx.Done():
	case <-a.runDone:
	default:
		a.log.Warn("agent: GARP queue full; request dropped")
	}
}

// garpLoop sends queued GARPs and runs bursts until ctx ends.
func (a *Agent) garpLoop(ctx context.Context) error {
	active := map[int]int{} // EPG → rounds left
	ticker := time.NewTicker(a.cfg.GARPInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-a.garps:
			if r.single != nil {
				a.sendGARPs(ctx, []EndpointInfo{*r.single}, false)
				continue
			}
			active[r.epg] = a.cfg.GARPRounds - 1
			a.garpRound(ctx, r.epg)
		case <-ticker.C:
			for epg, left := range active {
				if left <= 0 {
					delete(active, epg)
					continue
				}
				a.garpRound(ctx, epg)
				active[epg] = left - 1
			}
		}
	}
}

func (a *Agent) garpRound(ctx context.Context, epg int) {
	a.mu.Lock()
	var eps []EndpointInfo
	for _, l := range a.locals {
		if epg == 0 || l.EndpointGroup == epg {
			eps = append(eps, l.EndpointInfo)
		}
	}
	a.mu.Unlock()
	sort.Slice(eps, func(i, j int) bool { return eps[i].PortNo < eps[j].PortNo })
	a.sendGARPs(ctx, eps, true)
}

// sendGARPs packet-outs one GARP per endpoint on an uplink member, tagged with the
// EPG vlan (useEPGVlan, bursts) or the network vlan.
func (a *Agent) sendGARPs(ctx context.Context, eps []EndpointInfo, useEPGVlan bool) {
	a.mu.Lock()
	sw := a.sw
	a.mu.Unlock()
	if sw == nil {
		return
	}
	for _, ep := range eps {
		a.mu.Lock()
		port, ok := a.uplinkForLocked(ep.MacAddr.String())
		a.mu.Unlock()
		if !ok {
			return
		}
		vlan := ep.Vlan
		if useEPGVlan && ep.EndpointGroupVlan != 0 {
			vlan = ep.EndpointGroupVlan
		}
		po := of.NewPacketOut(packet.GARPFrame(ep.MacAddr, ep.IpAddr, vlan), of.ActionOutput{Port: port})
		if err := sw.PacketOut(ctx, po); err != nil {
			a.log.WithError(err).Debug("agent: GARP packet-out failed")
			return
		}
	}
}

// uplinkForLocked picks the uplink member for controller-originated packets: FNV-1a
// of key modulo the members (all members count as active; link state is not tracked).
func (a *Agent) uplinkForLocked(key string) (uint32, bool) {
	if len(a.uplinks) == 0 {
		return 0, false
	}
	ports := make([]uint32, 0, len(a.uplinks))
	for p := range a.uplinks {
		ports = append(ports, p)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	h := fnv.New32a()
	h.Write([]byte(key))
	return ports[h.Sum32()%uint32(len(ports))], true
}
