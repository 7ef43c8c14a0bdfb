// Package cni benchmarks CNI ADD latency of contivk8s (through netplugin's
// CNI server, netmaster and OVS on a simulated host) against Debian's
// reference bridge plugin (containernetworking-plugins, /usr/lib/cni)
// doing the same ADD in the same run, both driven by libcni as cnitool
// and the runtimes do, both run inside the host's namespace.
//
//	flock /tmp/contiv-nettest.lock go test ./test/bench/cni -run '^$' -bench . -benchtime 1x
package cni

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
	"golang.org/x/sys/unix"

	"github.com/contiv/netplugin/test/bench/benchstat"
	"github.com/contiv/netplugin/test/testbed"
)

// runs is the number of ADDs measured per plugin.
const runs = 40

// refPlugins is where Debian installs the reference plugins.
const refPlugins = "/usr/lib/cni"

// nsExec runs plugins in the simulated host's namespace, so the bridge
// plugin's bridge lives there and not in the machine's namespace. They
// are started from a thread of this process that has entered that
// namespace (a child inherits its parent thread's namespace), not under
// nsenter: the runtimes start plugins directly, and nsenter added an exec
// of its own to every ADD of both plugins (docs/scale.md).
type nsExec struct {
	nsPath string
	raw    invoke.RawExec
	starts chan nsStart // served by the thread in the namespace
}

type nsStart struct {
	cmd  *exec.Cmd
	done chan error
}

// startThread starts the thread in the namespace; it serves until ctx
// ends, then exits with its thread (never returned to the runtime with
// the namespace changed).
func (e *nsExec) startThread(ctx context.Context) error {
	e.starts = make(chan nsStart)
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		f, err := os.Open(e.nsPath)
		if err == nil {
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
			f.Close()
		}
		ready <- err
		if err != nil {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-e.starts:
				s.done <- s.cmd.Start()
			}
		}
	}()
	return <-ready
}

