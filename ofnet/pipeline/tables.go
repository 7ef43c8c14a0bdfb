package pipeline

import (
	"fmt"
	"sort"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	of "github.com/contiv/netplugin/ofnet/openflow13"
)

// TableID is an OpenFlow table number of the pipelines (docs/dataplane.md §3.0.1).
type TableID uint8

// Attention: these ids are part of the dataplane's interface (inspect output, the
// upstream tests, operators' dump-flows habits). Do not renumber.
const (
	ClassifierTable   TableID = 0 // input: drops, ARP/DNS redirects
	VlanTable         TableID = 1 // port or tunnel → vlan, VRF, source EPG
	HostDNATTable     TableID = 2 // host-port ingress NAT (vxlan routing)
	SrvProxyDNATTable TableID = 3 // service VIP → provider
	DstGroupTable     TableID = 4 // destination IP → destination EPG
	PolicyTable       TableID = 5 // policy rules
	SrvProxySNATTable TableID = 6 // provider → VIP on the return path
	IPTable           TableID = 7 // routing lookup
	HostSNATTable     TableID = 8 // egress through the host NAT port
	MacDestTable      TableID = 9 // bridging lookup

	// Kubernetes NetworkPolicy (docs/k8s.md, "NetworkPolicy"): entered from the
	// bridging table through the connection tracker, left by resubmit to it.
	NetpolStateTable   TableID = 10 // connection state: established passes, new goes on
	NetpolEgressTable  TableID = 11 // new connections from isolated local pods
	NetpolIngressTable TableID = 12 // new connections to isolated local pods
	NetpolCommitTable  TableID = 13 // commit allowed connections, back to bridging

	// Service session affinity (docs/services.md, "Session affinity"): a new
	// connection to a VIP:port with ClientIP affinity looks its client up in the
	// affinity table (by resubmit from SrvProxyDNAT), whose flows the switch learns
	// and which loads the bound provider into registers, then goes on to the
	// affinity DNAT table: the bound provider, or the select group.
	SrvAffinityTable     TableID = 14 // learned client → provider bindings
	SrvAffinityDNATTable TableID = 15 // binding → ct nat to the provider; none → select group
)

var tableNames = map[TableID]string{
	ClassifierTable: "Classifier", VlanTable: "Vlan", HostDNATTable: "HostDNAT",
	SrvProxyDNATTable: "SrvProxyDNAT", DstGroupTable: "DstGroup", PolicyTable: "Policy",
	SrvProxySNATTable: "SrvProxySNAT", IPTable: "IP", HostSNATTable: "HostSNAT",
	MacDestTable: "MacDest", NetpolStateTable: "NetpolState", NetpolEgressTable: "NetpolEgress",
	NetpolIngressTable: "NetpolIngress", NetpolCommitTable: "NetpolCommit",
	SrvAffinityTable: "SrvAffinity", SrvAffinityDNATTable: "SrvAffinityDNAT",
}

// String returns the table's name, e.g. "Policy".
func (id TableID) String() string {
	if n, ok := tableNames[id]; ok {
		return n
	}
	return fmt.Sprintf("Table%d", uint8(id))
}

// missKind says what a table does with packets no other flow matches.
type missKind uint8

const (
	missDrop missKind = iota + 1
	missGoto
	missNormal
)

// Miss is a table's miss action (its priority-1 flow).
type Miss struct {
	kind missKind
	next TableID
}

// MissDrop drops unmatched packets.
func MissDrop() Miss { return Miss{kind: missDrop} }

// MissGoto sends unmatched packets to table next.
func MissGoto(next TableID) Miss { return Miss{kind: missGoto, next: next} }

// MissNormal hands unmatched packets to OVS's NORMAL (learning switch) processing.
func MissNormal() Miss { return Miss{kind: missNormal} }

func (m Miss) String() string {
	switch m.kind {
	case missDrop:
		return "drop"
	case missGoto:
		return "goto " + m.next.String()
	case missNormal:
		return "NORMAL"
	}
	return "none"
}

// MissPriority is the priority of table-miss flows (§3.0.2).
const MissPriority = 1

// Table is one table of a pipeline: its id, name and miss action.
type Table struct {
	ID   TableID
	Name string
	Miss Miss
}

// Misses gives the miss action of each table a pipeline uses; tables not listed are
// unused by that pipeline.
type Misses map[TableID]Miss

// Registry holds the tables of one pipeline value. It is built per agent, so tests
// need no global reset.
type Registry struct {
	tables map[TableID]*Table
}

// NewRegistry declares the tables of one pipeline with their miss actions.
func NewRegistry(misses Misses) *Registry {
	r := &Registry{tables: make(map[TableID]*Table, len(misses))}
	for id, m := range misses {
		r.tables[id] = &Table{ID: id, Name: id.String(), Miss: m}
	}
	return r
}

// Get returns the table with the given id. Asking for a table the pipeline did not
// declare returns a table with no miss action (its flows still build).
func (r *Registry) Get(id TableID) *Table {
	if t, ok := r.tables[id]; ok {
		return t
	}
	return &Table{ID: id, Name: id.String()}
}

// All returns the declared tables in id order.
func (r *Registry) All() []*Table {
	out := make([]*Table, 0, len(r.tables))
	for _, t := range r.tables {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// MissFlows returns the priority-1 miss flow of every declared table, with cookie.
func (r *Registry) MissFlows(cookie uint64) ([]ofctrl.Flow, error) {
	var out []ofctrl.Flow
	for _, t := range r.All() {
		b := t.BuildFlow(MissPriority).Cookie(cookie).Action()
		switch t.Miss.kind {
		case missDrop:
			b = b.Drop()
		case missGoto:
			b = b.GotoTable(t.Miss.next)
		case missNormal:
			b = b.Output(of.OFPPNormal)
		default:
			continue
		}
		f, err := b.Done()
		if err != nil {
			return nil, fmt.Errorf("miss flow of table %s: %w", t.Name, err)
		}
		out = append(out, f)
	}
	return out, nil
}
