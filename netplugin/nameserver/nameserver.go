// Package nameserver is netplugin's embedded DNS server (docs/dns.md):
// per-tenant tables of service VIPs, container names and
// endpoint-group members, fed from the cluster state, and a Lookup that
// answers a raw DNS query (as the datapath intercepted it from a container)
// for one tenant. Names it does not know get no answer: the datapath then
// lets the query continue to the container's own name server.
package nameserver

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// Answer limits (docs/dns.md).
const (
	MaxRecords    = 10
	TTL           = 120
	MaxAnswerSize = 1024
)

// record is one address set: an IPv4 and/or an IPv6 address.
type record struct {
	v4, v6 net.IP
}

func (r record) String() string {
	s := "ipv4:"
	if r.v4 != nil {
		s += r.v4.String()
	}
	s += " ipv6:"
	if r.v6 != nil {
		s += r.v6.String()
	}
	return s
}

// Endpoint is what the name server needs of an endpoint.
type Endpoint struct {
	ID     string // endpoint state id, unique
	Tenant string
	Name   string // container name (EPCommonName without a leading "/")
	Group  string // endpoint group name ("" if none)
	IPv4   net.IP
	IPv6   net.IP
}

type tenant struct {
	services  map[string]record          // service name → VIP
	endpoints map[string]Endpoint        // endpoint id → endpoint
	names     map[string]map[string]bool // container name → endpoint ids
	groups    map[string]map[string]bool // group name → endpoint ids
}

func newTenant() *tenant {
	return &tenant{services: map[string]record{}, endpoints: map[string]Endpoint{},
		names: map[string]map[string]bool{}, groups: map[string]map[string]bool{}}
}

// Server holds the DNS tables of every tenant. Its methods are safe for
// concurrent use.
type Server struct {
	mu      sync.RWMutex
	tenants map[string]*tenant
	byID    map[string]string // endpoint id → tenant

	statsMu sync.Mutex                   // guards stats only; never held with mu
	stats   map[string]map[string]uint64 // tenant → counter → value
}

// New returns an empty name server.
func New() *Server {
	return &Server{tenants: map[string]*tenant{}, byID: map[string]string{}, stats: map[string]map[string]uint64{}}
}

func (s *Server) tenantLocked(name string) *tenant {
	t, ok := s.tenants[name]
	if !ok {
		t = newTenant()
		s.tenants[name] = t
	}
	return t
}

func normName(n string) string { return strings.ToLower(strings.TrimSuffix(n, ".")) }

// SetService records a service's VIP in its tenant; an empty vip removes it.
func (s *Server) SetService(tenantName, service, vip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenantLocked(tenantName)
	n := normName(service)
	ip := net.ParseIP(vip)
	if ip == nil {
		delete(t.services, n)
		return
	}
	if v4 := ip.To4(); v4 != nil {
		t.services[n] = record{v4: v4}
	} else {
		t.services[n] = record{v6: ip}
	}
}

// SetEndpoint adds or replaces an endpoint's names.
func (s *Server) SetEndpoint(ep Endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(ep.ID)
	if ep.IPv4 != nil {
		ep.IPv4 = ep.IPv4.To4()
	}
	t := s.tenantLocked(ep.Tenant)
	ep.Name = normName(strings.TrimPrefix(ep.Name, "/"))
	ep.Group = normName(ep.Group)
	t.endpoints[ep.ID] = ep
	s.byID[ep.ID] = ep.Tenant
	add := func(m map[string]map[string]bool, k string) {
		if k == "" {
			return
		}
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][ep.ID] = true
	}
	add(t.names, ep.Name)
	add(t.groups, ep.Group)
}

// RemoveEndpoint forgets an endpoint; unknown ids are a no-op.
func (s *Server) RemoveEndpoint(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(id)
}

func (s *Server) removeLocked(id string) {
	tn, ok := s.byID[id]
	if !ok {
		return
	}
	delete(s.byID, id)
	t := s.tenants[tn]
	ep := t.endpoints[id]
	delete(t.endpoints, id)
	for _, m := range []struct {
		idx map[string]map[string]bool
		k   string
	}{{t.names, ep.Name}, {t.groups, ep.Group}} {
		if set := m.idx[m.k]; set != nil {
			delete(set, id)
			if len(set) == 0 {
				delete(m.idx, m.k)
			}
		}
	}
}

// lookupLocked returns the records of a name in a tenant for one query type,
// and whether the name is known there at all. A: service, then group
// members, then container name; AAAA: group, then container name
// (docs/dns.md).
func (t *tenant) lookup(name string, qtype uint16) ([]record, bool) {
	members := func(ids map[string]bool) []record {
		var out []record
		keys := make([]string, 0, len(ids))
		for id := range ids {
			keys = append(keys, id)
		}
		sort.Strings(keys)
		for _, id := range keys {
			ep := t.endpoints[id]
			out = append(out, record{v4: ep.IPv4, v6: ep.IPv6})
		}
		return out
	}
	svc, isSvc := t.services[name]
	grp, isGrp := t.groups[name]
	cn, isName := t.names[name]
	known := isSvc || isGrp || isName
	var cands [][]record
	switch qtype {
	case dns.TypeA:
		if isSvc {
			cands = append(cands, []record{svc})
		}
		cands = append(cands, members(grp), members(cn))
	case dns.TypeAAAA:
		if isSvc {
			cands = append(cands, []record{svc})
		}
		cands = append(cands, members(grp), members(cn))
	}
	for _, c := range cands {
		var out []record
		for _, r := range c {
			if (qtype == dns.TypeA && r.v4 != nil) || (qtype == dns.TypeAAAA && r.v6 != nil) {
				out = append(out, r)
			}
		}
		if len(out) > 0 {
			if len(out) > MaxRecords {
				out = out[:MaxRecords]
			}
			return out, true
		}
	}
	return nil, known
}

