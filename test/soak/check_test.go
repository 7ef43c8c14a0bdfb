package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/test/stall"
	"github.com/contiv/netplugin/test/testbed"
)

// hostState is what a host holds of the soak's network.
type hostState struct {
	ports     []string // endpoint ports (vvport*) on the contiv bridge
	flows     int      // flows on the contiv bridge
	addrFlows []string // flows naming an endpoint address of the soak's network
	groups    int      // OpenFlow groups on the contiv bridge
	veths     int      // veth links in the host's namespace
	conntrack []string // conntrack entries naming a soak address
	records   []string // CNI attachment records
}

func readHost(h *testbed.Host) (hostState, error) {
	var s hostState
	out, err := h.Vsctl("list-ports", bridge)
	if err != nil {
		return s, fmt.Errorf("list ports on %s: %w", h.Name, err)
	}
	for _, p := range strings.Fields(out) {
		if strings.HasPrefix(p, "vvport") {
			s.ports = append(s.ports, p)
		}
	}
	flows, err := h.DumpFlows(bridge)
	if err != nil {
		return s, fmt.Errorf("flows on %s: %w", h.Name, err)
	}
	s.flows = len(flows)
	for _, f := range flows {
		for _, m := range soakAddrRE.FindAllStringSubmatch(f, -1) {
			if m[1] == "" && !strings.HasPrefix(m[0], soakGateway) {
				s.addrFlows = append(s.addrFlows, f)
				break
			}
		}
	}
	groups, err := h.OVS.Groups(bridge)
	if err != nil {
		return s, fmt.Errorf("groups on %s: %w", h.Name, err)
	}
	s.groups = len(groups)
	out, err = h.Exec("ip", "-o", "link", "show", "type", "veth")
	if err != nil {
		return s, fmt.Errorf("veths on %s: %w: %s", h.Name, err, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			s.veths++
		}
	}
	out, err = h.OVS.Exec("ovs-appctl", "-t", filepath.Join(h.OVS.Dir, "ovs-vswitchd.ctl"), "dpctl/dump-conntrack")
	if err != nil {
		return s, fmt.Errorf("conntrack on %s: %w: %s", h.Name, err, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if soakAddrRE.MatchString(l) {
			s.conntrack = append(s.conntrack, l)
		}
	}
	entries, err := os.ReadDir(h.CNIStateDir())
	if err != nil && !os.IsNotExist(err) {
		return s, err
	}
	for _, e := range entries {
		s.records = append(s.records, e.Name())
	}
	return s, nil
}

// leaks compares a host's state with its state before any workload.
func (s hostState) leaks(h *testbed.Host, base hostState) []string {
	var l []string
	if len(s.ports) > len(base.ports) {
		l = append(l, fmt.Sprintf("%s: endpoint ports left: %v (before: %v)", h.Name, s.ports, base.ports))
	}
	if len(s.addrFlows) > 0 {
		l = append(l, fmt.Sprintf("%s: %d flow(s) name a deleted endpoint, e.g. %s", h.Name, len(s.addrFlows), s.addrFlows[0]))
	}
	if s.flows > base.flows {
		l = append(l, fmt.Sprintf("%s: %d flows, %d before the workloads", h.Name, s.flows, base.flows))
	}
	if s.groups > base.groups {
		l = append(l, fmt.Sprintf("%s: %d groups, %d before the workloads", h.Name, s.groups, base.groups))
	}
	if s.veths > base.veths {
		l = append(l, fmt.Sprintf("%s: %d veths, %d before the workloads", h.Name, s.veths, base.veths))
	}
	if len(s.conntrack) > 0 {
		l = append(l, fmt.Sprintf("%s: %d conntrack entries of the soak's addresses, e.g. %s", h.Name, len(s.conntrack), s.conntrack[0]))
	}
	if len(s.records) > len(base.records) {
		l = append(l, fmt.Sprintf("%s: CNI attachment records left: %v", h.Name, s.records))
	}
	return l
}

// waitClean waits (bounded) until nothing of the deleted workloads is
// left and returns what still is.
func waitClean(ctx context.Context, t *testing.T, tb *testbed.Testbed, cri *testbed.CRI, st objdb.Store, base map[*testbed.Host]hostState) []string {
	deadline := time.Now().Add(cleanWithin)
	var seen string // what was left at the last look, logged when it changes
	for {
		var leaks []string
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		own, err := stall.CheckNetwork(cctx, st, soakNetID, soakGateway)
		cancel()
		if err != nil {
			leaks = append(leaks, fmt.Sprintf("read the store: %v", err))
		} else {
			leaks = append(leaks, own.Failures()...)
			for id, ip := range own.IPs {
				leaks = append(leaks, fmt.Sprintf("endpoint record %s (%s) left", id, ip))
			}
			if own.Leaked > 0 {
				leaks = append(leaks, fmt.Sprintf("%d address(es) taken in the pool without an owner", own.Leaked))
			}
			if own.EpCount != 0 {
				leaks = append(leaks, fmt.Sprintf("the network still counts %d endpoint(s)", own.EpCount))
			}
		}
		for _, h := range tb.Hosts {
			s, err := readHost(h)
			if err != nil {
				leaks = append(leaks, err.Error())
				continue
			}
			leaks = append(leaks, s.leaks(h, base[h])...)
		}
		if ids, err := cri.Sandboxes(); err != nil || len(ids) > 0 {
			leaks = append(leaks, fmt.Sprintf("%s: pod sandboxes left: %v %v", cri.Host.Name, ids, err))
		}
		for _, h := range tb.Hosts {
			if e := h.Engine(); e != nil {
				if out, err := h.Docker("ps", "-aq"); err != nil || out != "" {
					leaks = append(leaks, fmt.Sprintf("%s: containers left: %q %v", h.Name, out, err))
				}
			}
		}
		if now := strings.Join(leaks, "; "); now != seen && len(leaks) > 0 {
			t.Logf("soak: %v after the last deletion, left: %s", (cleanWithin - time.Until(deadline)).Round(time.Second), now)
			seen = now
		}
		if len(leaks) == 0 || time.Now().After(deadline) {
			if len(leaks) == 0 {
				t.Logf("soak: clean %v after the last deletion", cleanWithin-time.Until(deadline))
			}
			return leaks
		}
		time.Sleep(time.Second)
	}
}

// ---- daemon figures --------------------------------------------------

// procFigures are one daemon's runtime figures from its /metrics (the Go
// collector's numbers, the ones pprof's heap and goroutine profiles show).
type procFigures struct {
	started    float64 // process_start_time_seconds: tells a restarted process apart
	goroutines float64
	heapInuse  float64
	rss        float64
	// From /debug/pprof: the goroutine profile's total and the heap
	// profile's HeapAlloc.
	pprofGoroutines, pprofHeapAlloc float64
	leader                          float64      // contiv_netmaster_leader (netmaster)
	base                            string       // the daemon's URL
	client                          *http.Client // reaches base (netplugin's inspect server is on its host's loopback)
}

func figures(t *testing.T, tb *testbed.Testbed) map[string]procFigures {
	t.Helper()
	out := map[string]procFigures{}
	type target struct {
		url    string
		client *http.Client
	}
	targets := map[string]target{}
	for i, m := range tb.Masters {
		targets[fmt.Sprintf("netmaster%d", i)] = target{m.URL(), tb.HTTPClient()}
	}
	for _, h := range tb.Hosts {
		targets["netplugin-"+h.Name] = target{h.InspectURL(), h.HTTPClient()}
	}
	for name, tg := range targets {
		u := tg.url
		f, err := scrape(tg.client, u+"/metrics")
		if err == nil {
			err = scrapePprof(tg.client, u, &f)
		}
		if err != nil {
			t.Logf("soak: figures of %s: %v", name, err)
			continue
		}
		f.base, f.client = u, tg.client
		out[name] = f
		t.Logf("soak: figures %s goroutines=%.0f heap_inuse_mib=%.1f rss_mib=%.1f pprof_goroutines=%.0f pprof_heap_alloc_mib=%.1f",
			name, f.goroutines, f.heapInuse/(1<<20), f.rss/(1<<20), f.pprofGoroutines, f.pprofHeapAlloc/(1<<20))
	}
	return out
}

func get(c *http.Client, u string) (string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return string(b), err
}

// scrapePprof reads the goroutine profile's total and the heap profile's
// HeapAlloc (debug=1 text).
func scrapePprof(c *http.Client, base string, f *procFigures) error {
	g, err := get(c, base+"/debug/pprof/goroutine?debug=1")
	if err != nil {
		return err
	}
	if _, err := fmt.Sscanf(g, "goroutine profile: total %f", &f.pprofGoroutines); err != nil {
		return fmt.Errorf("goroutine profile: %w", err)
	}
	h, err := get(c, base+"/debug/pprof/heap?debug=1")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(h, "\n") {
		if v, ok := strings.CutPrefix(l, "# HeapAlloc = "); ok {
			f.pprofHeapAlloc, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return nil
}

func scrape(c *http.Client, u string) (procFigures, error) {
	var f procFigures
	resp, err := c.Get(u)
	if err != nil {
		return f, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return f, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "process_start_time_seconds":
			f.started = v
		case "go_goroutines":
			f.goroutines = v
		case "go_memstats_heap_inuse_bytes":
			f.heapInuse = v
		case "process_resident_memory_bytes":
			f.rss = v
		case "contiv_netmaster_leader":
			f.leader = v
		}
	}
	return f, sc.Err()
}

// compareFigures checks the daemons that ran the whole time (same start
// time at both ends): as many goroutines at the end, everything deleted,
// as at the start (a little slack for idle connections), and logs both
// ends' memory.
func compareFigures(t *testing.T, tb *testbed.Testbed, start, end map[string]procFigures) {
	t.Helper()
	for name, s := range start {
		e, ok := end[name]
		if !ok {
			continue
		}
		// A netmaster that became or stopped being the leader runs other
		// goroutines: only the same process in the same role compares.
		same := s.started == e.started && s.leader == e.leader
		t.Logf("soak: flat %s same_process_and_role=%v goroutines %.0f->%.0f heap_inuse_mib %.1f->%.1f rss_mib %.1f->%.1f",
			name, same, s.goroutines, e.goroutines, s.heapInuse/(1<<20), e.heapInuse/(1<<20), s.rss/(1<<20), e.rss/(1<<20))
		if same && e.goroutines > s.goroutines+max(20, s.goroutines/4) {
			prof, _ := get(e.client, e.base+"/debug/pprof/goroutine?debug=1")
			if len(prof) > 8000 {
				prof = prof[:8000]
			}
			t.Errorf("%s: %.0f goroutines at the end, %.0f at the start: a goroutine leak; its goroutine profile:\n%s", name, e.goroutines, s.goroutines, prof)
		}
	}
}
