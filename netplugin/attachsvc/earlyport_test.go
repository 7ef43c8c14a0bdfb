package attachsvc

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/contivmodel/modeltest"
	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/logtest"
)

// recPorts records the ports created and deleted.
type recPorts struct {
	mu      sync.Mutex
	n       int
	created []ovsdriver.EndpointSpec
	deleted []string
	live    map[string]bool
	fail    error
}

func (p *recPorts) CreateEndpoint(_ context.Context, spec ovsdriver.EndpointSpec) (ovsdriver.EndpointPort, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.created = append(p.created, spec)
	if p.fail != nil {
		return ovsdriver.EndpointPort{}, p.fail
	}
	p.n++
	name := "vvport" + string(rune('0'+p.n))
	p.live[name] = true
	return ovsdriver.EndpointPort{EndpointID: spec.EndpointID, PortName: name, IntfName: "vport" + name[6:], OFPort: uint32(p.n)}, nil
}

func (p *recPorts) DeleteEndpoint(_ context.Context, _, name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted = append(p.deleted, name)
	delete(p.live, name)
	return nil
}

// fakeMaster answers createEndpoint with ep (or err) and records deletes.
type fakeMaster struct {
	ep      state.Endpoint
	err     error
	deletes int
}

func (m *fakeMaster) CreateEndpoint(context.Context, masterclient.CreateEndpointRequest) (state.Endpoint, error) {
	return m.ep, m.err
}

func (m *fakeMaster) DeleteEndpoint(context.Context, masterclient.DeleteEndpointRequest) (state.Endpoint, error) {
	m.deletes++
	return m.ep, nil
}

func (m *fakeMaster) UpdateEndpoint(context.Context, masterclient.UpdateEndpointRequest) error {
	return nil
}

// groupCluster knows network n1.t1 (VXLAN, tag 10) and group g1:t1 (tag 20).
type groupCluster struct{ vxlanCluster }

var earlyNet = state.Network{Common: state.Common{ID: "n1.t1"}, NetworkName: "n1", Tenant: "t1", PktTagType: "vxlan", PktTag: 10, SubnetLen: 24}

func (groupCluster) Network(context.Context, string) (state.Network, error) { return earlyNet, nil }
func (groupCluster) KnownNetwork(id string) (state.Network, bool)           { return earlyNet, id == earlyNet.ID }
func (groupCluster) Group(id string) (state.EndpointGroup, bool) {
	switch id {
	case "g1:t1":
		return state.EndpointGroup{PktTag: 20}, true
	case "g2:t1":
		return state.EndpointGroup{PktTag: 30, Bandwidth: "10Mbps"}, true
	}
	return state.EndpointGroup{}, false
}

type failDatapath struct{ okDatapath }

func (failDatapath) AddLocalEndpoint(context.Context, agent.EndpointInfo) error {
	return errors.New("flows refused")
}