func (s *Server) count(tenantName, counter string) {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	m := s.stats[tenantName]
	if m == nil {
		if len(s.stats) >= maxStatTenants {
			return // queries naming arbitrary tenants cannot grow the map forever
		}
		m = map[string]uint64{}
		s.stats[tenantName] = m
	}
	m[counter]++
}

// maxStatTenants bounds the per-tenant counters.
const maxStatTenants = 4096

// Lookup answers a raw DNS query from a container of tenantName. It returns
// the packed answer and true when the name is one of the tenant's (an
// authoritative answer, possibly with no records of the asked type), and
// false when the name is unknown, the query is malformed or not a plain
// one-question query, or the answer would exceed MaxAnswerSize: the query
// then continues on its way unanswered. It never panics on any input.
func (s *Server) Lookup(query []byte, tenantName string) ([]byte, bool) {
	var q dns.Msg
	if err := q.Unpack(query); err != nil || q.Response || q.Opcode != dns.OpcodeQuery || len(q.Question) != 1 {
		s.count(tenantName, "invalidQuery")
		return nil, false
	}
	qn := q.Question[0]
	if qn.Qclass != dns.ClassINET && qn.Qclass != dns.ClassANY {
		s.count(tenantName, "noMatch")
		return nil, false
	}
	name := normName(qn.Name)
	s.mu.RLock()
	t, ok := s.tenants[tenantName]
	var recs []record
	var known bool
	var qtype uint16
	if ok {
		switch qn.Qtype {
		case dns.TypeA, dns.TypeAAAA:
			qtype = qn.Qtype
			recs, known = t.lookup(name, qtype)
		case dns.TypeANY:
			qtype = dns.TypeA
			if recs, known = t.lookup(name, dns.TypeA); len(recs) == 0 {
				qtype = dns.TypeAAAA
				recs, known = t.lookup(name, dns.TypeAAAA)
			}
		default:
			_, known = t.lookup(name, dns.TypeA)
		}
	}
	s.mu.RUnlock()
	if !known {
		s.count(tenantName, "noMatch")
		return nil, false
	}
	var r dns.Msg
	r.SetReply(&q)
	r.Authoritative, r.RecursionAvailable = true, true
	for _, rec := range recs {
		hdr := dns.RR_Header{Name: qn.Name, Class: dns.ClassINET, Ttl: TTL}
		if qtype == dns.TypeA {
			hdr.Rrtype = dns.TypeA
			r.Answer = append(r.Answer, &dns.A{Hdr: hdr, A: rec.v4})
		} else {
			hdr.Rrtype = dns.TypeAAAA
			r.Answer = append(r.Answer, &dns.AAAA{Hdr: hdr, AAAA: rec.v6})
		}
	}
	b, err := r.Pack()
	if err != nil || len(b) > MaxAnswerSize {
		s.count(tenantName, "answerTooLarge")
		return nil, false
	}
	s.count(tenantName, "answered")
	return b, true
}

// Inspect returns the tables and counters in the shape of
// /inspect/nameserver (docs/dns.md).
func (s *Server) Inspect() map[string]any {
	stats := map[string]map[string]uint64{}
	s.statsMu.Lock()
	for tn, m := range s.stats {
		st := map[string]uint64{}
		for k, v := range m {
			st[k] = v
		}
		stats[tn] = st
	}
	s.statsMu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	recs := map[string]any{}
	for tn, t := range s.tenants {
		svcs, names, groups, eps := map[string]string{}, map[string][]string{}, map[string][]string{}, map[string]string{}
		for n, r := range t.services {
			svcs[n] = r.String()
		}
		for id, ep := range t.endpoints {
			eps[id] = record{ep.IPv4, ep.IPv6}.String()
		}
		for n, ids := range t.names {
			rs, _ := t.lookupAll(ids)
			names[n] = rs
		}
		for n, ids := range t.groups {
			rs, _ := t.lookupAll(ids)
			groups[n] = rs
		}
		recs[tn] = map[string]any{"services": svcs, "commonNames": names, "endpointGroups": groups, "endpoints": eps}
	}
	recs["k8sDefaultTenant"] = map[string]any{"k8sServices": map[string]string{}}
	return map[string]any{"serviceQueue": 0, "endpointQueue": 0, "dnsRecords": recs, "stats": stats}
}

func (t *tenant) lookupAll(ids map[string]bool) ([]string, error) {
	var out []string
	for id := range ids {
		ep, ok := t.endpoints[id]
		if !ok {
			return nil, fmt.Errorf("endpoint %s missing", id)
		}
		out = append(out, record{ep.IPv4, ep.IPv6}.String())
	}
	sort.Strings(out)
	return out, nil
}
