package ofrpc

import (
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

	AgentAddMaster   = ServiceAgent + ".AddMaster"
	AgentEndpointAdd = ServiceAgent + ".EndpointAdd"
	AgentEndpointDel = ServiceAgent + ".EndpointDel"
	AgentInjectGARPs = ServiceAgent + ".InjectGARPs"
	AgentDummyRpc    = ServiceAgent + ".DummyRpc"

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
}

// OfnetPolicyRule is one directional policy rule (docs/dataplane.md §4.3).
type OfnetPolicyRule struct {
	RuleId           string
	Priority         int
	SrcEndpointGroup int
	DstEndpointGroup int
	SrcIpAddr        string
	DstIpAddr        string
	IpProtocol       uint8
	SrcPort          uint16
	DstPort          uint16
	TcpFlags         string
	Action           string
}
