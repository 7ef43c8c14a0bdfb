// Package stall drives the store-fault scenario of
// docs/allocation-integrity.md against real processes: an etcd server
// process, one or two netmaster processes on it, and 16 clients creating
// endpoints on a /20 through /plugin/createEndpoint while the store is
// paused (SIGSTOP), or its connections cut through a TCP proxy, for a
// while; optionally the leader is killed right after. Afterwards the store
// is read directly and checked: no address has two owners, every owned
// address is taken in its pool, and the network's counters equal the
// records.
//
// The netmaster processes are the calling test binary re-executed: its
// TestMain calls RunDaemonIfAsked first.
package stall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/test/nmproc"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// RunDaemonIfAsked runs the netmaster and exits when the binary was
// started as a netmaster process (test/nmproc); otherwise it returns at
// once.
func RunDaemonIfAsked() { nmproc.RunDaemonIfAsked() }

// Fault is how the store goes away.
type Fault string

const (
	// Stop pauses the etcd process (SIGSTOP, then SIGCONT): requests in
	// flight are neither answered nor failed until it resumes.
	Stop Fault = "stop"
	// Cut closes every connection between the netmasters and etcd (they
	// reach it through a TCP proxy) and refuses new ones meanwhile.
	Cut Fault = "cut"
)

// Variant is one kind of run.
type Variant struct {
	Fault Fault
	For   time.Duration
	// KillLeader kills the leading netmaster (SIGKILL) as soon as the
	// store is back; a second netmaster takes over.
	KillLeader bool
}

func (v Variant) String() string {
	s := fmt.Sprintf("%s-%s", v.Fault, v.For)
	if v.KillLeader {
		s += "-killleader"
	}
	return s
}

// Variants are the runs of the acceptance check: the store stopped for
// 3 s, 6 s and 12 s (the leader lock's TTL is 10 s), its connections cut
// for 6 s, and a 6 s stop followed by the leader's death.
func Variants() []Variant {
	return []Variant{
		{Fault: Stop, For: 3 * time.Second},
		{Fault: Stop, For: 6 * time.Second},
		{Fault: Stop, For: 12 * time.Second},
		{Fault: Cut, For: 6 * time.Second},
		{Fault: Stop, For: 6 * time.Second, KillLeader: true},
	}
}

// Scenario constants.
const (
	clients   = 16
	tenant    = "default"
	network   = "stall"
	netID     = network + "." + tenant
	subnet    = "198.18.0.0/20"
	gateway   = "198.18.15.254"
	leaderTTL = 10 * time.Second
	warmup    = time.Second
	// after is how long the clients go on once the store is back and a
	// leader answers.
	after = 2 * time.Second
	// pause between two creates of one client keeps a run well inside the
	// /20 (about a hundred creates a second).
	pause = 150 * time.Millisecond
)

// Result is what one run found.
type Result struct {
	Variant Variant
	// Created endpoints (answered 200); Refused answers (non-200 or
	// transport errors, each retried).
	Created, Refused int
	// Records in the store after the run; Owners of addresses (records,
	// allocAddress records, the gateway).
	Records int
	// DoubleOwned lists "address: owner, owner" for addresses with two or
	// more owners.
	DoubleOwned []string
	// Unmarked lists owned addresses that are free in the pool (the next
	// allocation would hand them out again).
	Unmarked []string
	// Answered lists addresses two clients were both given with 200.
	Answered []string
	// EpCount, EpAddrCount are the network's counters; WantEps, WantAddrs
	// what the records say they must be.
	EpCount, EpAddrCount, WantEps, WantAddrs int
	// Leaked counts addresses taken in the pool without an owner (given
	// back by a later leader's sweep; not a failure).
	Leaked int
	// Corrections lists what a sweep or recount of the netmasters fixed
	// (log lines). Without a new leadership term none is expected.
	Corrections []string
	// TermChanged: the run started a new leadership term (the leader was
	// killed, or lost its lease during the stall). A new term's start
	// recounts the counters and its sweep, one TTL later, returns what the
	// old term left taken without an owner (its reserve): the check waits
	// for that sweep.
	TermChanged bool
	// Races counts data races the netmasters reported (when the test
	// binary, which they run as, is built with -race).
	Races int
	// Retried counts the store requests the netmasters logged as retried
	// (each one's first attempt failed, perhaps after being applied).
	Retried int
	// Elapsed is the run's wall time.
	Elapsed time.Duration
}

