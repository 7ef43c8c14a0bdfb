package k8s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv/netplugin/test/testbed"
)

// installTimeout bounds contiv's pods' way to Ready after the apply.
const installTimeout = 4 * time.Minute

// TestInstallFromManifests is issue 26's install acceptance: on a
// two-node kubelet cluster without any contiv daemon of the testbed,
// contiv is installed as docs/k8s.md "Installing on a cluster" tells an
// operator — the site's ConfigMap and Secrets, the images of
// scripts/build-images.sh imported into every node's containerd,
// `kubectl apply -f packaging/k8s/`, the two networks with netctl — and
// then serves pods at default settings: probes, TCP and UDP pod ↔ pod
// across nodes, a ClusterIP Service, CoreDNS names from pods, a NodePort
// from the other node, a pod's hostPort (the image's portmap plugin).
// Workloads and networks deleted, `kubectl delete -f packaging/k8s/`
// leaves no contiv bridge, port, flow, address, route, CNI file (the
// conflist, contivk8s, contiv-portmap) or record on the nodes and no record of a node or endpoint in
// the store (the DaemonSet's cleanup container).
func TestInstallFromManifests(t *testing.T) {
	start := time.Now()
	c := testbed.StartKubeCluster(t, testbed.KubeClusterOptions{ContivFromManifests: true, NoCoreDNS: false})
	n0, n1 := c.Nodes[0], c.Nodes[1]
	t.Logf("cluster (no contiv) up in %v", time.Since(start).Round(time.Second))
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("--- kubelet %s ---\n%s", n.Name, n.KubeletLogs(40))
			}
			out, _ := c.Kubectl("get", "pods", "-A", "-o", "wide")
			t.Logf("--- pods ---\n%s", out)
			// kubectl logs cannot reach the kubelets by node name: read
			// the containers' logs on the nodes.
			for _, n := range c.Nodes {
				logs, _ := filepath.Glob(filepath.Join(n.Dir, "logs", "kube-system_contiv-*", "*", "*.log"))
				for _, f := range logs {
					b, _ := os.ReadFile(f)
					t.Logf("--- %s ---\n%s", f, lastLines(string(b), 40))
				}
			}
			out, _ = c.Kubectl("-n", "kube-system", "describe", "pods", "-l", "app.kubernetes.io/part-of=contiv")
			t.Logf("--- contiv pods ---\n%s", lastLines(out, 80))
		}
	})
	dir, err := testbed.ManifestsDir()
	if err != nil {
		t.Fatal(err)
	}

	c.InstallContivSite(t)
	if _, err := c.Kubectl("apply", "-f", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitPodsReady("kube-system", "app.kubernetes.io/name=contiv-netmaster", 2, installTimeout); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"net", "create", "--encap", "vxlan", "--subnet", testbed.KubePodSubnet, "--gateway", testbed.KubePodGateway, testbed.KubePodNetwork},
		{"net", "create", "--nw-type", "infra", "--encap", "vxlan", "--subnet", testbed.KubeHostSubnet, "--gateway", testbed.KubeHostGateway, testbed.KubeHostNetwork},
	} {
		if out, err := c.ContivNetctl(args...); err != nil {
			t.Fatalf("netctl %v: %v\n%s", args, err, out)
		}
	}
	if _, err := c.WaitPodsReady("kube-system", "app.kubernetes.io/name=contiv-netplugin", len(c.Nodes), installTimeout); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if err := c.WaitNodeReady(n.Name, installTimeout); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("contiv installed from %s and nodes Ready at %v", dir, time.Since(start).Round(time.Second))
	c.DeployCoreDNS(t)

	if err := c.KubectlApply(webManifest()); err != nil {
		t.Fatal(err)
	}
	byNode := webPods(t, c, 2)
	if len(byNode) != 2 {
		t.Fatalf("web pods on %d nodes, want 2: %v", len(byNode), byNode)
	}
	ip0, ip1 := byNode[n0.Name].Status.PodIP, byNode[n1.Name].Status.PodIP
	t.Logf("web pods Ready (HTTP probes from the kubelets): %s on %s, %s on %s", ip0, n0.Name, ip1, n1.Name)

	t.Run("pods, services and dns", func(t *testing.T) {
		for i, pair := range [][2]string{{n0.Name, ip1}, {n1.Name, ip0}} {
			msg := checkPod(t, c, fmt.Sprintf("install-check-%d", i), pair[0],
				"-tcp", pair[1]+":7000", "-udp", pair[1]+":7000",
				"-lookup", "kubernetes.default.svc.cluster.local",
				"-lookup", "web.default.svc.cluster.local",
				"-http", "https://kubernetes.default.svc/healthz",
				"-http", "http://web/name",
				"-tcp", "web:7000", "-udp", "web:7000")
			t.Logf("check pod on %s:\n%s", pair[0], msg)
		}
	})

	t.Run("node to pod", func(t *testing.T) {
		for _, n := range c.Nodes {
			for _, ip := range []string{ip0, ip1} {
				if err := reach(n.Host.AsContainer(), ip, 7000, 30*time.Second); err != nil {
					t.Error(err)
				}
			}
		}
	})

	t.Run("nodeport from the other node", func(t *testing.T) {
		for _, pair := range [][2]*testbed.KubeNode{{n0, n1}, {n1, n0}} {
			if err := reach(pair[0].Host.AsContainer(), pair[1].Host.IP, echoNodePort, 30*time.Second); err != nil {
				t.Error(err)
			}
		}
	})

	// The image's portmap, chained by the installed list (docs/k8s.md
	// "Host ports"): a pod's hostPort from its node (127.0.0.1) and from
	// the other node, then no rule of it once deleted.
	t.Run("host port", func(t *testing.T) {
		for _, n := range c.Nodes {
			for _, p := range []string{"contivk8s", testbed.PortmapPlugin} {
				if _, err := os.Stat(filepath.Join(n.HostPath(testbed.NodeCNIBinDir), p)); err != nil {
					t.Errorf("node %s: %v", n.Name, err)
				}
			}
		}
		pod := hostPortPod("install-hp", n0.Name,
			fmt.Sprintf("{name: echo, containerPort: 7000, hostPort: %d}", anyHostPort),
			fmt.Sprintf("{name: echo-udp, containerPort: 7000, protocol: UDP, hostPort: %d}", anyHostPort))
		if err := c.KubectlApply(pod); err != nil {
			t.Fatal(err)
		}
		ready, err := c.WaitPodsReady("default", "app=hostport", 1, podsTimeout)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []struct {
			from *testbed.KubeNode
			addr string
		}{{n0, "127.0.0.1"}, {n1, n0.Host.IP}} {
			if err := reach(x.from.Host.AsContainer(), x.addr, anyHostPort, 30*time.Second); err != nil {
				t.Errorf("from %s: %v", x.from.Name, err)
			}
		}
		if _, err := c.Kubectl("delete", "pod", "install-hp", "--wait=true", "--timeout=120s"); err != nil {
			t.Fatal(err)
		}
		var left []string
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Second) {
			if left = portmapLeftovers(natRules(t, n0), nil, []string{ready[0].Status.PodIP}); len(left) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(left) > 0 {
			t.Errorf("portmap rules left on %s after the pod was deleted:\n  %s", n0.Name, strings.Join(left, "\n  "))
		}
	})

	t.Run("uninstall leaves the nodes clean", func(t *testing.T) {
		uninstall(t, c, dir)
	})
	t.Logf("install test done in %v", time.Since(start).Round(time.Second))
}

