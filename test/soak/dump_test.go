package soak

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// dumpTimeout bounds each look of a dump (a daemon that hangs must not
// hang the dump).
const dumpTimeout = 10 * time.Second

// dumper writes the cluster's state, at the moment an invariant fails and
// before anything is stopped or deleted, to files under $SOAK_LOG_DIR
// (docs/soak.md, "When it fails"): per host the OpenFlow flows and groups
// of both bridges, ovs-vsctl show, netplugin's /inspect/driver (the ofnet
// agents' state: masters, VTEPs, endpoints, installed flows), its
// goroutines and whole log, the host's TCP sockets (the agents' RPC
// connections); per netmaster /info, /debug/ofnet (the leader's ofnet
// master: agents, queues, calls sent and failed), goroutines, whole log
// and TCP sockets; the etcd members' log tails; each long-lived
// workload's addresses, neighbours and routes; and the pairs' last
// successes.
type dumper struct {
	t     *testing.T
	tb    *testbed.Testbed
	cri   *testbed.CRI
	pairs []*pair
	long  []*testbed.Container // the long-lived workloads

	mu sync.Mutex
	n  int // dumps made
}

// dumpDir is where dumps go: $SOAK_LOG_DIR/<testbed prefix>, or a folder
// under the system's temporary folder when the variable is not set.
func dumpDir(prefix string) string {
	if dir := os.Getenv("SOAK_LOG_DIR"); dir != "" {
		return filepath.Join(dir, prefix)
	}
	return filepath.Join(os.TempDir(), "soak-"+prefix)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// dump writes one dump named after why and logs where it is.
func (d *dumper) dump(why string) {
	d.mu.Lock()
	d.n++
	n := d.n
	d.mu.Unlock()
	name := fmt.Sprintf("%02d-%s", n, strings.Trim(unsafeName.ReplaceAllString(why, "-"), "-"))
	if len(name) > 80 {
		name = name[:80]
	}
	dir := filepath.Join(dumpDir(d.tb.Prefix), name)
	start := time.Now()
	if err := d.write(dir, why); err != nil {
		d.t.Logf("soak: dump: %v", err)
		return
	}
	d.t.Logf("soak: state at the failure dumped to %s (%v)", dir, time.Since(start).Round(time.Millisecond))
}

func (d *dumper) write(dir, why string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dump folder: %w", err)
	}
	put := func(name, text string, err error) {
		if err != nil {
			text += "\n(error: " + err.Error() + ")\n"
		}
		if werr := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); werr != nil {
			d.t.Logf("soak: dump %s: %v", name, werr)
		}
	}
	put("summary.txt", d.summary(why), nil)
	for _, h := range d.tb.Hosts {
		p := "host-" + h.Name + "-"
		for _, br := range testbed.ContivBridges {
			out, err := h.Ofctl("dump-flows", br)
			put(p+"flows-"+br+".txt", out, err)
			out, err = h.Ofctl("dump-groups", br)
			put(p+"groups-"+br+".txt", out, err)
		}
		out, err := h.Vsctl("show")
		put(p+"ovs-vsctl-show.txt", out, err)
		out, err = h.Exec("ss", "-tanpoi")
		put(p+"sockets.txt", out, err)
		hc := h.HTTPClient()
		for _, q := range []struct{ file, path string }{
			{"inspect-driver.json", "/inspect/driver"},
			{"goroutines.txt", "/debug/pprof/goroutine?debug=2"},
		} {
			out, err := fetch(hc, h.InspectURL()+q.path)
			put(p+q.file, out, err)
		}
		put(p+"netplugin.log", h.Logs(), nil)
	}
	hc := d.tb.HTTPClient()
	for i, m := range d.tb.Masters {
		p := fmt.Sprintf("netmaster%d-", i)
		if !m.Running() {
			put(p+"not-running.txt", "", nil)
		} else {
			for _, q := range []struct{ file, path string }{
				{"info.json", "/info"},
				{"ofnet.json", "/debug/ofnet"},
				{"goroutines.txt", "/debug/pprof/goroutine?debug=2"},
			} {
				out, err := fetch(hc, m.URL()+q.path)
				put(p+q.file, out, err)
			}
		}
		out, err := nsRun(m.NS, "ss", "-tanpoi")
		put(p+"sockets.txt", out, err)
		put(p+"netmaster.log", m.Logs(), nil)
	}
	put("etcd.log", d.tb.EtcdLogTails(300), nil)
	if d.cri != nil {
		put("containerd.log", d.cri.Logs(300), nil)
	}
	for _, c := range d.long {
		var b strings.Builder
		for _, args := range [][]string{{"ip", "addr"}, {"ip", "neigh"}, {"ip", "route"}} {
			out, err := c.Exec(args...)
			fmt.Fprintf(&b, "--- %s ---\n%s%s\n", strings.Join(args, " "), out, errNote(err))
		}
		put("workload-"+c.Name+".txt", b.String(), nil)
	}
	return nil
}

// summary is why, when, and the long-lived pairs' last successes.
func (d *dumper) summary(why string) string {
	var b strings.Builder
	now := time.Now()
	fmt.Fprintf(&b, "why: %s\nat: %s\ntestbed: %s\n", why, now.UTC().Format(time.RFC3339Nano), d.tb.Prefix)
	for _, p := range d.pairs {
		tcp, udp := p.last()
		fmt.Fprintf(&b, "pair %s (to %s): last TCP %s, last UDP %s, server exited %v\n", p.name, p.to,
			ago(now, tcp), ago(now, udp), p.server != nil && p.server.Exited())
	}
	if l := d.tb.Leader(); l != nil {
		fmt.Fprintf(&b, "netmaster leader: %s\n", l.Addr())
	} else {
		b.WriteString("netmaster leader: none\n")
	}
	for _, h := range d.tb.Hosts {
		fmt.Fprintf(&b, "host %s (vtep %s): netplugin running %v\n", h.Name, h.IP, h.NetpluginRunning())
	}
	return b.String()
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("%s (%.1f s ago)", t.UTC().Format("15:04:05.000"), now.Sub(t).Seconds())
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return "(error: " + err.Error() + ")\n"
}

// fetch is get bounded by dumpTimeout.
func fetch(c *http.Client, u string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dumpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return string(b), err
}

// nsRun runs a program in a namespace, bounded by dumpTimeout.
func nsRun(ns string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dumpTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...).CombinedOutput()
	return string(out), err
}
