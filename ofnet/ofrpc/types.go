package ofrpc

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Well-known TCP ports (docs/dataplane.md §6).
const (
	MasterPort     = 9001 // ofnet master, in every netmaster
	VxlanAgentPort = 9002 // agent of the VXLAN bridge
	VlanAgentPort  = 9003 // agent of the VLAN bridge
)

// Service names registered on the servers.
const (
	ServiceMaster = "OfnetMaster"
	ServiceAgent  = "OfnetAgent"
	ServicePolicy = "PolicyAgent"
)

// Method names ("Service.Method") of docs/dataplane.md §6.2.
const (
	MasterRegisterNode   = ServiceMaster + ".RegisterNode"
	MasterUnRegisterNode = ServiceMaster + ".UnRegisterNode"
	MasterEndpointAdd    = ServiceMaster + ".EndpointAdd"
	MasterEndpointDel    = ServiceMaster + ".EndpointDel"
	// MasterEndpointSync is this project's addition (OfnetEndpointSync).
	MasterEndpointSync = ServiceMaster + ".EndpointSync"

	AgentAddMaster   = ServiceAgent + ".AddMaster"
	AgentEndpointAdd = ServiceAgent + ".EndpointAdd"
	AgentEndpointDel = ServiceAgent + ".EndpointDel"
	// AgentEndpointAddBatch is this project's addition (OfnetEndpointBatch):
	// many EndpointAdd calls in one round trip.
	AgentEndpointAddBatch = ServiceAgent + ".EndpointAddBatch"
	AgentInjectGARPs      = ServiceAgent + ".InjectGARPs"
	AgentDummyRpc         = ServiceAgent + ".DummyRpc"

	PolicyAddRule = ServicePolicy + ".AddRule"
	PolicyDelRule = ServicePolicy + ".DelRule"
)

// Endpoint type bit flags (OfnetEndpoint.EndpointType).
const (
	EndpointTypeInternal    = 1 << 1 // a contiv endpoint
	EndpointTypeInternalBGP = 1 << 2
	EndpointTypeExternalBGP = 1 << 3
	EndpointTypeExternal    = 1 << 4
)

// OfnetNode names a master or an agent: the address it is reached at and
// its RPC port. Agents identify themselves with their VTEP IP.
type OfnetNode struct {
	HostAddr string
	HostPort uint16
}

// Addr is the node's "addr:port", the key of Pool clients and of the
// master's agent table.
func (n OfnetNode) Addr() string {
	return net.JoinHostPort(n.HostAddr, strconv.Itoa(int(n.HostPort)))
}

// OfnetEndpoint is an endpoint as the master distributes it. EndpointID is
// "<ip>:<vrf>"; OriginatorIp is the owning host's VTEP IP; the newer
// Timestamp wins (RFC 3339 on the wire). net.IP fields encode as strings
// ("10.1.0.2"); a nil IP encodes as "" and both "" and null decode to nil.
type OfnetEndpoint struct {
	EndpointID        string
	EndpointType      int
	EndpointGroup     int
	IpAddr            net.IP
	IpMask            net.IP
	Ipv6Addr          net.IP
	Ipv6Mask          net.IP
	Vrf               string
	MacAddrStr        string
	Vlan              uint16
	Vni               uint32
	EndpointGroupVlan uint16
	OriginatorIp      net.IP
	OriginatorMac     string
	Timestamp         time.Time
	// OriginatorPort is the RPC port of the originating agent (this
	// project's addition, omitted when 0 so such an endpoint encodes as
	// upstream's): with OriginatorIp it names the agent whose
	// OfnetEndpointSync covers the endpoint (a host runs two agents).
	OriginatorPort uint16 `json:",omitempty"`
}

// OfnetEndpointSync is an agent's complete set of local endpoints
// (OfnetMaster.EndpointSync, this project's addition), sent after the
// EndpointAdd calls of each registration: the master deletes every
// endpoint it holds from that agent (OriginatorIp and OriginatorPort of
// Node) that is not listed and not newer than Timestamp, so a deletion
// the master missed (the agent had dropped it from its masters, retried
// in vain, or restarted without the endpoint) cannot outlive the agent's
// next registration (docs/soak.md, issue 23).
type OfnetEndpointSync struct {
	Node        OfnetNode
	EndpointIDs []string
	Timestamp   time.Time
}

// OfnetEndpointBatch is the argument of OfnetAgent.EndpointAddBatch (this
// project's addition): endpoints to add in order, each exactly as one
// OfnetAgent.EndpointAdd would (docs/dataplane.md §6.2). A sender keeps
// the encoded batch well under the server's message bound
// (Limits.MaxMessageBytes).
type OfnetEndpointBatch struct {
	Endpoints []OfnetEndpoint
}

// OfnetBatchReply is the reply of OfnetAgent.EndpointAddBatch: the
// endpoints the agent could not add, with its reason (none: all were
// added). An error of the call itself means none was.
type OfnetBatchReply struct {
	Failed []OfnetBatchFailure
}

// OfnetBatchFailure is one endpoint of a batch the agent refused.
type OfnetBatchFailure struct {
	EndpointID string
	Error      string
}

// OfnetPolicyRule is one directional policy rule (docs/dataplane.md §4.3).
//
// SrcEndpointGroupName and DstEndpointGroupName ("<tenant>:<group>") are
// this project's additions: they say the rule is meant to match that
// group, so an id of 0 there (which matches any group) means the group
// was not resolved, and CheckGroups refuses the rule instead of widening
// it (docs/security.md, "Fail closed"). They are omitted from the JSON
// when empty, so a rule without them encodes as upstream's.
type OfnetPolicyRule struct {
	RuleId               string
	Priority             int
	SrcEndpointGroup     int
	DstEndpointGroup     int
	SrcIpAddr            string
	DstIpAddr            string
	IpProtocol           uint8
	SrcPort              uint16
	DstPort              uint16
	TcpFlags             string
	Action               string
	SrcEndpointGroupName string `json:",omitempty"`
	DstEndpointGroupName string `json:",omitempty"`
}

// ErrGroupUnresolved is returned by CheckGroups for a rule that names an
// endpoint group whose id it does not carry.
var ErrGroupUnresolved = errors.New("ofrpc: endpoint group of the rule not resolved")

// CheckGroups refuses a rule that names a group (SrcEndpointGroupName,
// DstEndpointGroupName) without carrying its id: installed, such a rule
// would match every group on that side. Rules naming no group pass.
func (r OfnetPolicyRule) CheckGroups() error {
	var errs []error
	if r.SrcEndpointGroupName != "" && r.SrcEndpointGroup <= 0 {
		errs = append(errs, fmt.Errorf("%s rule %q: source group %q has id %d: %w",
			r.Action, r.RuleId, r.SrcEndpointGroupName, r.SrcEndpointGroup, ErrGroupUnresolved))
	}
	if r.DstEndpointGroupName != "" && r.DstEndpointGroup <= 0 {
		errs = append(errs, fmt.Errorf("%s rule %q: destination group %q has id %d: %w",
			r.Action, r.RuleId, r.DstEndpointGroupName, r.DstEndpointGroup, ErrGroupUnresolved))
	}
	return errors.Join(errs...)
}
