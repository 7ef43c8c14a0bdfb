package vteprec

import "sync"

// Peers follow cluster membership, not agent liveness (docs/architecture.md,
// "Headless dataplane"): a tunnel to a peer VTEP, and with it the flows of
// the peer's endpoints, stays while any of these holds:
//   - the peer's netplugin.vtep service is registered (its agent runs);
//   - the store holds endpoints homed on the peer (state/eps, VtepIP);
//   - the peer's node record exists (oper/nodes/<host>).
// A peer whose netplugin is stopped, crashed or being upgraded keeps the
// last two, so its running containers stay reachable; it leaves only when
// the host GC (or an operator) deletes its endpoints and its node record.

// peerRefs counts the store's reasons to keep each peer VTEP besides its
// live service: endpoints homed there and node records naming it.
type peerRefs struct {
	mu    sync.Mutex
	eps   map[string]int    // VTEP IP → endpoints homed there
	nodes map[string]string // host label → its VTEP IP
}

// has reports whether the store holds an endpoint or a node record of ip.
func (p *peerRefs) has(ip string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eps[ip] > 0 {
		return true
	}
	for _, v := range p.nodes {
		if v == ip {
			return true
		}
	}
	return false
}

// ips lists every VTEP IP with a reason to stay.
func (p *peerRefs) ips() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.eps)+len(p.nodes))
	for ip := range p.eps {
		out = append(out, ip)
	}
	for _, ip := range p.nodes {
		out = append(out, ip)
	}
	return out
}

// endpoint moves one endpoint's count from the VTEP it had (prev, "" when
// new) to the one it has (curr, "" when deleted); it returns the VTEPs
// whose count went from or to zero.
func (p *peerRefs) endpoint(prev, curr string) []string {
	if prev == curr {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eps == nil {
		p.eps = map[string]int{}
	}
	var changed []string
	if prev != "" {
		p.eps[prev]--
		if p.eps[prev] <= 0 {
			delete(p.eps, prev)
			changed = append(changed, prev)
		}
	}
	if curr != "" {
		p.eps[curr]++
		if p.eps[curr] == 1 {
			changed = append(changed, curr)
		}
	}
	return changed
}

// node records host's VTEP IP ("" when its record is gone); it returns
// the VTEPs to reconcile.
func (p *peerRefs) node(host, vtep string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes == nil {
		p.nodes = map[string]string{}
	}
	old := p.nodes[host]
	if vtep == "" {
		delete(p.nodes, host)
	} else {
		p.nodes[host] = vtep
	}
	var out []string
	for _, ip := range []string{old, vtep} {
		if ip != "" {
			out = append(out, ip)
		}
	}
	return out
}
