package cni

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/bench/benchstat"
	"github.com/contiv/netplugin/test/testbed"
)

// criRuns is the number of pod sandboxes measured per plugin.
const criRuns = 30

// BenchmarkCNIAddCRI measures the CNI ADD as a kubelet's runtime makes
// it: "crictl runp" against a containerd with its CRI plugin inside the
// simulated host, which creates the pod's namespace and calls the
// network's plugins. Two runtimes run side by side on the host, one
// configured with contivk8s, one with Debian's reference bridge plugin
// (host-local IPAM); their sandboxes alternate, so both see the same
// machine load. The figure is the whole runp (sandbox and ADD); the
// difference between the two is the plugins'. Each sandbox is stopped
// and removed (untimed) before the next.
//
//	flock /tmp/contiv-nettest.lock env CI=true go test ./test/bench/cni -run '^$' -bench CNIAddCRI -benchtime 1x
func BenchmarkCNIAddCRI(b *testing.B) {
	if _, err := os.Stat(filepath.Join(refPlugins, "bridge")); err != nil {
		testbed.RequireComponent(b, "reference bridge plugin (containernetworking-plugins)", err)
	}
	tb := testbed.New(b, testbed.Config{Hosts: 1, NetpluginArgs: []string{"--mode", "kubernetes"}})
	if out, err := tb.Netctl("net", "create", "--encap", "vxlan", "--subnet", "198.19.64.0/20", "--gateway", "198.19.79.254", "default-net"); err != nil {
		b.Fatalf("net create: %v\n%s", err, out)
	}
	h := tb.Hosts[0]
	contiv := h.StartCRI(b, testbed.CRIOptions{Name: "cri-contiv"})
	bridgeConf := fmt.Appendf(nil,
		`{"cniVersion":"1.0.0","name":"ref-bridge","plugins":[{"type":"bridge","bridge":"cbr1","isGateway":false,"ipMasq":false,`+
			`"ipam":{"type":"host-local","ranges":[[{"subnet":"198.19.80.0/20"}]],"dataDir":%q}}]}`, b.TempDir())
	bridge := h.StartCRI(b, testbed.CRIOptions{Name: "cri-bridge", ConfList: bridgeConf,
		Plugins: []string{filepath.Join(refPlugins, "bridge"), filepath.Join(refPlugins, "host-local")}})
	for i := 0; i < b.N; i++ {
		var tc, tr []time.Duration
		for j := 0; j < criRuns; j++ {
			for _, r := range []struct {
				cri *testbed.CRI
				out *[]time.Duration
			}{{contiv, &tc}, {bridge, &tr}} {
				start := time.Now()
				p, err := r.cri.TryRunPod(testbed.PodConfig{Name: fmt.Sprintf("bench-%d-%d", i, j), Namespace: "bench"})
				d := time.Since(start)
				if err != nil {
					b.Fatalf("runp on %s: %v\n%s", r.cri.Dir, err, r.cri.Logs(30))
				}
				*r.out = append(*r.out, d)
				if err := p.Stop(); err != nil {
					b.Fatal(err)
				}
				if err := p.Remove(); err != nil {
					b.Fatal(err)
				}
			}
		}
		r := benchstat.ReportPair(b, "contivk8s", tc, "bridge", tr)
		b.Logf("crictl runp (sandbox + CNI ADD) over %d pods each: contivk8s p50 %.1f ms p99 %.1f ms; bridge p50 %.1f ms p99 %.1f ms; ratio p50 %.2f p99 %.2f",
			criRuns, r.A50, r.A99, r.B50, r.B99, r.Ratio50(), r.Ratio99())
	}
}