// Failures describes what is wrong ("" when the run is clean).
func (r Result) Failures() string {
	var out []string
	if len(r.DoubleOwned) > 0 {
		out = append(out, fmt.Sprintf("addresses with two owners: %s", strings.Join(r.DoubleOwned, "; ")))
	}
	if len(r.Answered) > 0 {
		out = append(out, fmt.Sprintf("addresses answered twice: %s", strings.Join(r.Answered, "; ")))
	}
	if len(r.Unmarked) > 0 {
		out = append(out, fmt.Sprintf("owned addresses free in the pool: %s", strings.Join(r.Unmarked, ", ")))
	}
	if r.EpCount != r.WantEps || r.EpAddrCount != r.WantAddrs {
		out = append(out, fmt.Sprintf("counters (%d endpoints, %d addresses), records say (%d, %d)",
			r.EpCount, r.EpAddrCount, r.WantEps, r.WantAddrs))
	}
	if r.Created == 0 {
		out = append(out, "no endpoint was created")
	}
	if r.Races > 0 {
		out = append(out, fmt.Sprintf("%d data races reported by the netmasters", r.Races))
	}
	if !r.TermChanged && len(r.Corrections) > 0 {
		out = append(out, "the netmaster corrected its state: "+strings.Join(r.Corrections, " | "))
	}
	return strings.Join(out, "\n")
}

func (r Result) String() string {
	status := "clean"
	if f := r.Failures(); f != "" {
		status = "FAILED: " + strings.ReplaceAll(f, "\n", "; ")
	}
	swept := 0
	for _, c := range r.Corrections {
		if strings.Contains(c, "released leaked") {
			swept++
		}
	}
	return fmt.Sprintf("%-22s created %4d refused %4d retried %3d records %4d counters %d/%d want %d/%d leaked %2d swept %2d  %5.1fs  %s",
		r.Variant, r.Created, r.Refused, r.Retried, r.Records, r.EpCount, r.EpAddrCount, r.WantEps, r.WantAddrs,
		r.Leaked, swept, r.Elapsed.Seconds(), status)
}

// Run performs one run of v and returns what it found. Setup problems
// fail t; findings are in the Result.
func Run(t testing.TB, v Variant) Result {
	t.Helper()
	start := time.Now()
	srv := objdbtest.StartEtcdProcess(t)
	if srv.Signal == nil {
		t.Fatal("etcd server cannot be signalled")
	}
	endpoint := srv.Endpoint
	var proxy *objdbtest.Proxy
	if v.Fault == Cut {
		proxy = objdbtest.NewProxy(t, srv.Addr)
		endpoint = srv.NewProxyEndpoint(proxy.Addr())
	}
	n := 1
	if v.KillLeader {
		n = 2
	}
	procs := make([]*nmproc.Proc, n)
	for i := range procs {
		procs[i] = startProc(t, endpoint)
		// The first one leads: the second starts once it does.
		waitServing(t, procs[i], 60*time.Second)
	}
	leader := procs[0]
	mustOK(t, leader.URL(), "POST", "/api/v1/networks/"+tenant+":"+network+"/",
		fmt.Sprintf(`{"tenantName":%q,"networkName":%q,"encap":"vlan","subnet":%q,"gateway":%q}`, tenant, network, subnet, gateway))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var alive atomic.Pointer[nmproc.Proc] // where clients send requests
	alive.Store(leader)
	var created, refused atomic.Int64
	var mu sync.Mutex
	answers := map[string][]string{} // address -> endpoints answered with it
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			hc := &http.Client{Timeout: 60 * time.Second}
			defer hc.CloseIdleConnections()
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("c%02d-%05d", c, i)
				for ctx.Err() == nil {
					ip, err := createEndpoint(ctx, hc, alive.Load().URL(), name)
					if err == nil {
						created.Add(1)
						mu.Lock()
						answers[ip] = append(answers[ip], name)
						mu.Unlock()
						ctxutil.Sleep(ctx, pause)
						break
					}
					if ctx.Err() != nil {
						return
					}
					refused.Add(1)
					// An agent retries the same endpoint.
					ctxutil.Sleep(ctx, 100*time.Millisecond)
				}
			}
		}(c)
	}

	ctxutil.Sleep(ctx, warmup)
	switch v.Fault {
	case Stop:
		if err := srv.Signal(syscall.SIGSTOP); err != nil {
			t.Fatalf("stop etcd: %v", err)
		}
		time.Sleep(v.For)
		if err := srv.Signal(syscall.SIGCONT); err != nil {
			t.Fatalf("resume etcd: %v", err)
		}
	case Cut:
		proxy.Cut()
		time.Sleep(v.For)
		proxy.Restore()
	}
	if v.KillLeader {
		leader.Kill()
		alive.Store(procs[1])
	}
	faultEnd := time.Now()
	live := alive.Load()
	waitServing(t, live, 3*leaderTTL+30*time.Second)
	// Go on until every client got an answer after the fault, then a bit.
	base := created.Load()
	for deadline := time.Now().Add(60 * time.Second); created.Load() < base+clients && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(after)
	cancel()
	wg.Wait()

	res := Result{Variant: v, Created: int(created.Load()), Refused: int(refused.Load())}
	for ip, names := range answers {
		if len(names) > 1 {
			res.Answered = append(res.Answered, ip+": "+strings.Join(names, ", "))
		}
	}
	waitServing(t, live, 3*leaderTTL+30*time.Second)
	// A stall longer than the TTL usually costs the lease (on a loaded
	// machine a shorter one can too); the netmaster says so.
	res.TermChanged = v.KillLeader || strings.Contains(live.Output(), "lost leader lock")
	if res.TermChanged {
		waitSweep(t, live, faultEnd, 3*leaderTTL+30*time.Second)
	}
	// Inspecting the network makes the leader give its reserve back, so
	// that what is left taken without an owner is a leak.
	_, _ = do(context.Background(), http.DefaultClient, live.URL(), "GET", "/api/v1/inspect/networks/"+tenant+":"+network+"/", "")
	check(t, srv.Endpoint, &res)
	res.Elapsed = time.Since(start)
	for _, p := range procs {
		p.Stop()
		out := p.Output()
		res.Retried += strings.Count(out, "request failed, retrying")
		res.Races += strings.Count(out, "WARNING: DATA RACE")
		for _, line := range strings.Split(out, "\n") {
			for _, mark := range []string{"corrected to", "taken again", " owners: ", "released leaked"} {
				if strings.Contains(line, mark) {
					res.Corrections = append(res.Corrections, line)
					break
				}
			}
		}
	}
	return res
}

