package state_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bits-and-blooms/bitset"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, objdbtest.LeakOptions()...) }

// open returns a state store on a fresh root of an embedded etcd.
func open(t *testing.T) (*state.Store, objdb.Store) {
	t.Helper()
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint}, Root: objdbtest.UniqueRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return state.New(st), st
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The bitset wire format is the original's (docs/daemons.md §2.7).
func TestBitsetWireFormat(t *testing.T) {
	var b bitset.BitSet
	b.Set(0).Set(65)
	b.Set(129) // length 130 bits
	got, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	// 8-byte BE length 130, then words BE: 0x1, 0x2, 0x2; URL-safe base64.
	want := `"AAAAAAAAAIIAAAAAAAAAAQAAAAAAAAACAAAAAAAAAAI="`
	if string(got) != want {
		t.Fatalf("bitset JSON %s, want %s", got, want)
	}
	var back bitset.BitSet
	if err := json.Unmarshal(got, &back); err != nil || !back.Equal(&b) {
		t.Fatalf("round trip: %v %v", back.String(), err)
	}
}

// JSON field names are the original's.
func TestFieldNames(t *testing.T) {
	cases := []struct {
		v    any
		keys []string
	}{
		{state.Network{Common: state.Common{ID: "n.t"}}, []string{`"id":"n.t"`, `"networkName"`, `"pktTagType"`, `"extPktTag"`, `"subnetIP"`, `"subnetLen"`, `"ipAddrRange"`, `"epAddrCount"`, `"epCount"`, `"ipAllocMap"`, `"ipv6SubnetIP"`, `"ipv6AllocMap"`, `"ipv6LastHost"`, `"networkTag"`}},
		{state.Endpoint{}, []string{`"netID"`, `"endpointID"`, `"endpointGroupId"`, `"endpointGroupKey"`, `"macAddress"`, `"homingHost"`, `"intfName"`, `"vtepIP"`, `"containerId"`, `"epCommonName"`}},
		{state.EndpointGroup{}, []string{`"groupName"`, `"endpointGroupId"`, `"DSCP"`, `"Bandwidth"`, `"Burst"`, `"IPPool"`, `"epgIpAllocMap"`, `"groupTag"`}},
		{state.GlobConfig{}, []string{`"id":""`, `"nw-infra-type"`, `"fwd-mode"`, `"arp-mode"`, `"pvt-subnet"`}},
		{state.GlobalCfg{}, []string{`"auto":{"VLANs":"","VXLANs":""}`}},
		{state.GlobalOper{}, []string{`"defaultNetwork"`, `"freeVXLANsStart"`}},
		{state.VxlanResource{}, []string{`"vxlans"`, `"LocalVLANs"`, `"FreeVXLANsStart"`}},
		{state.VxlanResourceOper{}, []string{`"freeVXLANs"`, `"freeLocalVLANs"`}},
		{state.PolicyRule{OfnetPolicyRule: state.OfnetPolicyRule{RuleId: "r"}}, []string{`"id":""`, `"RuleId":"r"`, `"SrcEndpointGroup"`, `"IpProtocol"`, `"TcpFlags"`, `"Action"`}},
		{state.Bgp{}, []string{`"router-ip"`, `"neighbor-as"`}},
		{state.ServiceLB{Providers: map[string]*state.Provider{"p": {}}}, []string{`"servicename"`, `"tenantname"`, `"subnet"`, `"ipaddress"`, `"EpIDKey"`}},
		{state.SvcProvider{}, []string{`"ServiceName"`, `"Providers"`}},
		{state.Docknet{}, []string{`"docknetUUID"`}},
		{state.EndpointOper{}, []string{`"contUUID"`, `"portName"`}},
		{state.OvsDriverOper{LocalEpInfo: map[string]*state.LocalEpInfo{"e": {}}}, []string{`"currPortNum"`, `"LocalEpInfo"`, `"Ovsportname"`, `"EpgKey"`, `"BridgeType"`}},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range c.keys {
			if !strings.Contains(string(b), k) {
				t.Errorf("%T JSON lacks %s: %s", c.v, k, b)
			}
		}
	}
}

