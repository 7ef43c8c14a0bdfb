package ofrpc_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// The JSON of the argument types is the wire contract with every other
// ofnet implementation: pin it byte for byte.
func TestArgumentJSONGolden(t *testing.T) {
	ts := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"node", ofrpc.OfnetNode{HostAddr: "10.0.2.15", HostPort: ofrpc.VxlanAgentPort},
			`{"HostAddr":"10.0.2.15","HostPort":9002}`},
		{"endpoint", ofrpc.OfnetEndpoint{
			EndpointID: "10.1.0.2:default", EndpointType: ofrpc.EndpointTypeInternal, EndpointGroup: 5,
			IpAddr: net.ParseIP("10.1.0.2"), IpMask: net.IPv4(255, 255, 255, 255).To4(),
			Vrf: "default", MacAddrStr: "02:02:0a:01:00:02", Vlan: 100, Vni: 5000, EndpointGroupVlan: 100,
			OriginatorIp: net.ParseIP("198.18.0.11"), Timestamp: ts},
			`{"EndpointID":"10.1.0.2:default","EndpointType":2,"EndpointGroup":5,"IpAddr":"10.1.0.2",` +
				`"IpMask":"255.255.255.255","Ipv6Addr":"","Ipv6Mask":"","Vrf":"default",` +
				`"MacAddrStr":"02:02:0a:01:00:02","Vlan":100,"Vni":5000,"EndpointGroupVlan":100,` +
				`"OriginatorIp":"198.18.0.11","OriginatorMac":"","Timestamp":"2024-01-02T03:04:05.000000006Z"}`},
		{"endpoint v6", ofrpc.OfnetEndpoint{EndpointID: "10.1.0.3:t1", IpAddr: net.ParseIP("10.1.0.3"),
			Ipv6Addr: net.ParseIP("2001:db8::3"), Ipv6Mask: net.IP(net.CIDRMask(128, 128)), Timestamp: ts},
			`{"EndpointID":"10.1.0.3:t1","EndpointType":0,"EndpointGroup":0,"IpAddr":"10.1.0.3",` +
				`"IpMask":"","Ipv6Addr":"2001:db8::3","Ipv6Mask":"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff","Vrf":"",` +
				`"MacAddrStr":"","Vlan":0,"Vni":0,"EndpointGroupVlan":0,` +
				`"OriginatorIp":"","OriginatorMac":"","Timestamp":"2024-01-02T03:04:05.000000006Z"}`},
		{"rule", ofrpc.OfnetPolicyRule{RuleId: "t1:g1:t1:p1:r1:inRx", Priority: 10, SrcEndpointGroup: 3,
			DstEndpointGroup: 4, SrcIpAddr: "10.1.0.0/16", IpProtocol: 6, DstPort: 80, TcpFlags: "syn,!ack", Action: "allow"},
			`{"RuleId":"t1:g1:t1:p1:r1:inRx","Priority":10,"SrcEndpointGroup":3,"DstEndpointGroup":4,` +
				`"SrcIpAddr":"10.1.0.0/16","DstIpAddr":"","IpProtocol":6,"SrcPort":0,"DstPort":80,` +
				`"TcpFlags":"syn,!ack","Action":"allow"}`},
		{"rule naming its group", ofrpc.OfnetPolicyRule{RuleId: "t1:g1:t1:p1:r2:inRx", SrcEndpointGroup: 3,
			DstEndpointGroup: 4, Action: "deny", SrcEndpointGroupName: "t1:g0"},
			`{"RuleId":"t1:g1:t1:p1:r2:inRx","Priority":0,"SrcEndpointGroup":3,"DstEndpointGroup":4,` +
				`"SrcIpAddr":"","DstIpAddr":"","IpProtocol":0,"SrcPort":0,"DstPort":0,` +
				`"TcpFlags":"","Action":"deny","SrcEndpointGroupName":"t1:g0"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Fatalf("JSON\n got %s\nwant %s", b, c.want)
			}
			back := reflect.New(reflect.TypeOf(c.v))
			if err := json.Unmarshal(b, back.Interface()); err != nil {
				t.Fatalf("decode: %v", err)
			}
			b2, _ := json.Marshal(back.Elem().Interface())
			if string(b2) != c.want {
				t.Fatalf("round trip changed the JSON:\n got %s\nwant %s", b2, c.want)
			}
		})
	}
}

// Upstream peers send null for absent IPs; it decodes to a nil IP.
func TestEndpointDecodesNullIPs(t *testing.T) {
	in := `{"EndpointID":"10.1.0.2:default","IpAddr":"10.1.0.2","Ipv6Addr":null,"Ipv6Mask":null,"OriginatorIp":"10.0.2.15","Timestamp":"2017-05-01T10:00:00.5+02:00"}`
	var ep ofrpc.OfnetEndpoint
	if err := json.Unmarshal([]byte(in), &ep); err != nil {
		t.Fatal(err)
	}
	if ep.Ipv6Addr != nil || !ep.IpAddr.Equal(net.ParseIP("10.1.0.2")) || !ep.OriginatorIp.Equal(net.ParseIP("10.0.2.15")) {
		t.Fatalf("decoded %+v", ep)
	}
	if want := time.Date(2017, 5, 1, 8, 0, 0, 5e8, time.UTC); !ep.Timestamp.Equal(want) {
		t.Fatalf("timestamp %v, want %v", ep.Timestamp, want)
	}
}

func TestNodeAddr(t *testing.T) {
	for _, c := range []struct {
		n    ofrpc.OfnetNode
		want string
	}{
		{ofrpc.OfnetNode{HostAddr: "10.0.2.15", HostPort: 9001}, "10.0.2.15:9001"},
		{ofrpc.OfnetNode{HostAddr: "2001:db8::1", HostPort: 9002}, "[2001:db8::1]:9002"},
	} {
		if got := c.n.Addr(); got != c.want {
			t.Errorf("%+v.Addr() = %q, want %q", c.n, got, c.want)
		}
	}
}

// The requests a Pool sends and the responses it accepts are JSON-RPC 1.0
// as upstream ofnet speaks it.
func TestWireFormat(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type exchange struct{ req, resp string }
	script := []exchange{
		{`{"method":"OfnetMaster.RegisterNode","params":[{"HostAddr":"10.0.2.15","HostPort":9002}],"id":0}`,
			`{"id":0,"result":true,"error":null}`},
		{`{"method":"PolicyAgent.DelRule","params":[{"RuleId":"r1","Priority":0,"SrcEndpointGroup":0,"DstEndpointGroup":0,"SrcIpAddr":"","DstIpAddr":"","IpProtocol":0,"SrcPort":0,"DstPort":0,"TcpFlags":"","Action":""}],"id":1}`,
			`{"id":1,"result":null,"error":"Rule does not exist"}`},
		{`{"method":"OfnetAgent.InjectGARPs","params":[7],"id":2}`,
			`{"id":2,"result":false,"error":null}`},
	}
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for _, x := range script {
			line, err := r.ReadString('\n')
			if err != nil {
				srvErr <- err
				return
			}
			if line != x.req+"\n" {
				srvErr <- errors.New("request\n got " + line + "want " + x.req)
				return
			}
			if _, err := c.Write([]byte(x.resp + "\n")); err != nil {
				srvErr <- err
				return
			}
		}
		srvErr <- nil
	}()

	p := newPool(t)
	ctx := testCtx(t, 10*time.Second)
	addr := ln.Addr().String()
	var ok bool
	if err := p.Call(ctx, addr, ofrpc.MasterRegisterNode, ofrpc.OfnetNode{HostAddr: "10.0.2.15", HostPort: 9002}, &ok); err != nil || !ok {
		t.Fatalf("RegisterNode: reply %v, err %v", ok, err)
	}
	err = p.Call(ctx, addr, ofrpc.PolicyDelRule, ofrpc.OfnetPolicyRule{RuleId: "r1"}, &ok)
	var re *ofrpc.RemoteError
	if !errors.As(err, &re) || re.Msg != "Rule does not exist" || re.Method != ofrpc.PolicyDelRule || re.Addr != addr {
		t.Fatalf("DelRule: want RemoteError with the server's text, got %#v", err)
	}
	ok = true
	if err := p.Call(ctx, addr, ofrpc.AgentInjectGARPs, 7, &ok); err != nil || ok {
		t.Fatalf("InjectGARPs: reply %v, err %v", ok, err)
	}
	if err := <-srvErr; err != nil {
		t.Fatal(err)
	}
}

// CheckGroups refuses a rule that names a group without its id (which
// would match any group) and passes every other rule.
func TestCheckGroups(t *testing.T) {
	for _, c := range []struct {
		r  ofrpc.OfnetPolicyRule
		ok bool
	}{
		{ofrpc.OfnetPolicyRule{RuleId: "a", Action: "allow"}, true},
		{ofrpc.OfnetPolicyRule{RuleId: "b", Action: "allow", SrcEndpointGroup: 3, SrcEndpointGroupName: "t:g"}, true},
		{ofrpc.OfnetPolicyRule{RuleId: "c", Action: "deny", DstEndpointGroup: 4, DstEndpointGroupName: "t:g"}, true},
		{ofrpc.OfnetPolicyRule{RuleId: "d", Action: "allow", SrcEndpointGroupName: "t:g"}, false},
		{ofrpc.OfnetPolicyRule{RuleId: "e", Action: "deny", DstEndpointGroupName: "t:g"}, false},
		{ofrpc.OfnetPolicyRule{RuleId: "f", Action: "allow", SrcEndpointGroup: -1, SrcEndpointGroupName: "t:g"}, false},
		{ofrpc.OfnetPolicyRule{RuleId: "g", Action: "allow", SrcEndpointGroup: 3, SrcEndpointGroupName: "t:g", DstEndpointGroupName: "t:h"}, false},
	} {
		err := c.r.CheckGroups()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ofrpc.ErrGroupUnresolved)) {
			t.Errorf("CheckGroups(%+v) = %v", c.r, err)
		}
	}
}