// A pod's port is made while netmaster creates the endpoint, without the
// MAC, and taken when it is the port the endpoint needs; every failure
// after it deletes it exactly once, and a port made for another group is
// replaced (docs/scale.md, "CNI ADD against the bridge plugin").
func TestEarlyPort(t *testing.T) {
	good := state.Endpoint{Common: state.Common{ID: "n1.t1-c1"}, NetID: "n1.t1", EndpointID: "c1", HomingHost: "host1",
		EndpointGroupKey: "g1:t1", IPAddress: "198.18.10.5", MacAddress: "02:02:c6:12:0a:05"}
	other := good
	other.HomingHost = "host2"
	moved := good
	moved.EndpointGroupKey = "g2:t1"
	for _, tc := range []struct {
		name       string
		ep         state.Endpoint
		masterErr  error
		portErr    error
		flowsFail  bool
		wantErr    bool
		creates    int // ports created
		wantLive   int // ports left
		masterDels int
	}{
		{name: "taken", ep: good, creates: 1, wantLive: 1},
		{name: "netmaster fails", masterErr: errors.New("store down"), wantErr: true, creates: 1},
		{name: "another host's endpoint", ep: other, wantErr: true, creates: 1},
		{name: "another group", ep: moved, creates: 2, wantLive: 1},
		{name: "flows fail", ep: good, flowsFail: true, wantErr: true, creates: 1, masterDels: 1},
		{name: "port fails", ep: good, portErr: errors.New("no veth"), wantErr: true, creates: 2, masterDels: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := logtest.New(t, logrus.DebugLevel)
			ports := &recPorts{live: map[string]bool{}, fail: tc.portErr}
			m := &fakeMaster{ep: tc.ep, err: tc.masterErr}
			var dp Datapath = okDatapath{}
			if tc.flowsFail {
				dp = failDatapath{}
			}
			s := New(Config{Host: "host1", Datapath: func(string) Datapath { return dp }, Ports: ports, Master: m,
				Store: state.New(modeltest.NewMemKV()), Cluster: groupCluster{}, Log: log})
			res, err := s.attachHost(context.Background(), attach.HostRequest{Tenant: "t1", Network: "n1", Group: "g1", ContainerID: "c1"},
				podNS{path: "/var/run/netns/pod1", ifName: "eth0"})
			if (err != nil) != tc.wantErr {
				t.Fatalf("attach: %v, want error %v", err, tc.wantErr)
			}
			ports.mu.Lock()
			defer ports.mu.Unlock()
			if len(ports.created) != tc.creates || len(ports.live) != tc.wantLive {
				t.Fatalf("%d ports created, %d left (%v deleted), want %d and %d", len(ports.created), len(ports.live), ports.deleted, tc.creates, tc.wantLive)
			}
			if len(ports.deleted) != len(ports.created)-len(ports.live) && tc.portErr == nil {
				t.Errorf("deleted %v: a port deleted twice", ports.deleted)
			}
			first := ports.created[0]
			if first.MAC != nil || first.Tag != 20 || first.NetNS != "/var/run/netns/pod1" || first.NetNSIfName != "eth0" || first.Bridge != ovsdriver.VxlanBridge {
				t.Errorf("early port %+v: want no MAC, the group's tag 20, the pod's namespace", first)
			}
			if tc.creates == 2 && tc.portErr == nil {
				if again := ports.created[1]; again.Tag != 30 || again.Bandwidth != "10Mbps" || again.MAC.String() != good.MacAddress {
					t.Errorf("port made again %+v: want group g2's tag, bandwidth and the MAC", again)
				}
			}
			if m.deletes != tc.masterDels {
				t.Errorf("%d deletes in netmaster, want %d", m.deletes, tc.masterDels)
			}
			if !tc.wantErr {
				if !s.Has(good.ID) || res.MacAddress != good.MacAddress || res.IPAddress != "198.18.10.5/24" {
					t.Errorf("result %+v, local %v", res, s.Has(good.ID))
				}
			} else if s.Has(good.ID) || s.Busy(good.ID) {
				t.Error("a failed attach left the endpoint local or pending")
			}
		})
	}
}

// Without the network known here, or for a group the agent does not
// have, the port is made after netmaster answers, as before.
func TestNoEarlyPort(t *testing.T) {
	log := logtest.New(t, logrus.DebugLevel)
	s := New(Config{Host: "host1", Ports: &recPorts{live: map[string]bool{}}, Cluster: groupCluster{}, Log: log})
	into := podNS{path: "/var/run/netns/pod1", ifName: "eth0"}
	for _, req := range []attach.HostRequest{
		{Tenant: "t1", Network: "n2", ContainerID: "c1"},
		{Tenant: "t1", Network: "n1", Group: "g9", ContainerID: "c1"},
	} {
		if p := s.startEarlyPort(context.Background(), req, "x", into); p != nil {
			<-p.done
			t.Errorf("%+v: an early port", req)
		}
	}
	if p := s.startEarlyPort(context.Background(), attach.HostRequest{Tenant: "t1", Network: "n1", ContainerID: "c1"}, "x", podNS{}); p != nil {
		<-p.done
		t.Error("an early port without a pod namespace (Docker)")
	}
}
