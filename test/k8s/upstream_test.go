package k8s

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestKubernetesUpstreamSuites runs the upstream Kubernetes network e2e
// suites (scripts/k8s-e2e.sh, docs/k8s.md "Upstream e2e suites") against
// the kubelet-managed testbed cluster: the test images are imported into
// both nodes' containerd, then e2e.test runs in the API server's
// namespace. CONTIV_K8S_E2E names the suite (ci, netpol, conformance,
// full, or the chunks netpol1..4 and conformance1..2); with CI=true and no suite named it runs the CI subset (one case
// per NetworkPolicy shape, the granular pod checks, Services and DNS: a
// few minutes once e2e.test is built; scripts/test.sh builds it in the
// background). CONTIV_K8S_E2E_FOCUS replaces the suite's focus by one
// regular expression, to run a long suite in chunks; CONTIV_K8S_E2E_SKIP
// adds one --ginkgo.skip expression (the cases a cut-short chunk ran):
//
//	CONTIV_K8S_E2E=netpol flock /tmp/contiv-nettest.lock go test ./test/k8s -run TestKubernetesUpstreamSuites -timeout 90m -v
func TestKubernetesUpstreamSuites(t *testing.T) {
	suite := os.Getenv("CONTIV_K8S_E2E")
	if suite == "" && os.Getenv("CI") == "true" {
		suite = "ci"
	}
	if suite == "" {
		t.Skip("set CONTIV_K8S_E2E=ci|netpol|conformance|full|netpol1..4|conformance1..2 to run the upstream suites (CI runs ci)")
	}
	script, err := filepath.Abs("../../scripts/k8s-e2e.sh")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 85*time.Minute)
	defer cancel()
	// The binaries first (cached; a fresh machine builds them for many
	// minutes), so the cluster does not idle meanwhile.
	build := exec.CommandContext(ctx, "bash", script)
	build.Env = append(os.Environ(), "BUILD_ONLY=1")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("k8s-e2e.sh (build): %v\n%s", err, b)
	}

	c := testbed.StartKubeCluster(t, testbed.KubeClusterOptions{Nodes: 2})
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("--- netplugin %s ---\n%s", n.Name, lastLines(n.Host.Logs(), 30))
			}
		}
	})
	out := t.TempDir()
	if d := os.Getenv("CONTIV_K8S_E2E_OUT"); d != "" {
		out = d // kept after the test, for reading e2e.log
	}
	path := filepath.Dir(c.KubectlBin) + ":" + os.Getenv("PATH")

	args := []string{script, "-o", out}
	for _, n := range c.Nodes {
		args = append(args, "-c", n.CRI.Socket)
	}
	imgs := exec.CommandContext(ctx, "bash", args...)
	imgs.Env = append(os.Environ(), "IMAGES_ONLY=1", "PATH="+path)
	if b, err := imgs.CombinedOutput(); err != nil {
		t.Fatalf("k8s-e2e.sh (images): %v\n%s", err, b)
	}

	args = []string{"netns", "exec", c.API.NS, "bash", script, "-k", c.API.Kubeconfig, "-s", suite, "-o", out}
	if f := os.Getenv("CONTIV_K8S_E2E_FOCUS"); f != "" {
		args = append(args, "-f", f)
	}
	var extra []string
	if sk := os.Getenv("CONTIV_K8S_E2E_SKIP"); sk != "" {
		// One more --ginkgo.skip: the rest of a chunk that was cut short.
		extra = append(extra, "--ginkgo.skip", sk)
	}
	// Ginkgo stops in time for the report, the counts and this test's
	// cleanup (a go test timeout would leave the cluster behind).
	if dl, ok := t.Deadline(); ok {
		left := time.Until(dl) - 2*time.Minute
		if left < time.Minute {
			t.Fatalf("%v left before the test deadline: too little for the suite", time.Until(dl))
		}
		extra = append(extra, "--ginkgo.timeout", left.Round(time.Second).String())
	}
	if len(extra) > 0 {
		args = append(append(args, "--"), extra...)
	}
	run := exec.CommandContext(ctx, "ip", args...)
	run.Env = append(os.Environ(), "NO_IMAGES=1", "PATH="+path)
	start := time.Now()
	b, err := run.CombinedOutput()
	t.Logf("k8s-e2e.sh -s %s (%v):\n%s", suite, time.Since(start).Round(time.Second), b)
	if cmd, rerr := os.ReadFile(filepath.Join(out, "command")); rerr == nil {
		t.Logf("command: %s", cmd)
	}
	// NetworkPolicy enforcement time under the suite's load: each
	// netplugin logs every applied result with its latency (docs/k8s.md
	// "NetworkPolicy").
	var lats []time.Duration
	for _, n := range c.Nodes {
		lats = append(lats, netpolApplyLatencies(n.Host.Logs(), start)...)
	}
	t.Logf("networkpolicy apply latency during the suite (%d results on %d nodes): %s",
		len(lats), len(c.Nodes), latencySummary(lats))
	if m := regexp.MustCompile(`pass=\d+ fail=\d+ skip=\d+`).Find(b); m == nil {
		t.Errorf("no counts in the output (e2e.test log: %s)", filepath.Join(out, "e2e.log"))
	}
	if err != nil {
		t.Errorf("k8s-e2e.sh -s %s: %v", suite, err)
	}
}
