package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The kubelet-managed cluster (docs/testbed.md, "Kubernetes cluster"): the
// API server, kube-controller-manager and kube-scheduler in the first
// netmaster's namespace, and on every simulated host a containerd
// (cri.go), a kubelet, kube-proxy and netplugin in kubernetes mode, with
// contivk8s as the CNI plugin. CoreDNS runs as a Deployment behind the
// kube-dns Service.

// Cluster addresses: pods get their addresses from the contiv network
// KubePodNetwork; Services from KubeServiceRange.
const (
	KubePodNetwork = "default-net"
	KubePodSubnet  = "198.19.128.0/20"
	KubePodGateway = "198.19.143.254"
	// KubeDNSIP is the kube-dns Service's ClusterIP (the kubelets'
	// clusterDNS).
	KubeDNSIP = "198.19.200.10"
	// KubeHostNetwork is the contiv infra network that gives every host a
	// port (named after the network) into the pods' tenant: the host
	// reaches pod addresses through it (kubelet probes, NodePorts).
	KubeHostNetwork = "contivh1"
	KubeHostSubnet  = "198.19.144.0/24"
	KubeHostGateway = "198.19.144.254"
	// KubeAPIPort is the API server's port on the master's management
	// address.
	KubeAPIPort = 6443
)

// kubeNodeReadyTimeout bounds a node's way to Ready (the kubelet's
// registration, the runtime's network status).
const kubeNodeReadyTimeout = 3 * time.Minute

// FindKubeBinary locates a Kubernetes command of the testbed cluster
// (kube-controller-manager, kube-scheduler, kubelet, kubectl, kube-proxy,
// coredns): $KUBE_BIN_DIR, then PATH, then /usr/local/bin, where
// scripts/install-deps.sh builds them (test/tools/kube, test/tools/coredns).
func FindKubeBinary(name string) (string, error) {
	if d := os.Getenv("KUBE_BIN_DIR"); d != "" {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := filepath.Join("/usr/local/bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found (scripts/install-deps.sh builds it): %w", name, err)
	}
	return p, nil
}

// KubeClusterOptions shape StartKubeCluster's cluster.
type KubeClusterOptions struct {
	// Nodes is the number of simulated hosts, each a node (default 2).
	Nodes int
	// NetpluginArgs are appended to netplugin's command line (after
	// --mode kubernetes and --k8s-config).
	NetpluginArgs []string
	// NoCoreDNS leaves CoreDNS out.
	NoCoreDNS bool
	// ContivFromManifests leaves contiv to the test, which installs it
	// from packaging/k8s as an operator would (kubeinstall.go): no
	// testbed netmaster or netplugin (an external etcd is the store),
	// every node's kubelet and containerd in a mount namespace of their
	// own with the node's folders at the standard paths, the images of
	// scripts/build-images.sh imported; StartKubeCluster returns once
	// the nodes registered (NotReady: no CNI configuration yet) and
	// CoreDNS is deployed later with DeployCoreDNS.
	ContivFromManifests bool
}

// KubeCluster is a running kubelet-managed cluster.
type KubeCluster struct {
	TB    *Testbed
	API   *KubeAPIServer
	Nodes []*KubeNode
	// Kubectl is the kubectl binary; Kubeconfig in API.Kubeconfig.
	KubectlBin string

	controllerManager, scheduler *daemon
	bins                         map[string]string
	cs                           kubernetes.Interface
	fromManifests                bool
}

// KubeNode is one simulated host as a node: its runtime, kubelet and
// kube-proxy (the host's netplugin is Host's).
type KubeNode struct {
	Name string // the node name (the host's name)
	Host *Host
	CRI  *CRI
	Dir  string // the kubelet's root folder and configuration
	// ReadyBeforeCNI is the node's Ready condition seen after the kubelet
	// registered and before the CNI configuration was installed.
	ReadyBeforeCNI corev1.NodeCondition

	cluster    *KubeCluster
	kubelet    *daemon
	proxy      *daemon
	cgroupRoot string
	// fs is the node's mount namespace and folders (ContivFromManifests).
	fs *nodeFS
}