// TestPolicyRuleWireFormat pins the stored JSON of a policy rule (id left
// empty as the original, the key names the rule): the rule
// is the RPC's type, so the store and the wire share one encoding, and a
// stored rule decodes into exactly what netmaster sends to the agents.
func TestPolicyRuleWireFormat(t *testing.T) {
	r := state.PolicyRule{OfnetPolicyRule: state.OfnetPolicyRule{RuleId: "t1:g1:t1:p1:r1:inRx", Priority: 10,
		SrcEndpointGroup: 3, DstEndpointGroup: 4, SrcIpAddr: "198.18.0.0/16", IpProtocol: 6, DstPort: 80,
		TcpFlags: "syn,!ack", Action: "allow"}}
	const want = `{"id":"","RuleId":"t1:g1:t1:p1:r1:inRx","Priority":10,"SrcEndpointGroup":3,` +
		`"DstEndpointGroup":4,"SrcIpAddr":"198.18.0.0/16","DstIpAddr":"","IpProtocol":6,"SrcPort":0,"DstPort":80,` +
		`"TcpFlags":"syn,!ack","Action":"allow"}`
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("stored JSON\n got %s\nwant %s", b, want)
	}
	var back state.PolicyRule
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var wire ofrpc.OfnetPolicyRule = back.OfnetPolicyRule
	if wire != r.OfnetPolicyRule {
		t.Fatalf("decoded rule %+v, want %+v", wire, r.OfnetPolicyRule)
	}
}

