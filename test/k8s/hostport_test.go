package k8s

import (
	"crypto/sha512"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/contiv/netplugin/test/testbed"
)

// Host ports of TestHostPort: sharedHostPort is held by three pods that
// differ by hostIP and protocol (as in the upstream conformance case),
// anyHostPort by one pod without a hostIP, cnitoolHostPort by a namespace
// attached with cnitool.
const (
	sharedHostPort  = 30801
	anyHostPort     = 30802
	cnitoolHostPort = 30803
)

// hostPortPod is a kubepod server pinned to node whose ports are the
// given YAML flow mappings (with hostPort).
func hostPortPod(name, node string, ports ...string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, labels: {app: hostport}}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: %s
    imagePullPolicy: Never
    args: ["serve", "-http", ":8080", "-echo", "7000"]
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    ports:
    - %s
`, name, node, testbed.KubepodImage, strings.Join(ports, "\n    - "))
}

// TestHostPort checks pods' hostPorts (docs/k8s.md "Host ports"): the
// portmap plugin chained after contivk8s maps them on the node, and the
// node itself (to 127.0.0.1 and to its address) and the other node reach
// the pod over TCP and UDP; a hostIP limits the mapping to that address,
// so pods may share a host port on different addresses or protocols. The
// chain's CHECK and DEL work through cnitool, and deleting the pods
// leaves no portmap rule of theirs in the node's nat table.
func TestHostPort(t *testing.T) {
	c := testbed.StartKubeCluster(t, testbed.KubeClusterOptions{NoCoreDNS: true})
	n0, n1 := c.Nodes[0], c.Nodes[1]
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("--- kubelet %s ---\n%s", n.Name, n.KubeletLogs(30))
				t.Logf("--- netplugin %s ---\n%s", n.Name, lastLines(n.Host.Logs(), 20))
				out, _ := n.Host.Exec("iptables", "-w", "5", "-t", "nat", "-S")
				t.Logf("--- nat table %s ---\n%s", n.Name, out)
			}
			out, _ := c.Kubectl("get", "pods", "-A", "-o", "wide")
			t.Logf("--- pods ---\n%s", out)
		}
	})
	nodeIP := n0.Host.IP
	pods := []string{
		hostPortPod("hp-lo", n0.Name, fmt.Sprintf("{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}", sharedHostPort)),
		hostPortPod("hp-node", n0.Name, fmt.Sprintf("{containerPort: 8080, hostPort: %d, hostIP: %s}", sharedHostPort, nodeIP)),
		hostPortPod("hp-udp", n0.Name, fmt.Sprintf("{containerPort: 7000, protocol: UDP, hostPort: %d, hostIP: %s}", sharedHostPort, nodeIP)),
		hostPortPod("hp-any", n0.Name,
			fmt.Sprintf("{name: echo, containerPort: 7000, hostPort: %d}", anyHostPort),
			fmt.Sprintf("{name: echo-udp, containerPort: 7000, protocol: UDP, hostPort: %d}", anyHostPort)),
	}
	if err := c.KubectlApply(strings.Join(pods, "---\n")); err != nil {
		t.Fatal(err)
	}
	ready, err := c.WaitPodsReady("default", "app=hostport", len(pods), podsTimeout)
	if err != nil {
		t.Fatal(err)
	}
	podIP := map[string]string{}
	for _, p := range ready {
		podIP[p.Name] = p.Status.PodIP
	}
	t.Logf("host port pods on %s (%s): %v", n0.Name, nodeIP, podIP)

	t.Run("portmap rules", func(t *testing.T) {
		nat := natRules(t, n0)
		for name, port := range map[string]int{"hp-lo": 8080, "hp-node": 8080, "hp-udp": 7000, "hp-any": 7000} {
			if want := fmt.Sprintf("--to-destination %s:%d", podIP[name], port); !strings.Contains(nat, want) {
				t.Errorf("%s: no DNAT rule %q in the nat table of %s", name, want, n0.Name)
			}
		}
	})

	t.Run("hostIP and protocol tell the pods apart", func(t *testing.T) {
		for _, x := range []struct {
			from *testbed.KubeNode
			addr string
			want string
		}{
			{n0, "127.0.0.1", "hp-lo"},
			{n0, nodeIP, "hp-node"},
			{n1, nodeIP, "hp-node"},
		} {
			url := fmt.Sprintf("http://%s:%d/name", x.addr, sharedHostPort)
			got, err := getName(x.from, url, 30*time.Second)
			if err != nil {
				t.Errorf("from %s: %v", x.from.Name, err)
			} else if got != x.want {
				t.Errorf("from %s, %s answered %q, want %q", x.from.Name, url, got, x.want)
			}
		}
		for _, from := range []*testbed.KubeNode{n0, n1} {
			if _, err := from.Host.AsContainer().UDPEcho(nodeIP, sharedHostPort, trafficTimeout); err != nil {
				t.Errorf("from %s: %v", from.Name, err)
			}
		}
	})

	t.Run("tcp and udp from the node and the other node", func(t *testing.T) {
		for _, x := range []struct {
			from *testbed.KubeNode
			addr string
		}{{n0, "127.0.0.1"}, {n0, nodeIP}, {n1, nodeIP}} {
			if err := reach(x.from.Host.AsContainer(), x.addr, anyHostPort, 30*time.Second); err != nil {
				t.Errorf("from %s: %v", x.from.Name, err)
			}
		}
	})

	t.Run("check and del through the chain", func(t *testing.T) {
		chainCheckDel(t, n0, n1)
	})

	t.Run("deleted pods leave no portmap rules", func(t *testing.T) {
		if _, err := c.Kubectl("delete", "pods", "-l", "app=hostport", "--wait=true", "--timeout=120s"); err != nil {
			t.Fatal(err)
		}
		if err := waitNoPods(c, "", "app=hostport"); err != nil {
			t.Fatal(err)
		}
		var left []string
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Second) {
			left = portmapLeftovers(natRules(t, n0), nil, slices.Collect(maps.Values(podIP)))
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(left) > 0 {
			t.Errorf("portmap rules left on %s after the pods were deleted:\n  %s", n0.Name, strings.Join(left, "\n  "))
		}
	})
}

// natRules is the node's nat table (iptables -S).
func natRules(t *testing.T, n *testbed.KubeNode) string {
	t.Helper()
	out, err := n.Host.Exec("iptables", "-w", "5", "-t", "nat", "-S")
	if err != nil {
		t.Fatalf("nat table of %s: %v", n.Name, err)
	}
	return out
}

// portmapLeftovers lists the nat rules that belong to the port mappings
// of the sandboxes ids (the jumps carry the container id in their
// comment; nil: any sandbox, i.e. every per-sandbox chain CNI-DN-…) or
// name one of the addresses ips. The shared chains (CNI-HOSTPORT-DNAT,
// -SETMARK, -MASQ) and their fixed rules stay, as portmap leaves them.
func portmapLeftovers(nat string, ids, ips []string) []string {
	var left []string
	for _, l := range strings.Split(nat, "\n") {
		hit := ids == nil && strings.Contains(l, "CNI-DN-")
		for _, id := range ids {
			hit = hit || strings.Contains(l, id)
		}
		for _, ip := range ips {
			hit = hit || strings.Contains(l, ip+":") || strings.Contains(l, ip+"/32")
		}
		if hit {
			left = append(left, l)
		}
	}
	return left
}

// getName GETs url from inside the node's namespace until it answers 200
// or within ends, and returns the body (a kubepod's /name: its pod name).
func getName(n *testbed.KubeNode, url string, within time.Duration) (string, error) {
	client := n.Host.HTTPClient()
	client.Timeout = trafficTimeout
	deadline := time.Now().Add(within)
	for {
		body, err := func() (string, error) {
			rsp, err := client.Get(url)
			if err != nil {
				return "", err
			}
			defer rsp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(rsp.Body, 4096))
			if err != nil {
				return "", err
			}
			if rsp.StatusCode != 200 {
				return "", fmt.Errorf("GET %s: %s", url, rsp.Status)
			}
			return strings.TrimSpace(string(b)), nil
		}()
		if err == nil || time.Now().After(deadline) {
			return body, err
		}
		time.Sleep(time.Second)
	}
}

// chainCheckDel drives the node's CNI configuration list (contivk8s and
// portmap, the runtime's files) with cnitool the way a runtime that sends
// CHECK would: ADD with a port mapping (its result lists the pod's
// interface in its namespace and the address on it, what portmap reads
// from prevResult), the mapped port reached from the other node, CHECK
// passes, DEL removes the mapping.
func chainCheckDel(t *testing.T, n0, n1 *testbed.KubeNode) {
	tool := testbed.FindCnitool(t)
	ctr := n0.Host.NewContainerNS(t, "hp-cnitool")
	defer ctr.Delete(t)
	capArgs := fmt.Sprintf(`{"portMappings":[{"hostPort":%d,"containerPort":%d,"protocol":"tcp"},{"hostPort":%d,"containerPort":%d,"protocol":"udp"}]}`,
		cnitoolHostPort, testbed.TrafficPort, cnitoolHostPort, testbed.TrafficPort)
	cnitool := func(verb string) (string, error) {
		return n0.Host.Exec("env", "NETCONFPATH="+n0.CRI.ConfDir, "CNI_PATH="+n0.CRI.BinDir,
			"CAP_ARGS="+capArgs, "CNI_ARGS=K8S_POD_NAMESPACE=default;K8S_POD_NAME=hp-cnitool",
			tool, verb, "contiv-net", ctr.NSPath())
	}
	out, err := cnitool("add")
	if err != nil {
		t.Fatalf("cnitool add: %v\n%s", err, out)
	}
	deleted := false
	defer func() {
		if !deleted {
			cnitool("del")
		}
	}()
	res, err := current.NewResult([]byte(out))
	if err != nil {
		t.Fatalf("ADD result: %v\n%s", err, out)
	}
	r, err := current.GetResult(res)
	if err != nil || len(r.IPs) != 1 || r.IPs[0].Interface == nil || *r.IPs[0].Interface >= len(r.Interfaces) {
		t.Fatalf("ADD result (%v) has no address on an interface:\n%s", err, out)
	}
	if ifc := r.Interfaces[*r.IPs[0].Interface]; ifc.Name != "eth0" || ifc.Sandbox != ctr.NSPath() {
		t.Errorf("ADD result: the address is on %+v, want eth0 in %s", *ifc, ctr.NSPath())
	}
	ctr.IP = r.IPs[0].Address.IP.String()
	ctr.ServeTraffic(t, testbed.TrafficPort)
	if nat := natRules(t, n0); !strings.Contains(nat, fmt.Sprintf("--to-destination %s:%d", ctr.IP, testbed.TrafficPort)) {
		t.Errorf("no DNAT rule to %s after ADD:\n%s", ctr.IP, nat)
	}
	if err := reach(n1.Host.AsContainer(), n0.Host.IP, cnitoolHostPort, 30*time.Second); err != nil {
		t.Error(err)
	}
	if out, err := cnitool("check"); err != nil {
		t.Errorf("cnitool check: %v\n%s", err, out)
	}
	// cnitool's container id: "cnitool-" and the first 10 bytes of the
	// SHA-512 of the namespace path, in hex.
	sum := sha512.Sum512([]byte(ctr.NSPath()))
	id := fmt.Sprintf("cnitool-%x", sum[:10])
	if nat := natRules(t, n0); !strings.Contains(nat, id) {
		t.Errorf("no rule of sandbox %s (the test's idea of cnitool's container id is wrong?)", id)
	}
	if out, err := cnitool("del"); err != nil {
		t.Fatalf("cnitool del: %v\n%s", err, out)
	}
	deleted = true
	if left := portmapLeftovers(natRules(t, n0), []string{id}, []string{ctr.IP}); len(left) > 0 {
		t.Errorf("portmap rules left after DEL:\n  %s", strings.Join(left, "\n  "))
	}
	if err := n1.Host.AsContainer().CheckNoTraffic(n0.Host.IP, cnitoolHostPort, 3*time.Second); err != nil {
		t.Errorf("the host port still answers after DEL: %v", err)
	}
}
