package netpol

import (
	"net/netip"
	"sync"
)

// Peers are the pods contiv attached anywhere in the cluster, with their
// addresses, as the endpoint records tell them (state.Endpoint's
// PodNamespace and PodName, written by netmaster at createEndpoint): a pod
// attached on another host is admitted as a peer as soon as its record
// exists, before its status.podIP reaches the API server (docs/k8s.md,
// "NetworkPolicy"). The daemon feeds it from the endpoint records it
// follows; it is safe for concurrent use and may be fed before any
// Controller follows it.
type Peers struct {
	mu     sync.Mutex
	seq    uint64
	byEP   map[string]peer // endpoint id → pod
	notify []func()
}

type peer struct {
	key string // "namespace/name"
	ip  netip.Addr
	seq uint64 // order of Put: the newest record of a pod wins
}

// NewPeers returns an empty set.
func NewPeers() *Peers {
	return &Peers{byEP: map[string]peer{}}
}

// Put records that endpoint epID is pod namespace/name with address ip
// ("ip" or "ip/len"). A record without a pod or an IPv4 address is
// removed instead (NetworkPolicy here is IPv4 only).
func (p *Peers) Put(epID, namespace, name, ip string) {
	a, ok := parseAddr(ip)
	if namespace == "" || name == "" || !ok || !a.Is4() {
		p.Delete(epID)
		return
	}
	key := namespace + "/" + name
	p.mu.Lock()
	if cur, had := p.byEP[epID]; had && cur.key == key && cur.ip == a {
		p.mu.Unlock()
		return
	}
	p.seq++
	p.byEP[epID] = peer{key: key, ip: a, seq: p.seq}
	fs := p.notify
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Delete forgets endpoint epID.
func (p *Peers) Delete(epID string) {
	p.mu.Lock()
	_, had := p.byEP[epID]
	delete(p.byEP, epID)
	fs := p.notify
	p.mu.Unlock()
	if had {
		for _, f := range fs {
			f()
		}
	}
}

// Known returns "namespace/name" → address of every recorded pod; of two
// records naming one pod (a pod recreated elsewhere before its old record
// went), the newest wins.
func (p *Peers) Known() map[string]netip.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]netip.Addr, len(p.byEP))
	seqs := make(map[string]uint64, len(p.byEP))
	for _, e := range p.byEP {
		if s, had := seqs[e.key]; had && s > e.seq {
			continue
		}
		out[e.key], seqs[e.key] = e.ip, e.seq
	}
	return out
}

// subscribe has f called after every change.
func (p *Peers) subscribe(f func()) {
	p.mu.Lock()
	p.notify = append(p.notify, f)
	p.mu.Unlock()
}

func parseAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a, true
	}
	if pf, err := netip.ParsePrefix(s); err == nil {
		return pf.Addr(), true
	}
	return netip.Addr{}, false
}