// uninstall follows docs/k8s.md "Uninstall": workloads first, then the
// networks, then kubectl delete -f and the site's objects; it reports
// what contiv left on the nodes and in the store.
func uninstall(t *testing.T, c *testbed.KubeCluster, dir string) {
	ctx := context.Background()
	cs := c.Client(t)
	for _, args := range [][]string{
		{"delete", "deployment", "web", "--wait=true", "--timeout=120s"},
		{"-n", "kube-system", "delete", "deployment", "coredns", "--wait=true", "--timeout=120s"},
	} {
		if _, err := c.Kubectl(args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitNoPods(c, "", "app=web"); err != nil {
		t.Fatal(err)
	}
	if err := waitNoPods(c, "kube-system", "k8s-app=kube-dns"); err != nil {
		t.Fatal(err)
	}
	for _, nw := range []string{testbed.KubePodNetwork, testbed.KubeHostNetwork} {
		if out, err := c.ContivNetctl("net", "rm", nw); err != nil {
			t.Errorf("netctl net rm %s: %v\n%s", nw, err, out)
		}
	}
	if _, err := c.Kubectl("delete", "-f", dir, "--wait=true", "--timeout=120s"); err != nil {
		t.Fatal(err)
	}
	if err := waitNoPods(c, "kube-system", "app.kubernetes.io/part-of=contiv"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"contiv-store", "contiv-master-pki"} {
		if err := cs.CoreV1().Secrets("kube-system").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("secret %s: %v", name, err)
		}
	}
	if err := cs.CoreV1().ConfigMaps("kube-system").Delete(ctx, "contiv-site", metav1.DeleteOptions{}); err != nil {
		t.Errorf("configmap contiv-site: %v", err)
	}

	for _, n := range c.Nodes {
		if left := leftOnNode(t, n); len(left) > 0 {
			t.Errorf("node %s after kubectl delete -f %s:\n  %s", n.Name, dir, strings.Join(left, "\n  "))
		}
	}
	// netplugin's service instances (service/netplugin*/<addr>:<port>)
	// live on a store lease of 10 s that its stop leaves to expire, as a
	// crash would (docs/architecture.md): give them that long.
	var left []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		if left = leftInStore(t, c); len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("store records of the nodes or their endpoints 30 s after the uninstall:\n  %s", strings.Join(left, "\n  "))
	}
}

