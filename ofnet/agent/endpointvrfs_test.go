package agent

import (
	"context"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// TestEndpointVrfs: local and remote endpoints answer their VRF; unknown
// and malformed addresses are left out; an address in two VRFs answers
// both. No switch is needed: the agent's state is enough.
func TestEndpointVrfs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := New(Config{Datapath: DatapathVxlan, LocalIP: net.ParseIP("198.18.0.1"), OFListener: ln, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mac, _ := net.ParseMAC("02:02:c6:13:01:05")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.AddVtepPort(ctx, 7, net.ParseIP("198.18.0.2")))
	must(a.AddNetwork(ctx, 1, 5001, "198.19.1.254", "t1"))
	must(a.AddNetwork(ctx, 2, 5002, "198.19.1.254", "t2"))
	must(a.AddLocalEndpoint(ctx, EndpointInfo{PortNo: 3, MacAddr: mac, IpAddr: net.ParseIP("198.19.1.5"), Vlan: 1, EndpointGroupVlan: 1}))
	remote := func(ip, vrf string, vni uint32) {
		must(a.AddRemoteEndpoint(ctx, ofrpc.OfnetEndpoint{EndpointID: ip + ":" + vrf, IpAddr: net.ParseIP(ip),
			Vrf: vrf, MacAddrStr: "02:02:c6:13:01:09", Vlan: 1, Vni: vni,
			OriginatorIp: net.ParseIP("198.18.0.2"), Timestamp: time.Now()}))
	}
	remote("198.19.1.9", "t1", 5001)
	remote("198.19.1.5", "t2", 5002)
	got := a.EndpointVrfs([]string{"198.19.1.5", "198.19.1.9", "198.19.1.77", "not-an-ip", "2001:db8::1"})
	want := map[string][]string{"198.19.1.5": {"t1", "t2"}, "198.19.1.9": {"t1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("EndpointVrfs = %v, want %v", got, want)
	}
	if got := a.EndpointVrfs(nil); len(got) != 0 {
		t.Errorf("EndpointVrfs(nil) = %v, want none", got)
	}
}
