package daemon

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/utils/faulttest"
)

// faults fails the first N calls of named methods and counts every call.
type faults = faulttest.Faults

func newFaults() *faults { return faulttest.New() }

// fakeDatapath is an agent that remembers what it holds.
type fakeDatapath struct {
	*faults
	mu        sync.Mutex
	networks  map[uint16]uint32 // vlan → VNI
	locals    map[uint32]agent.EndpointInfo
	vteps     map[string]uint32
	services  map[string]agent.ServiceSpec
	providers map[string][]string
	arpMode   string
}

func newFakeDatapath() *fakeDatapath {
	return &fakeDatapath{faults: newFaults(), networks: map[uint16]uint32{}, locals: map[uint32]agent.EndpointInfo{},
		vteps: map[string]uint32{}, services: map[string]agent.ServiceSpec{}, providers: map[string][]string{}}
}

func (a *fakeDatapath) hasNetwork(vlan uint16) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.networks[vlan]
	return ok
}

func (a *fakeDatapath) AddNetwork(_ context.Context, vlan uint16, vni uint32, _ string, _ string) error {
	if err := a.Call("AddNetwork"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.networks[vlan] = vni
	return nil
}

func (a *fakeDatapath) RemoveNetwork(_ context.Context, vlan uint16, _ uint32, _ string, _ string) error {
	if err := a.Call("RemoveNetwork"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.networks, vlan)
	return nil
}

func (a *fakeDatapath) AddLocalEndpoint(_ context.Context, ep agent.EndpointInfo) error {
	if err := a.Call("AddLocalEndpoint"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.locals[ep.PortNo] = ep
	return nil
}

func (a *fakeDatapath) UpdateLocalEndpoint(_ context.Context, ep agent.EndpointInfo) error {
	if err := a.Call("UpdateLocalEndpoint"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.locals[ep.PortNo] = ep
	return nil
}

func (a *fakeDatapath) RemoveLocalEndpoint(_ context.Context, portNo uint32) error {
	if err := a.Call("RemoveLocalEndpoint"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.locals, portNo)
	return nil
}

func (a *fakeDatapath) AddVtepPort(_ context.Context, portNo uint32, ip net.IP) error {
	if err := a.Call("AddVtepPort"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.vteps[ip.String()] = portNo
	return nil
}

// The remote sweep's tests (netplugin/remotesweep) have their own agent
// with remote endpoints; the daemon's hold none.
func (a *fakeDatapath) RemoteEndpoints() []ofrpc.OfnetEndpoint { return nil }
func (a *fakeDatapath) RemoveRemoteEndpoint(context.Context, ofrpc.OfnetEndpoint) error {
	return a.Call("RemoveRemoteEndpoint")
}

func (a *fakeDatapath) RemoveVtepPort(_ context.Context, _ uint32, ip net.IP) error {
	if err := a.Call("RemoveVtepPort"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.vteps, ip.String())
	return nil
}

func (a *fakeDatapath) SetArpMode(_ context.Context, mode string) error {
	if err := a.Call("SetArpMode"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.arpMode = mode
	return nil
}

func (a *fakeDatapath) AddSvcSpec(_ context.Context, name string, spec agent.ServiceSpec) error {
	if err := a.Call("AddSvcSpec"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.services[name] = spec
	return nil
}

func (a *fakeDatapath) DelSvcSpec(_ context.Context, name string) error {
	if err := a.Call("DelSvcSpec"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.services, name)
	return nil
}

func (a *fakeDatapath) SvcProviderUpdate(_ context.Context, name string, providers []string) error {
	if err := a.Call("SvcProviderUpdate"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.providers[name] = providers
	return nil
}

func (a *fakeDatapath) AddUplink(context.Context, uint32, string) error  { return a.Call("AddUplink") }
func (a *fakeDatapath) AddMaster(context.Context, ofrpc.OfnetNode) error { return a.Call("AddMaster") }
func (a *fakeDatapath) RemoveMaster(context.Context, ofrpc.OfnetNode) error {
	return a.Call("RemoveMaster")
}
func (a *fakeDatapath) FinishRestart(context.Context) error { return a.Call("FinishRestart") }
func (a *fakeDatapath) SetHostAccess(context.Context, agent.HostAccess) error {
	return a.Call("SetHostAccess")
}
func (a *fakeDatapath) ServiceStats(context.Context) ([]agent.ServiceStats, error) { return nil, nil }
func (a *fakeDatapath) EndpointVrfs([]string) map[string][]string                  { return nil }
func (a *fakeDatapath) SetNetworkPolicy(context.Context, map[netip.Addr]agent.NetpolPod) error {
	return nil
}
func (a *fakeDatapath) SetBgpPort(context.Context, uint32, net.IP) error { return a.Call("SetBgpPort") }
func (a *fakeDatapath) SetBgpPeerMAC(context.Context, net.HardwareAddr) error {
	return a.Call("SetBgpPeerMAC")
}
func (a *fakeDatapath) AddBgpRoute(context.Context, *net.IPNet) error { return a.Call("AddBgpRoute") }
func (a *fakeDatapath) RemoveBgpRoute(context.Context, *net.IPNet) error {
	return a.Call("RemoveBgpRoute")
}
func (a *fakeDatapath) FlushBgpRoutes(context.Context) error   { return a.Call("FlushBgpRoutes") }
func (a *fakeDatapath) BgpRoutes() []string                    { return nil }
func (a *fakeDatapath) DescribeCookie(uint64) (string, string) { return "", "" }
func (a *fakeDatapath) MACOf(net.IP) (net.HardwareAddr, bool)  { return nil, false }
func (a *fakeDatapath) State() agent.State                     { return agent.State{} }
func (a *fakeDatapath) Stats() agent.Stats                     { return agent.Stats{} }

// fakeDriver is an OVSDB that remembers ports, policing and tunnels.
type fakeDriver struct {
	*faults
	mu       sync.Mutex
	ports    map[string]bool // port name
	policing map[string]string
	vteps    map[string]uint32
	extIDs   map[string]string // bridge/key → value
	next     uint32
}

func newFakeDriver() *fakeDriver {
	return &fakeDriver{faults: newFaults(), ports: map[string]bool{}, policing: map[string]string{},
		vteps: map[string]uint32{}, extIDs: map[string]string{}, next: 10}
}

func (f *fakeDriver) hasPort(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ports[name]
}

func (f *fakeDriver) vtep(ip string) (uint32, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.vteps[ip]
	return p, ok
}

func (f *fakeDriver) EnsureBridge(context.Context, string, int) error { return f.Call("EnsureBridge") }
func (f *fakeDriver) EnsureUplinks(context.Context, string, []string) ([]ovsdriver.UplinkMember, error) {
	return nil, f.Call("EnsureUplinks")
}
func (f *fakeDriver) EnsureHostPort(context.Context, string) (ovsdriver.EndpointPort, error) {
	return ovsdriver.EndpointPort{}, f.Call("EnsureHostPort")
}
func (f *fakeDriver) BridgeExternalID(context.Context, string, string) (string, bool, error) {
	return "", false, f.Call("BridgeExternalID")
}
func (f *fakeDriver) SetBridgeExternalID(_ context.Context, bridge, key, value string) error {
	if err := f.Call("SetBridgeExternalID"); err != nil {
		return err
	}
	f.mu.Lock()
	f.extIDs[bridge+"/"+key] = value
	f.mu.Unlock()
	return nil
}

func (f *fakeDriver) externalID(bridge, key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.extIDs[bridge+"/"+key]
}

func (f *fakeDriver) CreateEndpoint(_ context.Context, spec ovsdriver.EndpointSpec) (ovsdriver.EndpointPort, error) {
	if err := f.Call("CreateEndpoint"); err != nil {
		return ovsdriver.EndpointPort{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	p := ovsdriver.EndpointPort{EndpointID: spec.EndpointID, PortName: fmt.Sprintf("vvport%d", f.next),
		IntfName: fmt.Sprintf("vport%d", f.next), OFPort: f.next}
	f.ports[p.PortName] = true
	return p, nil
}

func (f *fakeDriver) DeleteEndpoint(_ context.Context, _, portName string) error {
	if err := f.Call("DeleteEndpoint"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ports, portName)
	return nil
}

func (f *fakeDriver) ExistingEndpoints(context.Context, string) ([]ovsdriver.EndpointPort, error) {
	return nil, f.Call("ExistingEndpoints")
}

func (f *fakeDriver) PinOFPorts(context.Context, string) (int, error) {
	return 0, f.Call("PinOFPorts")
}

func (f *fakeDriver) UpdatePolicing(_ context.Context, portName, bandwidth string, burst int) error {
	if err := f.Call("UpdatePolicing"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.policing[portName] = fmt.Sprintf("%s/%d", bandwidth, burst)
	return nil
}

func (f *fakeDriver) EnsureVTEP(_ context.Context, _, remoteIP string, _ int) (uint32, error) {
	if err := f.Call("EnsureVTEP"); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.vteps[remoteIP]; ok {
		return p, nil
	}
	f.next++
	f.vteps[remoteIP] = f.next
	return f.next, nil
}

func (f *fakeDriver) DeleteVTEP(_ context.Context, _, remoteIP string) error {
	if err := f.Call("DeleteVTEP"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.vteps, remoteIP)
	return nil
}

func (f *fakeDriver) VTEPs(context.Context, string) (map[string]uint32, error) {
	return map[string]uint32{}, f.Call("VTEPs")
}
func (f *fakeDriver) PortByOFPort(string, uint32) (ovsdriver.PortInfo, bool) {
	return ovsdriver.PortInfo{}, false
}
func (f *fakeDriver) ProbePathMTU(context.Context, string, time.Duration) (ovsdriver.PathMTU, error) {
	return ovsdriver.PathMTU{}, f.Call("ProbePathMTU")
}
func (f *fakeDriver) Close() error { return nil }

var (
	_ datapath     = (*fakeDatapath)(nil)
	_ switchDriver = (*fakeDriver)(nil)
)
