package state

import (
	"encoding/json"

	"github.com/bits-and-blooms/bitset"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// Bitsets serialise as the original's JSON string: URL-safe base64 (with
// padding) of an 8-byte big-endian bit length followed by big-endian 64-bit
// words (docs/daemons.md §2.7). That is bitset's default encoding; a test
// pins it.

// GlobConfig is the cluster-wide forwarding config, "master/config/global".
// Its JSON id is always empty; netplugin watches "master/config/".
type GlobConfig struct {
	ID        string `json:"id"`
	NwInfra   string `json:"nw-infra-type"`
	FwdMode   string `json:"fwd-mode"`
	ArpMode   string `json:"arp-mode"`
	PvtSubnet string `json:"pvt-subnet"`
}

// StateID is fixed: there is one GlobConfig.
func (GlobConfig) StateID() string { return "global" }

// GlobalCfg (gstate.Cfg) is the tag-range config, "state/global/global".
type GlobalCfg struct {
	ID   string         `json:"id"`
	Auto GlobalAutoTags `json:"auto"`
}

// GlobalAutoTags are the configured tag range lists.
type GlobalAutoTags struct {
	VLANs  string `json:"VLANs"`
	VXLANs string `json:"VXLANs"`
}

// StateID is fixed: there is one GlobalCfg.
func (GlobalCfg) StateID() string { return "global" }

// GlobalOper (gstate.Oper), "oper/global/global".
type GlobalOper struct {
	ID              string `json:"id"`
	DefaultNetwork  string `json:"defaultNetwork"`
	FreeVXLANsStart uint   `json:"freeVXLANsStart"`
}

// StateID is fixed: there is one GlobalOper.
func (GlobalOper) StateID() string { return "global" }

// VlanResource is the configured VLAN pool, "state/auto-vlan/global".
type VlanResource struct {
	Common
	VLANs bitset.BitSet `json:"vlans"`
}

// VlanResourceOper is the free VLAN pool, "oper/auto-vlan/global".
type VlanResourceOper struct {
	Common
	FreeVLANs bitset.BitSet `json:"freeVLANs"`
}

// VxlanResource is the configured VXLAN pool, "state/auto-vxlan/global".
// Bit i of VXLANs is VNI i+FreeVXLANsStart.
type VxlanResource struct {
	Common
	VXLANs          bitset.BitSet `json:"vxlans"`
	LocalVLANs      bitset.BitSet `json:"LocalVLANs"`
	FreeVXLANsStart uint          `json:"FreeVXLANsStart"`
}

// VxlanResourceOper is the free VXLAN pool, "oper/auto-vxlan/global".
type VxlanResourceOper struct {
	Common
	FreeVXLANs     bitset.BitSet `json:"freeVXLANs"`
	FreeLocalVLANs bitset.BitSet `json:"freeLocalVLANs"`
}

// Network (CfgNetworkState), "state/nets/<net>.<tenant>".
type Network struct {
	Common
	Tenant        string          `json:"tenant"`
	NetworkName   string          `json:"networkName"`
	NwType        string          `json:"nwType"`
	PktTagType    string          `json:"pktTagType"`
	PktTag        int             `json:"pktTag"`
	ExtPktTag     int             `json:"extPktTag"`
	SubnetIP      string          `json:"subnetIP"`
	SubnetLen     uint            `json:"subnetLen"`
	Gateway       string          `json:"gateway"`
	IPAddrRange   string          `json:"ipAddrRange"`
	EpAddrCount   int             `json:"epAddrCount"`
	EpCount       int             `json:"epCount"`
	IPAllocMap    bitset.BitSet   `json:"ipAllocMap"`
	IPv6Subnet    string          `json:"ipv6SubnetIP"`
	IPv6SubnetLen uint            `json:"ipv6SubnetLen"`
	IPv6Gateway   string          `json:"ipv6Gateway"`
	IPv6AllocMap  map[string]bool `json:"ipv6AllocMap"`
	IPv6LastHost  string          `json:"ipv6LastHost"`
	NetworkTag    string          `json:"networkTag"`
}

// Endpoint (CfgEndpointState), "state/eps/<epID>".
type Endpoint struct {
	Common
	NetID            string            `json:"netID"`
	EndpointID       string            `json:"endpointID"`
	ServiceName      string            `json:"serviceName"`
	EndpointGroupID  int               `json:"endpointGroupId"`
	EndpointGroupKey string            `json:"endpointGroupKey"`
	IPAddress        string            `json:"ipAddress"`
	IPv6Address      string            `json:"ipv6Address"`
	MacAddress       string            `json:"macAddress"`
	HomingHost       string            `json:"homingHost"`
	IntfName         string            `json:"intfName"`
	VtepIP           string            `json:"vtepIP"`
	Labels           map[string]string `json:"labels"`
	ContainerID      string            `json:"containerId"`
	EPCommonName     string            `json:"epCommonName"`
	// PodNamespace and PodName name the Kubernetes pod of an endpoint the
	// CNI front end attached; every host's NetworkPolicy admits the pod as
	// a peer under IPAddress before its status reaches the API server
	// (docs/k8s.md, "NetworkPolicy"). Absent in older records.
	PodNamespace string `json:"podNamespace,omitempty"`
	PodName      string `json:"podName,omitempty"`
}

// EndpointGroup (EndpointGroupState), "state/endpointGroups/<group>:<tenant>".
type EndpointGroup struct {
	Common
	GroupName       string        `json:"groupName"`
	TenantName      string        `json:"tenantName"`
	NetworkName     string        `json:"networkName"`
	EndpointGroupID int           `json:"endpointGroupId"`
	PktTagType      string        `json:"pktTagType"`
	PktTag          int           `json:"pktTag"`
	ExtPktTag       int           `json:"extPktTag"`
	EpCount         int           `json:"epCount"`
	DSCP            int           `json:"DSCP"`
	Bandwidth       string        `json:"Bandwidth"`
	Burst           int           `json:"Burst"`
	IPPool          string        `json:"IPPool"`
	EPGIPAllocMap   bitset.BitSet `json:"epgIpAllocMap"`
	GroupTag        string        `json:"groupTag"`
}

// OfnetPolicyRule is one directional policy rule as ofnet takes it: the
// same type as the RPC's (docs/dataplane.md §4.3), so the stored JSON and
// the wire JSON are one encoding (Go field names).
type OfnetPolicyRule = ofrpc.OfnetPolicyRule

// EpgPolicy, "state/policy/<tenant>:<group>:<tenant>:<policy>".
type EpgPolicy struct {
	Common
	EpgPolicyKey    string
	EndpointGroupID int
	RuleMaps        map[string]*RuleMap
}

// RuleMap is one contiv rule and the ofnet rules it became.
type RuleMap struct {
	Rule       json.RawMessage // the REST model rule object
	OfnetRules map[string]*OfnetPolicyRule
}

// PolicyRule (CfgPolicyRule), "state/policyRule/<ruleID>". Its JSON id is
// empty and the rule fields are flattened beside it.
type PolicyRule struct {
	Common
	OfnetPolicyRule
}

// StateID is the rule ID (the JSON id field stays empty, as the original).
func (r PolicyRule) StateID() string { return r.RuleId }

// Bgp (CfgBgpState), "state/bgp/<hostname>".
type Bgp struct {
	Common
	Hostname   string `json:"hostname"`
	RouterIP   string `json:"router-ip"`
	As         string `json:"as"`
	NeighborAs string `json:"neighbor-as"`
	Neighbor   string `json:"neighbor"`
}

// ServiceLB (CfgServiceLBState), "state/serviceLB/<svc>:<tenant>".
type ServiceLB struct {
	Common
	ServiceName string               `json:"servicename"`
	Tenant      string               `json:"tenantname"`
	Network     string               `json:"subnet"` // a network name, despite the key
	Ports       []string             `json:"ports"`
	Selectors   map[string]string    `json:"selectors"`
	IPAddress   string               `json:"ipaddress"`
	Providers   map[string]*Provider `json:"providers"`
}

// Provider is one backend of a service LB (Go field names on the wire).
type Provider struct {
	IPAddress   string
	ContainerID string
	Labels      map[string]string
	Tenant      string
	Network     string
	Services    []string
	Container   string
	EpIDKey     string
}

// SvcProvider, "state/provider/<svc>:<tenant>".
type SvcProvider struct {
	Common
	ServiceName string
	Providers   []string
}

// Docknet maps a contiv network/group to a docker network,
// "oper/docknet/<tenant>.<net>.<group>".
type Docknet struct {
	Common
	TenantName  string `json:"tenantName"`
	NetworkName string `json:"networkName"`
	ServiceName string `json:"serviceName"`
	DocknetUUID string `json:"docknetUUID"`
}

// EndpointOper (OperEndpointState), "oper/eps/<epID>", written by the
// netplugin OVS driver.
type EndpointOper struct {
	Common
	NetID       string `json:"netID"`
	EndpointID  string `json:"endpointID"`
	ServiceName string `json:"serviceName"`
	ContUUID    string `json:"contUUID"`
	IPAddress   string `json:"ipAddress"`
	IPv6Address string `json:"ipv6Address"`
	MacAddress  string `json:"macAddress"`
	HomingHost  string `json:"homingHost"`
	IntfName    string `json:"intfName"`
	PortName    string `json:"portName"`
	VtepIP      string `json:"vtepIP"`
}

// MatchesConfig reports whether the oper state describes the same endpoint
// as the config state (the fields the original compares).
func (o EndpointOper) MatchesConfig(c Endpoint) bool {
	return o.NetID == c.NetID && o.EndpointID == c.EndpointID &&
		o.IPAddress == c.IPAddress && o.IPv6Address == c.IPv6Address &&
		o.MacAddress == c.MacAddress && o.HomingHost == c.HomingHost &&
		o.IntfName == c.IntfName && o.VtepIP == c.VtepIP
}

// OvsDriverOper is the OVS driver's per-host record,
// "oper/ovs-driver/<hostLabel>".
type OvsDriverOper struct {
	Common
	CurrPortNum int                     `json:"currPortNum"`
	LocalEpInfo map[string]*LocalEpInfo `json:"LocalEpInfo"`
}

// LocalEpInfo is one local endpoint's OVS port (Go field names on the wire).
type LocalEpInfo struct {
	Ovsportname string
	EpgKey      string
	BridgeType  string
}

// Node is a host's membership of the cluster, "oper/nodes/<host label>"
// (not in the original): netplugin writes it at every start, the host GC
// (or an operator decommissioning the host) deletes it. Peers keep their
// tunnel to a host while its record exists, whether or not its netplugin
// runs (docs/architecture.md, "Headless dataplane").
type Node struct {
	Common
	Hostname string `json:"hostname"`
	VtepIP   string `json:"vtepIP"`
	CtrlIP   string `json:"ctrlIP"`
}