// check reads the store directly and fills the findings of res.
func check(t testing.TB, endpoint string, res *Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := logrus.New()
	log.SetOutput(io.Discard)
	st, err := etcd.New(ctx, etcd.Config{Endpoints: []string{endpoint}, Logger: logrus.NewEntry(log)})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer st.Close()
	o, err := CheckNetwork(ctx, st, netID, gateway)
	if err != nil {
		t.Fatal(err)
	}
	res.Records, res.DoubleOwned, res.Unmarked, res.Leaked = o.Records, o.DoubleOwned, o.Unmarked, o.Leaked
	res.EpCount, res.EpAddrCount, res.WantEps, res.WantAddrs = o.EpCount, o.EpAddrCount, o.WantEps, o.WantAddrs
}

// takenIn is the set of addresses taken in pool.
func takenIn(ctx context.Context, kv objdb.KV, pool string) (map[netip.Addr]bool, error) {
	v4 := ipam.NewV4(kv)
	defer v4.Close()
	return v4.Taken(ctx, pool)
}

func createEndpoint(ctx context.Context, hc *http.Client, base, name string) (string, error) {
	body := fmt.Sprintf(`{"TenantName":%q,"NetworkName":%q,"EndpointID":%q,"ConfigEP":{"Container":%q,"Host":"host1"}}`,
		tenant, network, name, name)
	b, err := do(ctx, hc, base, "POST", "/plugin/createEndpoint", body)
	if err != nil {
		return "", err
	}
	var r struct {
		EndpointConfig struct {
			IPAddress string `json:"ipAddress"`
		}
	}
	if err := json.Unmarshal(b, &r); err != nil || r.EndpointConfig.IPAddress == "" {
		return "", fmt.Errorf("create endpoint %s: answer %q", name, b)
	}
	return r.EndpointConfig.IPAddress, nil
}

// do sends one request and returns the body of a 200 answer.
func do(ctx context.Context, hc *http.Client, base, method, path, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

func mustOK(t testing.TB, base, method, path, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := do(ctx, http.DefaultClient, base, method, path, body); err != nil {
		t.Fatal(err)
	}
}

// startProc runs a netmaster on the store at storeEndpoint.
func startProc(t testing.TB, storeEndpoint string) *nmproc.Proc {
	t.Helper()
	return nmproc.Start(t, "", "--etcd-endpoints", storeEndpoint, "--leader-ttl", leaderTTL.String())
}

// waitSweep waits until the leader this process reaches reports a sweep
// finished after since (GET /debug/sweep).
func waitSweep(t testing.TB, p *nmproc.Proc, since time.Time, within time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		b, err := do(context.Background(), hc, p.URL(), "GET", "/debug/sweep", "")
		var rep struct{ At time.Time }
		if err == nil && json.Unmarshal(b, &rep) == nil && rep.At.After(since) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no sweep of netmaster %s finished within %v after the fault; output:\n%s", p.Addr, within, nmproc.Tail(p.Output(), 8000))
}

// waitServing waits until the netmaster answers the model API (itself as
// the leader, or proxying to one).
func waitServing(t testing.TB, p *nmproc.Proc, within time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-p.Done():
			t.Fatalf("netmaster %s exited; output:\n%s", p.Addr, nmproc.Tail(p.Output(), 8000))
		default:
		}
		if _, err := do(context.Background(), hc, p.URL(), "GET", "/api/v1/networks/", ""); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("netmaster %s not serving within %v; output:\n%s", p.Addr, within, nmproc.Tail(p.Output(), 8000))
}
