package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
)

// Remote endpoints follow the store (docs/architecture.md, "Headless
// dataplane"). A master forgets nothing it was told, but each netmaster
// term runs a fresh ofnet master that knows only what agents push to it
// after they register: a deletion queued in the old term's master for an
// agent, or sent while the agent was between masters, is lost, and the
// remote endpoint's flows stay on that agent for good (found by the soak
// test, docs/soak.md). The orphan sweep's listing of the store settles it:
// a remote endpoint whose address no endpoint record of its tenant holds,
// seen so on two sweeps in a row (so an endpoint deleted and re-created in
// between, or one whose record is being written, is never touched), is
// removed. A store that cannot be read removes nothing.

// remoteKey names a remote endpoint by what an endpoint record gives:
// IPv4 address and tenant (the agent's VRF).
func remoteKey(ip, tenant string) string { return ip + "|" + tenant }

// storeRemoteKeys are the keys of every endpoint record in all.
func storeRemoteKeys(all []state.Endpoint) map[string]bool {
	keys := make(map[string]bool, len(all))
	for _, ep := range all {
		if ep.IPAddress == "" {
			continue
		}
		_, tenant, _ := strings.Cut(ep.NetID, ".")
		keys[remoteKey(strings.Split(ep.IPAddress, "/")[0], tenant)] = true
	}
	return keys
}

// staleRemoteID identifies one version of one agent's remote endpoint.
func staleRemoteID(agent int, r ofrpc.OfnetEndpoint) string {
	return fmt.Sprint(agent) + "|" + r.EndpointID + "|" + r.Timestamp.String()
}

// dropStaleRemotes removes the remote endpoints no record of all backs
// that the previous call saw unbacked too; it returns how many it removed.
// Only sweepLoop calls it (it owns d.unbackedRemotes).
func (d *Daemon) dropStaleRemotes(ctx context.Context, all []state.Endpoint) (int, error) {
	backed := storeRemoteKeys(all)
	seen := map[string]bool{}
	var errs []error
	n := 0
	for i, a := range d.agents() {
		for _, r := range a.RemoteEndpoints() {
			ip := r.IpAddr.To4()
			if ip == nil || backed[remoteKey(ip.String(), r.Vrf)] {
				continue
			}
			id := staleRemoteID(i, r)
			if !d.unbackedRemotes[id] {
				seen[id] = true // first sighting: removed next time if still unbacked
				continue
			}
			if err := a.RemoveRemoteEndpoint(ctx, r); err != nil {
				errs = append(errs, err)
				seen[id] = true
				continue
			}
			d.log.WithField("endpoint", r.EndpointID).WithField("address", ip.String()).
				Warn("removed a remote endpoint the store no longer holds (its deletion never reached this agent)")
			n++
		}
	}
	d.unbackedRemotes = seen
	return n, errors.Join(errs...)
}
