package daemon

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/contiv/netplugin/netplugin/bgprec"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/netplugin/remotesweep"
	"github.com/contiv/netplugin/netplugin/svcrec"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// The datapath of one bridge (*agent.Agent) as each part of netplugin sees
// it: one narrow interface per reconciler or service (docs/style.md warns
// against fat interfaces); datapath joins them for the wiring and the fakes.

// networkDatapath is what the network reconciler drives (network/<id>).
type networkDatapath interface {
	AddNetwork(ctx context.Context, vlan uint16, vni uint32, gateway string, vrf string) error
	RemoveNetwork(ctx context.Context, vlan uint16, vni uint32, gateway string, vrf string) error
}

// endpointDatapath is what the attach path, the replay and the group and
// endpoint reconcilers drive.
type endpointDatapath interface {
	AddLocalEndpoint(ctx context.Context, ep agent.EndpointInfo) error
	UpdateLocalEndpoint(ctx context.Context, ep agent.EndpointInfo) error
	RemoveLocalEndpoint(ctx context.Context, portNo uint32) error
}

// tunnelDatapath is what the VTEP reconciler drives (vtep/<ip>).
type tunnelDatapath interface {
	AddVtepPort(ctx context.Context, portNo uint32, remoteIP net.IP) error
	RemoveVtepPort(ctx context.Context, portNo uint32, remoteIP net.IP) error
}

// serviceDatapath is what the service and provider reconcilers and the
// Kubernetes service front end drive (netplugin/svcrec).
type serviceDatapath = svcrec.Datapath

// bgpDatapath is what the BGP reconciler drives (netplugin/bgprec).
type bgpDatapath = bgprec.Datapath

// hostAccessDatapath is what the host access reconciler drives
// (hostaccess/<host>).
type hostAccessDatapath interface {
	SetHostAccess(ctx context.Context, h agent.HostAccess) error
}

// clusterDatapath is the agent's side of the ofnet masters and the
// remote endpoints they send (masters follower, remote sweep, restart).
type clusterDatapath interface {
	AddMaster(ctx context.Context, n ofrpc.OfnetNode) error
	RemoveMaster(ctx context.Context, n ofrpc.OfnetNode) error
	remotesweep.Agent
	FinishRestart(ctx context.Context) error
}

// bridgeDatapath is the bridge-wide settings: uplinks, ARP mode (global/
// global) and Kubernetes NetworkPolicy.
type bridgeDatapath interface {
	AddUplink(ctx context.Context, portNo uint32, linkName string) error
	SetArpMode(ctx context.Context, mode string) error
	SetNetworkPolicy(ctx context.Context, pods map[netip.Addr]agent.NetpolPod) error
}

// inspectDatapath is what the inspect server, the packet trace and the
// metrics read.
type inspectDatapath interface {
	DescribeCookie(cookie uint64) (category, object string)
	MACOf(ip net.IP) (net.HardwareAddr, bool)
	State() agent.State
	Stats() agent.Stats
}

// datapath is the whole of one bridge's agent, as the daemon wires it; the
// unit tests give it fakes.
type datapath interface {
	networkDatapath
	endpointDatapath
	tunnelDatapath
	serviceDatapath
	bgpDatapath
	hostAccessDatapath
	clusterDatapath
	bridgeDatapath
	inspectDatapath
}

// switchDriver is what the daemon asks of OVSDB (*ovsdriver.Driver); the
// unit tests give it fakes.
type switchDriver interface {
	EnsureBridge(ctx context.Context, name string, controllerPort int) error
	EnsureUplinks(ctx context.Context, bridge string, ifNames []string) ([]ovsdriver.UplinkMember, error)
	EnsureHostPort(ctx context.Context, pvtSubnet string) (ovsdriver.EndpointPort, error)
	BridgeExternalID(ctx context.Context, bridge, key string) (string, bool, error)
	SetBridgeExternalID(ctx context.Context, bridge, key, value string) error
	CreateEndpoint(ctx context.Context, spec ovsdriver.EndpointSpec) (ovsdriver.EndpointPort, error)
	DeleteEndpoint(ctx context.Context, bridge, portName string) error
	ExistingEndpoints(ctx context.Context, bridge string) ([]ovsdriver.EndpointPort, error)
	PinOFPorts(ctx context.Context, bridge string) (int, error)
	UpdatePolicing(ctx context.Context, portName, bandwidth string, burst int) error
	EnsureVTEP(ctx context.Context, bridge, remoteIP string, udpPort int) (uint32, error)
	DeleteVTEP(ctx context.Context, bridge, remoteIP string) error
	VTEPs(ctx context.Context, bridge string) (map[string]uint32, error)
	PortByOFPort(bridge string, ofport uint32) (ovsdriver.PortInfo, bool)
	ProbePathMTU(ctx context.Context, remoteIP string, timeout time.Duration) (ovsdriver.PathMTU, error)
	Close() error
}

var (
	_ datapath     = (*agent.Agent)(nil)
	_ switchDriver = (*ovsdriver.Driver)(nil)
)