// StartKubeCluster builds the cluster: a testbed in kubernetes mode
// (netplugins not yet started), the API server (service accounts on, the
// lease endpoint reconciler), controller-manager and scheduler, the pod
// network, then per host containerd (images imported, no CNI
// configuration yet), kubelet and kube-proxy. Once every node registered
// (NotReady: the runtime's network is not ready), netplugin starts and the
// CNI configuration is installed, as contiv's DaemonSet does; the nodes
// must then go Ready. CoreDNS is deployed last. Everything stops when the
// test ends. A missing binary fails under CI=true and skips otherwise.
func StartKubeCluster(t testing.TB, opt KubeClusterOptions) *KubeCluster {
	t.Helper()
	if opt.Nodes == 0 {
		opt.Nodes = 2
	}
	bins := map[string]string{}
	for _, n := range []string{"kube-controller-manager", "kube-scheduler", "kubelet", "kubectl", "kube-proxy", "coredns"} {
		if n == "coredns" && opt.NoCoreDNS {
			continue
		}
		p, err := FindKubeBinary(n)
		RequireComponent(t, n, err)
		bins[n] = p
	}
	_, err := FindKubeAPIServer()
	RequireComponent(t, "kube-apiserver", err)
	kubepod, err := KubepodArchive()
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	images := []string{kubepod}
	if !opt.NoCoreDNS {
		coredns, err := CoreDNSArchive(bins["coredns"])
		if err != nil {
			t.Fatalf("testbed: %v", err)
		}
		images = append(images, coredns)
	}
	cfg := Config{Hosts: opt.Nodes, SkipNetplugin: true, FwdMode: "routing",
		NetpluginArgs: []string{"--mode", "kubernetes", "--host-access"}}
	if opt.ContivFromManifests {
		contiv, err := ContivImagesArchive(t)
		if err != nil {
			t.Fatalf("testbed: %v", err)
		}
		images = append(images, contiv)
		cfg = Config{Hosts: opt.Nodes, SkipNetplugin: true, NoNetmaster: true, Store: ExternalEtcd}
	}

	tb := New(t, cfg)
	m := tb.Masters[0]
	k := StartKubeAPIServer(t, KubeOptions{NS: m.NS, IP: m.IP, Port: KubeAPIPort, EtcdPort: 23790, Cluster: true})
	c := &KubeCluster{TB: tb, API: k, KubectlBin: bins["kubectl"], bins: bins, fromManifests: opt.ContivFromManifests}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- kube-apiserver ---\n%s", k.Logs(30))
			t.Logf("--- kube-controller-manager ---\n%s", c.controllerManager.logs(30))
			t.Logf("--- kube-scheduler ---\n%s", c.scheduler.logs(20))
		}
	})
	dir := filepath.Join(tb.Dir, "kube")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	c.controllerManager = nsDaemon("kube-controller-manager", m.NS, bins["kube-controller-manager"], filepath.Join(dir, "kube-controller-manager.log"),
		"--kubeconfig", k.Kubeconfig, "--authentication-kubeconfig", k.Kubeconfig, "--authorization-kubeconfig", k.Kubeconfig,
		"--bind-address", "127.0.0.1", "--leader-elect=false",
		"--service-account-private-key-file", k.SAKey, "--root-ca-file", filepath.Join(k.CertDir, "apiserver.crt"),
		"--use-service-account-credentials=false", "--allocate-node-cidrs=false",
		"--service-cluster-ip-range", KubeServiceRange,
		// A node whose kubelet stops (the reboot test) is marked
		// NotReady after 40 s; its pods are not evicted by taint for 300 s.
		"--node-monitor-grace-period", "40s")
	c.scheduler = nsDaemon("kube-scheduler", m.NS, bins["kube-scheduler"], filepath.Join(dir, "kube-scheduler.log"),
		"--kubeconfig", k.Kubeconfig, "--authentication-kubeconfig", k.Kubeconfig, "--authorization-kubeconfig", k.Kubeconfig,
		"--bind-address", "127.0.0.1", "--leader-elect=false")
	for _, d := range []*daemon{c.controllerManager, c.scheduler} {
		t.Cleanup(func() { d.stop(syscall.SIGTERM, stopGrace) })
		if err := d.start(); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	tb.Config.NetpluginArgs = append(tb.Config.NetpluginArgs, "--k8s-config", k.Kubeconfig)
	tb.Config.NetpluginArgs = append(tb.Config.NetpluginArgs, opt.NetpluginArgs...)

	var plugins []string
	if !opt.ContivFromManifests {
		cni, err := BuildCNIPlugin()
		if err != nil {
			t.Fatalf("testbed: %v", err)
		}
		portmap, err := BuildPortmapPlugin()
		if err != nil {
			t.Fatalf("testbed: %v", err)
		}
		plugins = []string{cni, portmap}
	}
	for _, h := range tb.Hosts {
		n := &KubeNode{Name: h.Name, Host: h, Dir: filepath.Join(h.Dir, "kubelet"), cluster: c}
		// contivk8s and portmap, as the DaemonSet installs them.
		criOpt := CRIOptions{NoConfig: true, Plugins: plugins, ConfList: ContivPortmapConfList(h, "1.0.0")}
		if opt.ContivFromManifests {
			fs, err := newNodeFS(t, h)
			if err != nil {
				t.Fatalf("testbed: node %s: %v", h.Name, err)
			}
			n.fs = fs
			criOpt.MountNS, criOpt.Plugins = fs.ns, []string{}
			criOpt.ConfDir, criOpt.BinDir = fs.HostPath(NodeCNIConfDir), fs.HostPath(NodeCNIBinDir)
		}
		n.CRI = h.StartCRI(t, criOpt)
		for _, a := range images {
			if err := n.CRI.ImportImage(a); err != nil {
				t.Fatalf("testbed: %v", err)
			}
		}
		n.cgroupRoot = "/" + tb.Prefix + h.Name
		t.Cleanup(func() { n.stop(t) })
		if err := n.setup(); err != nil {
			t.Fatalf("testbed: node %s: %v", n.Name, err)
		}
		if err := n.StartKubelet(); err != nil {
			t.Fatalf("testbed: %v", err)
		}
		if err := n.startProxy(); err != nil {
			t.Fatalf("testbed: %v", err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	cs := k.Client(t)
	c.cs = cs
	for _, n := range c.Nodes {
		err := poll(kubeNodeReadyTimeout, n.kubelet.exited(), func() error {
			node, err := cs.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					n.ReadyBeforeCNI = cond
					return nil
				}
			}
			return fmt.Errorf("node %s has no Ready condition yet", n.Name)
		})
		if err != nil {
			t.Fatalf("testbed: node %s did not register: %v\n--- kubelet ---\n%s", n.Name, err, n.kubelet.logs(40))
		}
	}
	if err := c.routeAPIToPods(c.Nodes[0]); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if opt.ContivFromManifests {
		return c
	}

	// contiv: the pod network, netplugin, then the CNI configuration.
	if out, err := tb.Netctl("net", "create", "--encap", "vxlan", "--subnet", KubePodSubnet, "--gateway", KubePodGateway, KubePodNetwork); err != nil {
		t.Fatalf("testbed: netctl net create %s: %v\n%s", KubePodNetwork, err, out)
	}
	if out, err := tb.Netctl("net", "create", "--nw-type", "infra", "--encap", "vxlan", "--subnet", KubeHostSubnet, "--gateway", KubeHostGateway, KubeHostNetwork); err != nil {
		t.Fatalf("testbed: netctl net create %s: %v\n%s", KubeHostNetwork, err, out)
	}
	for _, h := range tb.Hosts {
		h.StartNetplugin(t)
	}
	tb.WaitNetplugins(t, len(tb.Hosts), 90*time.Second)
	for _, n := range c.Nodes {
		if err := n.routePods(); err != nil {
			t.Fatalf("testbed: node %s: %v\n%s", n.Name, err, n.Host.Logs())
		}
		if err := n.CRI.InstallConfig(); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	for _, n := range c.Nodes {
		if err := c.WaitNodeReady(n.Name, kubeNodeReadyTimeout); err != nil {
			t.Fatalf("testbed: %v\n--- kubelet ---\n%s", err, n.kubelet.logs(40))
		}
	}
	if !opt.NoCoreDNS {
		c.deployCoreDNS(t)
	}
	return c
}

// Client is a clientset of the cluster's admin.
func (c *KubeCluster) Client(t testing.TB) kubernetes.Interface { return c.API.Client(t) }

// Kubectl runs kubectl as the cluster's admin (inside the master's
// namespace, where the API server listens) and returns its output.
func (c *KubeCluster) Kubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := append([]string{"netns", "exec", c.API.NS, c.KubectlBin, "--kubeconfig", c.API.Kubeconfig}, args...)
	out, err := exec.CommandContext(ctx, "ip", argv...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// KubectlApply applies a manifest given as text.
func (c *KubeCluster) KubectlApply(manifest string) error {
	f, err := os.CreateTemp(c.TB.Dir, "manifest-*.yaml")
	if err != nil {
		return fmt.Errorf("testbed: manifest: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(manifest); err != nil {
		f.Close()
		return fmt.Errorf("testbed: manifest: %w", err)
	}
	f.Close()
	_, err = c.Kubectl("apply", "-f", f.Name())
	return err
}

// Node returns the node of that name.
func (c *KubeCluster) Node(name string) *KubeNode {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// WaitNodeReady waits until the node's Ready condition is True.
func (c *KubeCluster) WaitNodeReady(name string, within time.Duration) error {
	cs := c.cs
	var last string
	err := poll(within, nil, func() error {
		node, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				last = cond.Reason + ": " + cond.Message
				if cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		return fmt.Errorf("node %s not Ready (%s)", name, last)
	})
	if err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	return nil
}

// setup writes the kubelet's and kube-proxy's configuration and makes
// the node's cgroup root in every cgroup v1 hierarchy (the kubelet
// insists that it exists).
func (n *KubeNode) setup() error {
	for _, d := range []string{n.Dir, filepath.Join(n.Dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("kubelet folder: %w", err)
		}
	}
	if err := makeCgroup(n.cgroupRoot); err != nil {
		return err
	}
	// The kubelet wants kernel settings (vm.overcommit_memory=1,
	// kernel.panic=10, kernel.panic_on_oops=1, ...) that it would write
	// machine-wide; it runs in a mount namespace of its own where those
	// /proc/sys files are bind mounts of files holding the wanted values,
	// and the machine's stay as they are. Its root folder is a shared
	// mount, so the volumes it mounts there reach containerd.
	tun := filepath.Join(n.Dir, "sysctl")
	if err := os.MkdirAll(tun, 0o755); err != nil {
		return fmt.Errorf("kubelet sysctl folder: %w", err)
	}
	var binds []string
	for _, kv := range [][2]string{
		{"vm/overcommit_memory", "1"}, {"vm/panic_on_oom", "0"}, {"kernel/panic", "10"},
		{"kernel/panic_on_oops", "1"}, {"kernel/keys/root_maxkeys", "1000000"}, {"kernel/keys/root_maxbytes", "25000000"},
	} {
		f := filepath.Join(tun, strings.ReplaceAll(kv[0], "/", "."))
		if err := os.WriteFile(f, []byte(kv[1]+"\n"), 0o644); err != nil {
			return fmt.Errorf("kubelet sysctl file: %w", err)
		}
		binds = append(binds, fmt.Sprintf("mount --bind %s /proc/sys/%s", f, kv[0]))
	}
	cfg := filepath.Join(n.Dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(n.kubeletConfig()), 0o644); err != nil {
		return fmt.Errorf("kubelet configuration: %w", err)
	}
	kubelet := n.cluster.bins["kubelet"]
	kubeletArgs := []string{"--config", cfg, "--kubeconfig", n.cluster.API.Kubeconfig, "--root-dir", n.Dir,
		"--hostname-override", n.Name, "--node-ip", n.Host.IP, "--v", "1"}
	n.kubelet = nsDaemon("kubelet "+n.Name, n.Host.NS, kubelet, filepath.Join(n.Dir, "kubelet.log"))
	if n.fs != nil {
		// The node's mount namespace holds the sysctl files and
		// containerd: the kubelet's volumes are mounted where the
		// runtime sees them.
		if err := n.fs.bindSysctls(tun, binds); err != nil {
			return err
		}
		n.kubelet.direct = append([]string{"nsenter", "--net=" + filepath.Join(netnsDir(), n.Host.NS), "--mount=" + n.fs.ns, kubelet}, kubeletArgs...)
	} else {
		if err := syscall.Mount(n.Dir, n.Dir, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind mount %s: %w", n.Dir, err)
		}
		if err := syscall.Mount("", n.Dir, "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("make %s shared: %w", n.Dir, err)
		}
		script := strings.Join(binds, " && ") + ` && exec "$0" "$@"`
		n.kubelet.direct = append([]string{"nsenter", "--net=" + filepath.Join(netnsDir(), n.Host.NS),
			"unshare", "--mount", "--propagation", "unchanged", "sh", "-c", script, kubelet}, kubeletArgs...)
	}
	proxyCfg := filepath.Join(n.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(proxyCfg, []byte(n.proxyConfig()), 0o644); err != nil {
		return fmt.Errorf("kube-proxy configuration: %w", err)
	}
	n.proxy = nsDaemon("kube-proxy "+n.Name, n.Host.NS, n.cluster.bins["kube-proxy"], filepath.Join(n.Dir, "kube-proxy.log"),
		"--config", proxyCfg, "--hostname-override", n.Name, "--v", "1")
	return nil
}

// routePods lets the host forward (NodePorts, host access) and waits for
// netplugin's route to the pod subnet through the host's port on
// KubeHostNetwork (netplugin/infraroute: netplugin owns port, address, MTU
// and route).
func (n *KubeNode) routePods() error {
	if _, err := nsExec(n.Host.NS, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"); err != nil {
		return fmt.Errorf("ip_forward: %w", err)
	}
	return poll(60*time.Second, n.Host.NetpluginExited(), func() error {
		out, err := nsExec(n.Host.NS, "ip", "-4", "route", "show", KubePodSubnet)
		if err != nil || !strings.Contains(out, "via "+KubeHostGateway+" dev "+KubeHostNetwork) {
			return fmt.Errorf("no route to %s through %s yet: %v %s", KubePodSubnet, KubeHostNetwork, err, out)
		}
		return nil
	})
}

// routeAPIToPods gives the control plane's namespace (the API server's
// pod and service proxy, docs/testbed.md "Kubernetes cluster") a route to
// the pod subnet through node n's management address. The node forwards
// the packets into its contivh1 port (its route to the pods, routePods)
// and masquerades them to that port's address, so the pods see them as
// they see the kubelet's probes and answer through the node. A real
// control-plane host is a node or routes to the pods the same way. The
// route and the rule go with the namespaces.
func (c *KubeCluster) routeAPIToPods(n *KubeNode) error {
	if _, err := nsExec(n.Host.NS, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"); err != nil {
		return fmt.Errorf("node %s: ip_forward: %w", n.Name, err)
	}
	src := c.TB.Masters[0].IP + "/32"
	rule := []string{"-t", "nat", "POSTROUTING", "-s", src, "-d", KubePodSubnet, "-j", "MASQUERADE"}
	check := append([]string{"-w", "5", rule[0], rule[1], "-C"}, rule[2:]...)
	if _, err := nsExec(n.Host.NS, "iptables", check...); err != nil {
		add := append([]string{"-w", "5", rule[0], rule[1], "-A"}, rule[2:]...)
		if out, err := nsExec(n.Host.NS, "iptables", add...); err != nil {
			return fmt.Errorf("node %s: masquerade of the API server: %w: %s", n.Name, err, out)
		}
	}
	if err := ipIn(c.API.NS, "route", "replace", KubePodSubnet, "via", n.Host.CtrlIP, "dev", MgmtIf); err != nil {
		return fmt.Errorf("route from the API server to the pods: %w", err)
	}
	return nil
}

// kubeletConfig is the kubelet's KubeletConfiguration: the host's
// containerd, ports on the host's address, cgroupfs under the node's own
// cgroup root, no swap or cgroup v1 refusal, no eviction or image garbage
// collection by disk usage (the machine's disk is shared), anonymous
// AlwaysAllow access to its API (test only).
func (n *KubeNode) kubeletConfig() string {
	sock := "unix://" + n.CRI.Socket
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
containerRuntimeEndpoint: %[2]s
imageServiceEndpoint: %[2]s
cgroupDriver: cgroupfs
cgroupRoot: %[3]s
cgroupsPerQOS: true
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
clusterDNS: [%[4]s]
clusterDomain: cluster.local
resolvConf: ""
podLogsDir: %[5]s
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
evictionHard: {"memory.available": "0%%", "nodefs.available": "0%%", "imagefs.available": "0%%", "nodefs.inodesFree": "0%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: false
registerNode: true
maxPods: 60
serializeImagePulls: false
syncFrequency: 10s
nodeStatusUpdateFrequency: 5s
fileCheckFrequency: 20s
`, n.Host.IP, sock, n.cgroupRoot, KubeDNSIP, filepath.Join(n.Dir, "logs"))
}

// proxyConfig is kube-proxy's configuration: iptables mode in the host's
// namespace, NodePorts on the host's underlay address, conntrack limits
// left as the machine has them.
func (n *KubeNode) proxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %q}
mode: iptables
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [%s/32]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
clusterCIDR: %s
`, n.cluster.API.Kubeconfig, n.Host.IP, n.Host.IP, KubePodSubnet)
}

// StartKubelet starts the node's kubelet.
func (n *KubeNode) StartKubelet() error {
	if err := n.kubelet.start(); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	return nil
}

// StopKubelet stops the node's kubelet (SIGTERM); its pods keep running.
func (n *KubeNode) StopKubelet() error {
	if err := n.kubelet.stop(syscall.SIGTERM, stopGrace); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	return nil
}

// Reboot stops the node's daemons — kube-proxy, the kubelet, netplugin —
// waits down, and starts them again in the order of a boot (netplugin,
// kubelet, kube-proxy); the pods' containers and namespaces stay, as
// the runtime keeps them. It waits until the node is Ready again.
func (n *KubeNode) Reboot(t testing.TB, down time.Duration) {
	t.Helper()
	n.proxy.stop(syscall.SIGTERM, stopGrace)
	if err := n.StopKubelet(); err != nil {
		t.Errorf("%v", err)
	}
	n.Host.StopNetplugin(t)
	time.Sleep(down)
	n.Host.StartNetplugin(t)
	if err := n.routePods(); err != nil {
		t.Fatalf("testbed: node %s: %v", n.Name, err)
	}
	if err := n.StartKubelet(); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.startProxy(); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.cluster.WaitNodeReady(n.Name, kubeNodeReadyTimeout); err != nil {
		t.Fatalf("%v\n--- kubelet ---\n%s", err, n.kubelet.logs(40))
	}
}

// KubeletLogs returns the last lines of the kubelet's log.
func (n *KubeNode) KubeletLogs(lines int) string { return n.kubelet.logs(lines) }

// ProxyLogs returns the last lines of kube-proxy's log.
func (n *KubeNode) ProxyLogs(lines int) string { return n.proxy.logs(lines) }

func (n *KubeNode) startProxy() error {
	if err := n.proxy.start(); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	return nil
}

// stop ends kube-proxy and the kubelet, deletes the pods' containers
// through the runtime (its own cleanup then stops containerd), and
// removes the node's mounts and cgroups.
func (n *KubeNode) stop(t testing.TB) {
	if n.proxy != nil {
		n.proxy.stop(syscall.SIGKILL, stopGrace)
	}
	if n.kubelet != nil {
		n.kubelet.stop(syscall.SIGKILL, stopGrace)
	}
	if n.CRI != nil && n.CRI.daemon.running() {
		if ids, err := n.CRI.Crictl("ps", "-a", "-q"); err == nil {
			for _, id := range strings.Fields(ids) {
				n.CRI.Crictl("rm", "-f", id)
			}
		}
	}
	for _, m := range mountsUnder(n.Dir) {
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
	syscall.Unmount(n.Dir, syscall.MNT_DETACH)
	if n.cgroupRoot != "" {
		removeCgroup(n.cgroupRoot)
	}
}

// cgroupV1Root is where the cgroup v1 hierarchies are mounted.
const cgroupV1Root = "/sys/fs/cgroup"

// makeCgroup creates the cgroup path in every v1 hierarchy (cpuset gets
// its parent's cpus and mems).
func makeCgroup(path string) error {
	entries, err := os.ReadDir(cgroupV1Root)
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "unified" {
			continue
		}
		d := filepath.Join(cgroupV1Root, e.Name(), path)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", d, err)
		}
		if e.Name() == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(cgroupV1Root, "cpuset", f))
				if err == nil {
					os.WriteFile(filepath.Join(d, f), v, 0o644)
				}
			}
		}
	}
	return nil
}

// removeCgroup removes the cgroup path and everything below it in every
// hierarchy, deepest first, killing what still runs in it.
func removeCgroup(path string) {
	entries, _ := os.ReadDir(cgroupV1Root)
	for _, e := range entries {
		base := filepath.Join(cgroupV1Root, e.Name(), path)
		var dirs []string
		filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if procs, err := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs")); err == nil {
				for _, f := range strings.Fields(string(procs)) {
					if pid, err := strconv.Atoi(f); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			for try := 0; try < 20; try++ {
				if err := os.Remove(dirs[i]); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
}