func (e *nsExec) ExecPlugin(ctx context.Context, pluginPath string, stdin []byte, environ []string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, pluginPath)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = environ, bytes.NewReader(stdin), &stdout, &stderr
	s := nsStart{cmd: cmd, done: make(chan error, 1)}
	var err error
	select {
	case e.starts <- s:
		if err = <-s.done; err == nil {
			err = cmd.Wait()
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		var ce types.Error
		if json.Unmarshal(stdout.Bytes(), &ce) == nil && ce.Msg != "" {
			return nil, &ce
		}
		return nil, fmt.Errorf("%s: %w: %s", pluginPath, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func (e *nsExec) FindInPath(plugin string, paths []string) (string, error) {
	return e.raw.FindInPath(plugin, paths)
}

func (e *nsExec) Decode(b []byte) (version.PluginInfo, error) {
	return (&version.PluginDecoder{}).Decode(b)
}

func BenchmarkCNIAdd(b *testing.B) {
	if _, err := os.Stat(filepath.Join(refPlugins, "bridge")); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatalf("the reference bridge plugin is required in CI (containernetworking-plugins): %v", err)
		}
		b.Skipf("reference bridge plugin not installed: %v", err)
	}
	plugin, err := testbed.BuildCNIPlugin()
	if err != nil {
		b.Fatal(err)
	}
	tb := testbed.New(b, testbed.Config{Hosts: 1, NetpluginArgs: []string{"--mode", "kubernetes"}})
	if out, err := tb.Netctl("net", "create", "--encap", "vxlan", "--subnet", "198.19.32.0/20", "--gateway", "198.19.47.254", "default-net"); err != nil {
		b.Fatalf("net create: %v\n%s", err, out)
	}
	h := tb.Hosts[0]
	nsx := &nsExec{nsPath: "/var/run/netns/" + h.NS}
	tctx, stopThread := context.WithCancel(context.Background())
	defer stopThread()
	if err := nsx.startThread(tctx); err != nil {
		b.Fatalf("enter the host's namespace: %v", err)
	}
	cninet := libcni.NewCNIConfigWithCacheDir([]string{filepath.Dir(plugin), refPlugins}, b.TempDir(), nsx)
	contiv, err := libcni.ConfListFromBytes(fmt.Appendf(nil,
		`{"cniVersion":"1.0.0","name":"contiv-net","plugins":[{"type":"contivk8s","socket":%q,"logFile":%q}]}`,
		h.CNISocket(), filepath.Join(h.Dir, "contivk8s.log")))
	if err != nil {
		b.Fatal(err)
	}
	bridge, err := libcni.ConfListFromBytes(fmt.Appendf(nil,
		`{"cniVersion":"1.0.0","name":"ref-bridge","plugins":[{"type":"bridge","bridge":"cbr0","isGateway":false,"ipMasq":false,`+
			`"ipam":{"type":"host-local","ranges":[[{"subnet":"198.19.48.0/20"}]],"dataDir":%q}}]}`, b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		var tc, tr []time.Duration
		for j := 0; j < runs; j++ {
			for _, p := range []struct {
				list *libcni.NetworkConfigList
				out  *[]time.Duration
			}{{contiv, &tc}, {bridge, &tr}} {
				c := h.NewContainerNS(b, fmt.Sprintf("%s-%d-%d", p.list.Name, i, j))
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				start := time.Now()
				_, err := cninet.AddNetworkList(ctx, p.list, &libcni.RuntimeConf{ContainerID: c.NS, NetNS: c.NSPath(), IfName: "eth0",
					Args: [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "bench"}, {"K8S_POD_NAME", c.Name}}})
				*p.out = append(*p.out, time.Since(start))
				cancel()
				if err != nil {
					b.Fatalf("%s ADD: %v", p.list.Name, err)
				}
			}
		}
		r := benchstat.ReportPair(b, "contivk8s", tc, "bridge", tr)
		b.Logf("ADD latency over %d runs each: contivk8s p50 %.1f ms p99 %.1f ms; bridge p50 %.1f ms p99 %.1f ms; ratio p50 %.2f (goal <= 1.2), p99 %.2f (goal <= 1.5)",
			runs, r.A50, r.A99, r.B50, r.B99, r.Ratio50(), r.Ratio99())
	}
	// The bridge plugin ran in the simulated host (its bridge is there).
	if out, err := exec.Command("ip", "-n", h.NS, "link", "show", "cbr0").CombinedOutput(); err != nil {
		b.Fatalf("the bridge plugin's cbr0 is not in the host's namespace %s: %v\n%s", h.NS, err, out)
	}
	logPhases(b, "contivk8s", readFile(filepath.Join(h.Dir, "contivk8s.log")), "ADD done")
	logPhases(b, "netplugin", h.Logs(), "CNI ADD done")
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// phaseField is a step time logged with an ADD (utils/phase).
var phaseField = regexp.MustCompile(`(?:^|\s)phase\.([\w.]+)=([0-9.]+)`)

// logPhases reports the p50 and p99 of each step logged (in ms) on the
// lines of log whose message is msg: the contivk8s binary's own time and
// its call to netplugin, and netplugin's steps of the ADD (docs/scale.md).
func logPhases(b *testing.B, who, log, msg string) {
	steps := map[string][]time.Duration{}
	var order []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="`+msg+`"`) {
			continue
		}
		for _, m := range phaseField.FindAllStringSubmatch(line, -1) {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				continue
			}
			if _, ok := steps[m[1]]; !ok {
				order = append(order, m[1])
			}
			steps[m[1]] = append(steps[m[1]], time.Duration(v*float64(time.Millisecond)))
		}
	}
	sort.Strings(order)
	var out strings.Builder
	for _, name := range order {
		p50, p99 := benchstat.PercentileMs(steps[name], 50), benchstat.PercentileMs(steps[name], 99)
		fmt.Fprintf(&out, "\n  %-14s n=%-3d p50 %7.2f ms  p99 %7.2f ms", name, len(steps[name]), p50, p99)
		b.ReportMetric(p50, who+"-"+name+"-ms-p50")
	}
	b.Logf("%s steps of an ADD:%s", who, out.String())
}