func TestReadWriteClear(t *testing.T) {
	ctx := ctxT(t)
	s, kv := open(t)
	nw := state.Network{Common: state.Common{ID: "net1.default"}, Tenant: "default", NetworkName: "net1", PktTagType: "vxlan", PktTag: 1, ExtPktTag: 1, SubnetIP: "198.18.0.0", SubnetLen: 24}
	nw.IPAllocMap.Set(1)
	if _, err := s.Networks.Write(ctx, nw); err != nil {
		t.Fatal(err)
	}
	raw, err := kv.Get(ctx, "state/nets/net1.default")
	if err != nil || !strings.Contains(string(raw.Value), `"networkName":"net1"`) {
		t.Fatalf("stored at the original key: %s %v", raw.Value, err)
	}
	got, err := s.Networks.Read(ctx, "net1.default")
	if err != nil || got.NetworkName != "net1" || !got.IPAllocMap.Test(1) {
		t.Fatalf("read back %+v %v", got, err)
	}
	// Singletons live at their fixed keys with an empty JSON id.
	if _, err := s.GlobConfig.Write(ctx, state.GlobConfig{FwdMode: "bridge"}); err != nil {
		t.Fatal(err)
	}
	if raw, err := kv.Get(ctx, "master/config/global"); err != nil || !strings.Contains(string(raw.Value), `"id":""`) {
		t.Fatalf("glob config: %s %v", raw.Value, err)
	}
	if _, err := s.PolicyRules.Write(ctx, state.PolicyRule{OfnetPolicyRule: state.OfnetPolicyRule{RuleId: "a:b:c:inRx", Action: "allow"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "state/policyRule/a:b:c:inRx"); err != nil {
		t.Fatal(err)
	}
	if err := s.Networks.Clear(ctx, "net1.default"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Networks.Read(ctx, "net1.default")
	if !errors.Is(err, objdb.ErrNotFound) || !strings.Contains(err.Error(), "key not found") {
		t.Fatalf("read cleared: %v", err)
	}
	if err := s.Networks.Clear(ctx, "net1.default"); err != nil {
		t.Fatalf("clear twice: %v", err)
	}
	for _, bad := range []string{"", "a/b"} {
		if _, err := s.Endpoints.Write(ctx, state.Endpoint{Common: state.Common{ID: bad}}); !errors.Is(err, objdb.ErrInvalid) {
			t.Errorf("write id %q: %v", bad, err)
		}
	}
}

func TestTake(t *testing.T) {
	ctx := ctxT(t)
	s, kv := open(t)
	ep := state.Endpoint{Common: state.Common{ID: "net1.default-ep1"}, NetID: "net1.default", IPAddress: "198.18.0.7"}
	if _, err := s.Endpoints.Write(ctx, ep); err != nil {
		t.Fatal(err)
	}
	got, err := s.Endpoints.Take(ctx, ep.ID)
	if err != nil || got.IPAddress != "198.18.0.7" || got.NetID != "net1.default" {
		t.Fatalf("take: %+v %v", got, err)
	}
	if _, err := kv.Get(ctx, s.Endpoints.Key(ep.ID)); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("after take: %v", err)
	}
	if _, err := s.Endpoints.Take(ctx, ep.ID); !errors.Is(err, objdb.ErrNotFound) || !strings.Contains(err.Error(), "key not found") {
		t.Fatalf("take twice: %v", err)
	}
	if _, err := s.Endpoints.Take(ctx, "a/b"); !errors.Is(err, objdb.ErrInvalid) {
		t.Fatalf("take id a/b: %v", err)
	}
}

func TestCompareAndSwapWrite(t *testing.T) {
	ctx := ctxT(t)
	s, _ := open(t)
	g := state.EndpointGroup{Common: state.Common{ID: "web:default"}, EpCount: 1}
	v, err := s.EndpointGroups.Write(ctx, g, objdb.WithCreateOnly())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EndpointGroups.Write(ctx, g, objdb.WithCreateOnly()); !errors.Is(err, objdb.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	cur, ver, err := s.EndpointGroups.ReadVersion(ctx, "web:default")
	if err != nil || ver != v {
		t.Fatalf("read version %d (wrote %d): %v", ver, v, err)
	}
	cur.EpCount++
	if _, err := s.EndpointGroups.Write(ctx, cur, objdb.WithPrevVersion(ver)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EndpointGroups.Write(ctx, cur, objdb.WithPrevVersion(ver)); !errors.Is(err, objdb.ErrConflict) {
		t.Fatalf("stale write: %v", err)
	}
}

func TestReadAllAndWatch(t *testing.T) {
	ctx := ctxT(t)
	s, kv := open(t)
	for _, id := range []string{"b", "a", "c"} {
		if _, err := s.Endpoints.Write(ctx, state.Endpoint{Common: state.Common{ID: id}, IPAddress: "198.18.0." + id}); err != nil {
			t.Fatal(err)
		}
	}
	// A deeper key is not an endpoint and must not break decoding.
	if _, err := kv.Put(ctx, "state/eps/sub/x", []byte("not json")); err != nil {
		t.Fatal(err)
	}
	all, ver, err := s.Endpoints.ReadAll(ctx)
	if err != nil || len(all) != 3 || all[0].ID != "a" || all[2].ID != "c" {
		t.Fatalf("read all: %+v %v", all, err)
	}
	// Changes after ReadAll, before the watch starts, are not lost.
	if _, err := s.Endpoints.Write(ctx, state.Endpoint{Common: state.Common{ID: "d"}}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.Endpoints.Watch(wctx, objdb.WithStartVersion(ver))
	if err != nil {
		t.Fatal(err)
	}
	next := func() state.Change[state.Endpoint] {
		t.Helper()
		select {
		case c := <-ch:
			if c.Err != nil {
				t.Fatal(c.Err)
			}
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no change")
		}
		return state.Change[state.Endpoint]{}
	}
	if c := next(); c.ID != "d" || c.Curr == nil || c.Prev != nil {
		t.Fatalf("create: %+v", c)
	}
	if _, err := s.Endpoints.Write(ctx, state.Endpoint{Common: state.Common{ID: "a"}, IPAddress: "198.18.0.99"}); err != nil {
		t.Fatal(err)
	}
	if c := next(); c.ID != "a" || c.Curr.IPAddress != "198.18.0.99" || c.Prev == nil || c.Prev.IPAddress != "198.18.0.a" {
		t.Fatalf("modify: %+v", c)
	}
	if err := s.Endpoints.Clear(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if c := next(); c.ID != "b" || c.Curr != nil || c.Prev == nil || c.Prev.ID != "b" {
		t.Fatalf("delete: %+v", c)
	}
	cancel()
	for range ch {
	}
}

// Each walks what ReadAll returns, in the same order, a page at a time.
func TestEachMatchesReadAll(t *testing.T) {
	ctx := ctxT(t)
	s, kv := open(t)
	n := objdb.DefaultPageSize + 5 // more than one page
	for i := range n {
		ep := state.Endpoint{Common: state.Common{ID: fmt.Sprintf("e%05d", i)}, NetID: "n.default", IPAddress: "198.18.0.1"}
		if _, err := s.Endpoints.Write(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kv.Put(ctx, "state/eps/sub/x", []byte("not json")); err != nil {
		t.Fatal(err)
	}
	all, allVer, err := s.Endpoints.ReadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	ver, err := s.Endpoints.Each(ctx, func(ep state.Endpoint) error {
		ids = append(ids, ep.ID)
		return nil
	})
	if err != nil || ver != allVer || len(ids) != len(all) {
		t.Fatalf("each: %d objects version %d (%v), read all: %d version %d", len(ids), ver, err, len(all), allVer)
	}
	for i := range all {
		if ids[i] != all[i].ID {
			t.Fatalf("object %d: each %s, read all %s", i, ids[i], all[i].ID)
		}
	}
	stop := errors.New("stop")
	if _, err := s.Endpoints.Each(ctx, func(state.Endpoint) error { return stop }); err != stop {
		t.Fatalf("fn's error: %v", err)
	}
	if _, err := kv.Put(ctx, "state/eps/zz", []byte("not json")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Endpoints.Each(ctx, func(state.Endpoint) error { return nil }); err == nil || !strings.Contains(err.Error(), "decode state") {
		t.Fatalf("undecodable record: %v", err)
	}
}
