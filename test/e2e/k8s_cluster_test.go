package e2e

import (
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// kubeTestbed starts a testbed of hosts hosts whose netplugins run in
// kubernetes mode and watch a real kube-apiserver started in the first
// netmaster's namespace (--k8s-config). Every Kubernetes end-to-end test
// sets up through here; extra netplugin arguments go in npArgs.
func kubeTestbed(t *testing.T, hosts int, npArgs ...string) (*testbed.Testbed, *testbed.KubeAPIServer) {
	t.Helper()
	args := append([]string{"--mode", "kubernetes"}, npArgs...)
	tb := testbed.New(t, testbed.Config{Hosts: hosts, SkipNetplugin: true, NetpluginArgs: args})
	m := tb.Masters[0]
	k := testbed.StartKubeAPIServer(t, testbed.KubeOptions{NS: m.NS, IP: m.IP, Port: 6443, EtcdPort: 23790})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- kube-apiserver ---\n%s", k.Logs(30))
		}
	})
	tb.Config.NetpluginArgs = append(tb.Config.NetpluginArgs, "--k8s-config", k.Kubeconfig)
	for _, h := range tb.Hosts {
		h.StartNetplugin(t)
	}
	tb.WaitNetplugins(t, hosts, 90*time.Second)
	return tb, k
}
