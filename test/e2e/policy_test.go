package e2e

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// policyPort2 is the second echo port of the policy test's containers.
const policyPort2 = 8000

// flowCheck is one expected outcome: TCP and/or UDP from → to:port.
type flowCheck struct {
	from, to *ctr
	port     int
	proto    string // "tcp", "udp" or "" for both
	allow    bool
}

func (f flowCheck) String() string {
	p := f.proto
	if p == "" {
		p = "tcp+udp"
	}
	verb := "blocked"
	if f.allow {
		verb = "allowed"
	}
	where := "across hosts"
	if f.from.host == f.to.host {
		where = "on one host"
	}
	return fmt.Sprintf("%s %s → %s:%d %s (%s)", p, f.from.Name, f.to.Name, f.port, verb, where)
}

// run checks the expectation once.
func (f flowCheck) run() error {
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	try := func(proto string, do func(timeout time.Duration) error) {
		wg.Go(func() {
			timeout := trafficTimeout
			if !f.allow {
				timeout = blockedTimeout
			}
			err := do(timeout)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case f.allow && err != nil:
				errs = append(errs, fmt.Errorf("%s: %w", proto, err))
			case !f.allow && err == nil:
				errs = append(errs, fmt.Errorf("%s got through", proto))
			}
		})
	}
	if f.proto != "udp" {
		try("tcp", func(d time.Duration) error { return f.from.TCPEcho(f.to.ip(), f.port, 64, d) })
	}
	if f.proto != "tcp" {
		try("udp", func(d time.Duration) error { _, err := f.from.UDPEcho(f.to.ip(), f.port, d); return err })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%v: %w", f, err)
	}
	return nil
}

// expect polls until every check holds at once (rules reach the agents
// asynchronously), within 20 s, and reports the checks still failing.
func expect(t *testing.T, checks ...flowCheck) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		errs := make([]error, len(checks))
		var wg sync.WaitGroup
		for i, c := range checks {
			wg.Go(func() { errs[i] = c.run() })
		}
		wg.Wait()
		err := errors.Join(errs...)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Error(err)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestPolicy is the contiv policy acceptance: rules made with netctl and
