package e2e

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/test/testbed"
)

// headlessOutage is how long TestHeadlessDataplane keeps each control
// plane part down. The acceptance run of issue 23 uses 5m (with -timeout
// 40m): go test ./test/e2e -run TestHeadlessDataplane -headless.outage 5m.
var headlessOutage = flag.Duration("headless.outage", 30*time.Second, "TestHeadlessDataplane: length of each control plane outage")

// TestHeadlessDataplane (docs/architecture.md "Headless dataplane"): the
// containers of a host whose netplugin is stopped for longer than its
// service lease, and then of every host while every netmaster is stopped,
// keep exchanging ping, TCP and UDP with the other host in both
// directions; nothing is lost beyond the first second of each outage.
func TestHeadlessDataplane(t *testing.T) {
	outage := *headlessOutage
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge", Netmasters: 2, Store: testbed.ExternalEtcd})
	tb.DumpOnFailure(t)
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.21.0/24", "--gateway", "198.19.21.254", "hl")
	life := 2*outage + 10*time.Minute
	a := attachLong(t, tb.Hosts[0], "hla", "hl", life)
	b := attachLong(t, tb.Hosts[1], "hlb", "hl", life)
	for _, p := range [][2]*ctr{{a, b}, {b, a}} {
		if err := pingOK(p[0], p[1], 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	h0 := tb.Hosts[0]
	headlessPhase(t, tb, "netplugin of "+h0.Name+" stopped", outage, a, b,
		func() {
			h0.StopNetplugin(t)
		},
		func() {
			// The lease ran out: the peer saw the agent go.
			if vteps := liveVteps(t, tb); strings.Contains(vteps, h0.Name) {
				t.Errorf("%s's netplugin.vtep is still registered at the end of the outage (%s): the outage did not outlast the lease", h0.Name, vteps)
			}
			if h0.NetpluginRunning() {
				t.Fatal("netplugin came back during its outage")
			}
		},
		func() {
			h0.StartNetplugin(t)
			tb.WaitNetplugins(t, len(tb.Hosts), 60*time.Second)
		})
	headlessPhase(t, tb, "every netmaster stopped", outage, a, b,
		func() {
			for _, m := range tb.Masters {
				m.Stop(t)
			}
		},
		func() {
			for _, m := range tb.Masters {
				if m.Running() {
					t.Fatalf("netmaster %s came back during the outage", m.Addr())
				}
			}
		},
		func() {
			for _, m := range tb.Masters {
				m.Start(t)
			}
			tb.WaitLeader(t, nil, 60*time.Second)
		})
	// The control plane works again: a new container reaches the others.
	c := attachLong(t, tb.Hosts[1], "hlc", "hl", 5*time.Minute)
	if err := pingOK(c, a, 30*time.Second); err != nil {
		t.Error(err)
	}
}

// headlessPhase runs ping and TCP/UDP probes a→b and b→a while down()
// takes part of the control plane away for outage; check runs at the
// outage's end, up() brings it back. Losses are allowed only in the first
// second after down() began.
func headlessPhase(t *testing.T, tb *testbed.Testbed, what string, outage time.Duration, a, b *ctr, down, check, up func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), outage+5*time.Minute)
	defer cancel()
	type dir struct {
		from, to *ctr
		ping     *testbed.Pinger
		w        *testbed.Watcher
	}
	var dirs []*dir
	for _, p := range [][2]*ctr{{a, b}, {b, a}} {
		w, err := p[0].StartWatch(ctx, p[1].ip(), 200*time.Millisecond, outage+4*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		d := &dir{from: p[0], to: p[1], ping: p[0].StartPinger(ctx, p[1].ip()), w: w}
		dirs = append(dirs, d)
		defer d.w.Stop()
	}
	time.Sleep(2 * time.Second) // a baseline before the outage
	start := time.Now()
	down()
	t.Logf("%s: outage of %v begins", what, outage)
	deadline := start.Add(outage)
	for time.Now().Before(deadline) {
		time.Sleep(min(30*time.Second, time.Until(deadline)))
		for _, d := range dirs {
			if st := d.w.Stats("tcp", start.Add(time.Second), time.Time{}); len(st.Failures) > 0 {
				t.Logf("%s: %s → %s already failing %v after the outage began: %s", what, d.from.Name, d.to.Name, time.Since(start).Round(time.Second), st)
			}
		}
	}
	check()
	end := time.Now()
	up()
	time.Sleep(5 * time.Second) // and after it
	for _, d := range dirs {
		d.w.Stop()
		ps := d.ping.Stop()
		route := fmt.Sprintf("%s (%s) → %s (%s)", d.from.Name, d.from.host.Name, d.to.Name, d.to.host.Name)
		if ps.Err != nil || ps.Received == 0 || ps.LongestGap > time.Second {
			t.Errorf("%s: ping %s: sent %d received %d longest gap %v (%v)", what, route, ps.Sent, ps.Received, ps.LongestGap, ps.Err)
		}
		for _, proto := range []string{"tcp", "udp"} {
			all := d.w.Stats(proto, time.Time{}, time.Time{})
			late := d.w.Stats(proto, start.Add(time.Second), time.Time{})
			during := d.w.Stats(proto, start, end)
			t.Logf("%s: %s %s: %s; during the outage %d/%d", what, route, proto, all, during.OK, during.Sent)
			if during.Sent == 0 || all.LongestGap > time.Second || len(late.Failures) > 0 {
				var fails []string
				for i, f := range late.Failures {
					if i == 5 {
						fails = append(fails, fmt.Sprintf("… %d more", len(late.Failures)-5))
						break
					}
					fails = append(fails, fmt.Sprintf("%s +%v: %s", f.Proto, f.At.Sub(start).Round(time.Millisecond), f.Err))
				}
				t.Errorf("%s: %s %s lost traffic: %s, %d failures after the first second: %s %s", what, route, proto, all, len(late.Failures), strings.Join(fails, "; "), d.w.Stderr())
			}
		}
		t.Logf("%s: ping %s: %d/%d replies, longest gap %v", what, route, ps.Received, ps.Sent, ps.LongestGap)
	}
}

// attachLong is attachNew with a traffic echo that lives for life.
func attachLong(t *testing.T, h *testbed.Host, name, network string, life time.Duration) *ctr {
	t.Helper()
	c := h.NewContainerNS(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := "ctr-" + name
	res, err := attach.NewClient(h.AttachSocket()).Attach(ctx, attach.Request{Tenant: "default", Network: network,
		ContainerID: id, Name: name, NetNS: c.NSPath()})
	if err != nil {
		t.Fatalf("attach %s on %s to %s: %v", name, h.Name, network, err)
	}
	c.ServeTrafficFor(t, life)
	return &ctr{Container: c, host: h, tenant: "default", network: network, id: id, res: res}
}

// liveVteps lists the registered netplugin.vtep instances as "host ip".
func liveVteps(t *testing.T, tb *testbed.Testbed) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := tb.Store(t).GetService(ctx, "netplugin.vtep")
	if err != nil {
		t.Fatalf("list netplugin.vtep: %v", err)
	}
	var out []string
	for _, s := range list {
		out = append(out, s.Hostname+" "+s.HostAddr)
	}
	return strings.Join(out, ", ")
}