// waitNoPods waits (bounded) until no pod matches selector.
func waitNoPods(c *testbed.KubeCluster, ns, selector string) error {
	if ns == "" {
		ns = "default"
	}
	var last string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		out, err := c.Kubectl("-n", ns, "get", "pods", "-l", selector, "-o", "name")
		if err == nil && strings.TrimSpace(out) == "" {
			return nil
		}
		last = out
	}
	return fmt.Errorf("pods %s in %s still there: %s", selector, ns, last)
}

// leftOnNode lists what contiv left on a node: OVS bridges, ports and
// flows, interfaces, addresses and routes of its own, the CNI
// configuration and plugin.
func leftOnNode(t *testing.T, n *testbed.KubeNode) []string {
	var left []string
	if out, err := n.Host.Vsctl("list-br"); err != nil {
		left = append(left, fmt.Sprintf("ovs-vsctl list-br: %v", err))
	} else {
		for _, br := range strings.Fields(out) {
			if br == testbed.PhyBridge {
				continue // the testbed's underlay, the node's own network
			}
			ports, _ := n.Host.Vsctl("list-ports", br)
			flows, _ := n.Host.DumpFlows(br)
			left = append(left, fmt.Sprintf("OVS bridge %s, ports %q, %d flows", br, strings.Fields(ports), len(flows)))
		}
	}
	if out, err := n.Host.Exec("ip", "-o", "addr", "show"); err == nil {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "contiv") || strings.Contains(l, " 198.19.1") {
				left = append(left, "address: "+strings.Join(strings.Fields(l), " "))
			}
		}
	}
	if out, err := n.Host.Exec("ip", "-o", "link", "show"); err == nil {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "contiv") {
				left = append(left, "link: "+strings.Join(strings.Fields(l)[:2], " "))
			}
		}
	}
	if out, err := n.Host.Exec("ip", "-4", "route", "show", "proto", "99"); err == nil && strings.TrimSpace(out) != "" {
		left = append(left, "routes of contiv (proto 99): "+strings.TrimSpace(out))
	}
	for _, p := range []string{testbed.NodeCNIConfDir, testbed.NodeCNIBinDir, testbed.NodeContivRun} {
		entries, _ := os.ReadDir(n.HostPath(p))
		for _, e := range entries {
			if strings.Contains(e.Name(), "contiv") || p == testbed.NodeContivRun {
				left = append(left, "file: "+filepath.Join(p, e.Name()))
			}
		}
	}
	return left
}

// leftInStore lists the store records contiv left of the nodes and their
// endpoints: endpoint records, and any record whose key names a node or
// one of its addresses (netplugin's oper/nodes/<node> and
// oper/ovs-driver/<node> go with the DaemonSet's cleanup container,
// docs/k8s.md "Uninstall"). The cluster-wide records (global settings,
// the tenant) are the operator's; they are logged.
func leftInStore(t *testing.T, c *testbed.KubeCluster) []string {
	st := c.TB.Store(t)
	kvs, err := st.List(context.Background(), "")
	if err != nil {
		return []string{fmt.Sprintf("list the store: %v", err)}
	}
	var left, kept []string
	for _, kv := range kvs {
		k := kv.Key
		if strings.Contains(k, "eps/") || strings.Contains(k, "endpoint") || namesNode(c, k) {
			left = append(left, k)
			continue
		}
		kept = append(kept, k)
	}
	if len(left) == 0 {
		t.Logf("cluster-wide store records after the uninstall (the operator's): %s", strings.Join(kept, " "))
	}
	return left
}

// namesNode tells whether a store key names a node or its addresses.
func namesNode(c *testbed.KubeCluster, key string) bool {
	for _, n := range c.Nodes {
		for _, s := range []string{n.Name, n.Host.IP, n.Host.CtrlIP} {
			if strings.Contains(key, s) {
				return true
			}
		}
	}
	return false
}