// attached to groups, checked with real TCP and UDP connections across
// hosts and on one host, changed while the containers run. It runs on
// the VXLAN routing pipeline so that rules by network see traffic from
// another network. Policy is stateless, as in the original (see
// docs/compat.md): the last cases show which replies a reverse deny
// drops.
func TestPolicy(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vxlan", FwdMode: "routing"})
	nc := func(t *testing.T, args ...string) { t.Helper(); netctl(t, tb, args...) }
	nc(t, "net", "create", "--encap", "vxlan", "--subnet", "198.19.20.0/24", "--gateway", "198.19.20.254", "pn")
	nc(t, "net", "create", "--encap", "vxlan", "--subnet", "198.19.21.0/24", "--gateway", "198.19.21.254", "pn2")
	nc(t, "policy", "create", "webpol")
	nc(t, "policy", "create", "apppol")
	nc(t, "group", "create", "-p", "webpol", "pn", "web")
	nc(t, "group", "create", "-p", "apppol", "pn", "app")
	nc(t, "group", "create", "pn", "db")
	nc(t, "group", "create", "pn2", "ext")
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	att := func(h *testbed.Host, name, network, group string) *ctr {
		c := attachNew(t, h, name, "default", network, group)
		c.ServeTraffic(t, policyPort2)
		return c
	}
	w0, w1 := att(h0, "w0", "pn", "web"), att(h1, "w1", "pn", "web")
	a0, a1 := att(h0, "a0", "pn", "app"), att(h1, "a1", "pn", "app")
	d1 := att(h1, "d1", "pn", "db")
	e1 := att(h1, "e1", "pn2", "ext")
	P := strconv.Itoa(testbed.TrafficPort)
	P2 := strconv.Itoa(policyPort2)
	ok := func(from, to *ctr, port int, proto string) flowCheck { return flowCheck{from, to, port, proto, true} }
	no := func(from, to *ctr, port int, proto string) flowCheck { return flowCheck{from, to, port, proto, false} }
	tp := testbed.TrafficPort

	t.Run("1 no rules: default allow", func(t *testing.T) {
		expect(t, ok(d1, w0, tp, ""), ok(a1, w1, tp, ""), ok(e1, w0, tp, ""))
	})
	t.Run("2 by group: low-priority deny all, allow from group app", func(t *testing.T) {
		nc(t, "policy", "rule-add", "-d", "in", "-p", "1", "-j", "deny", "webpol", "1")
		nc(t, "policy", "rule-add", "-d", "in", "-p", "10", "-g", "app", "-j", "allow", "webpol", "2")
		expect(t, ok(a0, w1, tp, ""), ok(a1, w1, tp, ""), ok(a0, w0, tp, ""),
			no(d1, w0, tp, ""), no(d1, w1, tp, ""), no(e1, w0, tp, ""),
			// Other groups are not policed.
			ok(d1, a1, tp, ""), ok(w0, a1, tp, ""))
	})
	t.Run("3 by network: allow from network pn2", func(t *testing.T) {
		nc(t, "policy", "rule-add", "-d", "in", "-p", "10", "-n", "pn2", "-j", "allow", "webpol", "3")
		expect(t, ok(e1, w0, tp, ""), ok(e1, w1, tp, ""), no(d1, w0, tp, ""))
	})
	t.Run("4 by address, protocol and port: allow TCP "+P+" from d1 only", func(t *testing.T) {
		nc(t, "policy", "rule-add", "-d", "in", "-p", "10", "-i", d1.ip(), "-l", "tcp", "-P", P, "-j", "allow", "webpol", "4")
		expect(t, ok(d1, w0, tp, "tcp"), ok(d1, w1, tp, "tcp"),
			no(d1, w0, tp, "udp"), no(d1, w1, policyPort2, "tcp"))
	})
	t.Run("5 priority order: a higher deny of TCP "+P2+" from app beats the allow", func(t *testing.T) {
		nc(t, "policy", "rule-add", "-d", "in", "-p", "20", "-g", "app", "-l", "tcp", "-P", P2, "-j", "deny", "webpol", "5")
		expect(t, no(a0, w1, policyPort2, "tcp"), no(a1, w1, policyPort2, "tcp"),
			ok(a0, w1, policyPort2, "udp"), ok(a0, w1, tp, ""))
	})
	t.Run("6 rule removal at runtime", func(t *testing.T) {
		nc(t, "policy", "rule-rm", "webpol", "5")
		expect(t, ok(a0, w1, policyPort2, "tcp"), ok(a1, w1, policyPort2, "tcp"))
		nc(t, "policy", "rule-rm", "webpol", "2")
		expect(t, no(a0, w1, tp, ""), no(a1, w1, tp, ""), ok(e1, w0, tp, ""))
	})
	t.Run("7 out direction: web may not open TCP "+P+" to group db", func(t *testing.T) {
		// Without the deny-all, replies into web pass again (see case 10).
		nc(t, "policy", "rule-rm", "webpol", "1")
		expect(t, ok(a0, w1, tp, ""), ok(d1, w0, tp, "udp"))
		nc(t, "policy", "rule-add", "-d", "out", "-p", "10", "-e", "db", "-l", "tcp", "-P", P, "-j", "deny", "webpol", "7")
		expect(t, no(w1, d1, tp, "tcp"), no(w0, d1, tp, "tcp"), ok(w1, d1, tp, "udp"), ok(w1, a1, tp, "tcp"),
			ok(d1, w1, tp, "tcp"))
	})
	t.Run("8 detaching the policy restores default allow", func(t *testing.T) {
		nc(t, "group", "create", "pn", "web")
		expect(t, ok(a0, w1, tp, ""), ok(d1, w0, tp, ""), ok(d1, w1, policyPort2, ""), ok(w1, d1, tp, ""))
	})
	// Stateless, as the original: a deny into app from web also matches
	// the replies of connections app opens to web, except for a TCP rule
	// without a port, which only matches connection openings (SYN without
	// ACK).
	t.Run("9 reverse deny of TCP (no port) matches only openings: app still reaches web", func(t *testing.T) {
		nc(t, "policy", "rule-add", "-d", "in", "-p", "10", "-g", "web", "-l", "tcp", "-j", "deny", "apppol", "1")
		expect(t, no(w1, a1, tp, "tcp"), no(w0, a1, tp, "tcp"), ok(a1, w1, tp, "tcp"), ok(a0, w1, tp, "tcp"))
		// The 3 MB transfer's replies carry data: they pass too.
		if err := a1.CheckTraffic(w0.ip(), tp, trafficTimeout); err != nil {
			t.Error(err)
		}
	})
	t.Run("10 reverse deny of UDP drops the replies: app's UDP to web fails", func(t *testing.T) {
		nc(t, "policy", "rule-add", "-d", "in", "-p", "10", "-g", "web", "-l", "udp", "-j", "deny", "apppol", "2")
		expect(t, no(a1, w1, tp, "udp"), no(a0, w1, tp, "udp"), ok(a1, w1, tp, "tcp"), ok(d1, w1, tp, "udp"))
	})
}
