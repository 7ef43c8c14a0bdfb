package testbed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv/netplugin/utils/certgen"
	"github.com/contiv/netplugin/utils/tlsutil"
)

// contiv installed from packaging/k8s on the kubelet cluster
// (KubeClusterOptions.ContivFromManifests; docs/testbed.md, "contiv from
// its manifests"). A real node has one file system: the DaemonSet's
// hostPath volumes (/var/run/openvswitch, /run/contiv, /etc/cni/net.d,
// /opt/cni/bin, ...) are the node's own folders, and the kubelet and the
// runtime resolve them there. The simulated nodes share the machine's
// file system, so every node gets a mount namespace of its own, kept in
// a file (nodeFS), in which its folders are bind-mounted at the standard
// paths; its kubelet and containerd (and so every container they start)
// run in it. Mounts there are shared within the namespace (the pods'
// HostToContainer volumes see the network namespaces containerd adds),
// and nothing propagates to the machine's namespace.

// The node paths the manifests use, each a folder of the node.
const (
	NodeOVSRunDir  = "/run/openvswitch" // = /var/run/openvswitch: the node's OVS (Host.OVS.Dir)
	NodeContivRun  = "/run/contiv"      // = /var/run/contiv: CNI socket and records
	NodeNetNSDir   = "/run/netns"       // the pods' network namespaces (containerd)
	NodeCNIConfDir = "/etc/cni/net.d"
	NodeCNIBinDir  = "/opt/cni/bin"
	NodeContivLog  = "/var/log/contiv"
	NodeContivPKI  = "/etc/contiv/pki" // the node's agent certificate
)

// nodeFS is a node's mount namespace and the folders behind its paths.
type nodeFS struct {
	dir   string            // Host.Dir/cri-node (a "cri*" folder: reapCRI unmounts what a killed test left there)
	ns    string            // the namespace's file (dir/mnt/ns)
	binds map[string]string // node path -> folder
}

// newNodeFS makes host h's folders and mount namespace; the test's
// cleanup unmounts the namespace's file (the namespace goes with its
// last process). The node forwards (kube-proxy, NodePorts, and contiv's
// infra route need it: docs/k8s.md, "Networks") and routes the Service
// range.
func newNodeFS(t testing.TB, h *Host) (*nodeFS, error) {
	t.Helper()
	f := &nodeFS{dir: filepath.Join(h.Dir, "cri-node"), binds: map[string]string{}}
	for _, p := range []string{NodeContivRun, NodeNetNSDir, NodeCNIConfDir, NodeCNIBinDir, NodeContivLog} {
		f.binds[p] = filepath.Join(f.dir, strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "-"))
	}
	f.binds[NodeOVSRunDir] = h.OVS.Dir
	f.binds[NodeContivPKI] = filepath.Join(h.Dir, "pki")
	for _, d := range f.binds {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("node folder: %w", err)
		}
	}
	// (StartCRI links the runtime's loopback plugin into the node's
	// /opt/cni/bin, as a node's kubernetes-cni package installs it.)
	if _, err := nsExec(h.NS, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"); err != nil {
		return nil, fmt.Errorf("ip_forward: %w", err)
	}
	// A real node's default route carries its connections to ClusterIPs
	// until kube-proxy's DNAT rewrites them (netplugin reaches the API
	// server at the kubernetes Service from the host network); the
	// simulated node has no default route (nothing is beyond the
	// testbed), so the Service range goes to the management network,
	// where the API server is.
	if err := ipIn(h.NS, "route", "replace", KubeServiceRange, "dev", MgmtIf); err != nil {
		return nil, fmt.Errorf("service route: %w", err)
	}
	// The namespace's file must sit on a mount that is not shared.
	mnt := filepath.Join(f.dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return nil, fmt.Errorf("node namespace folder: %w", err)
	}
	if err := syscall.Mount(mnt, mnt, "", syscall.MS_BIND, ""); err != nil {
		return nil, fmt.Errorf("bind %s: %w", mnt, err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	if err := syscall.Mount("", mnt, "", syscall.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make %s private: %w", mnt, err)
	}
	f.ns = filepath.Join(mnt, "ns")
	if err := os.WriteFile(f.ns, nil, 0o644); err != nil {
		return nil, fmt.Errorf("node namespace file: %w", err)
	}
	paths := make([]string, 0, len(f.binds))
	for p := range f.binds {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	script := []string{"set -e"}
	for _, p := range paths {
		script = append(script, fmt.Sprintf("mkdir -p %s && mount --bind %s %s", p, f.binds[p], p))
	}
	script = append(script, "mount --make-rshared /")
	if out, err := run("unshare", "--mount="+f.ns, "--propagation", "private", "sh", "-c", strings.Join(script, "\n")); err != nil {
		return nil, fmt.Errorf("node mount namespace: %w: %s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(f.ns, syscall.MNT_DETACH) })
	return f, nil
}

// HostPath is the folder behind node path p ("" for a path that is not
// one of the node's own).
func (f *nodeFS) HostPath(p string) string { return f.binds[p] }

// bindSysctls mounts the kubelet's sysctl files (kubecluster.go, setup)
// in the node's namespace.
func (f *nodeFS) bindSysctls(dir string, binds []string) error {
	if out, err := run("nsenter", "--mount="+f.ns, "sh", "-c", strings.Join(binds, " && ")); err != nil {
		return fmt.Errorf("kubelet sysctl files in %s: %w: %s", dir, err, out)
	}
	return nil
}

// HostPath is the folder (as the test sees it) behind the node path p
// of a ContivFromManifests cluster, e.g. NodeCNIConfDir; "" otherwise.
func (n *KubeNode) HostPath(p string) string {
	if n.fs == nil {
		return ""
	}
	return n.fs.HostPath(p)
}

// ManifestsDir is packaging/k8s of this checkout.
func ManifestsDir() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "packaging", "k8s"), nil
}

// contivImages caches the image archive of this test process.
var contivImages struct {
	once sync.Once
	path string
	err  error
}

// contivImagesTimeout bounds scripts/build-images.sh (three static
// builds on a loaded machine, three docker builds).
const contivImagesTimeout = 10 * time.Minute

// ContivImagesArchive returns the archive of contiv's images as
// scripts/build-images.sh makes them (IMAGE_ARCHIVE), for "ctr images
// import" on every node. The script needs the local Docker Engine; its
// archive is cached under ~/.cache/contiv-testbed by a digest of the
// sources it builds from (Go files outside test/, go.mod, go.sum,
// packaging/docker, packaging/k8s/VERSION, scripts/build-images.sh and
// version.sh), so a suite builds it once per source state. No Docker Engine fails the test under
// CI=true and skips it elsewhere.
func ContivImagesArchive(t testing.TB) (string, error) {
	t.Helper()
	if out, err := run("docker", "version", "--format", "{{.Server.Version}}"); err != nil {
		RequireComponent(t, "a Docker Engine (scripts/build-images.sh)", fmt.Errorf("%w: %s", err, out))
	}
	contivImages.once.Do(func() { contivImages.path, contivImages.err = buildContivImages() })
	return contivImages.path, contivImages.err
}

func buildContivImages() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	sum, err := imageSourceDigest(root)
	if err != nil {
		return "", err
	}
	cache, path := imageCachePath("contiv-images-" + sum[:16] + ".tar")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("testbed: image cache: %w", err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), contivImagesTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "build-images.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "IMAGE_ARCHIVE="+tmp)
	// The output goes to a file, not a pipe: a process the build leaves
	// behind holding its stdout (seen once: Wait blocked 20 minutes after
	// the script had exited) cannot hold up the wait.
	logf, err := os.CreateTemp("", "contiv-build-images-*.log")
	if err != nil {
		return "", fmt.Errorf("testbed: image build log: %w", err)
	}
	defer os.Remove(logf.Name())
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		out, _ := os.ReadFile(logf.Name())
		return "", fmt.Errorf("testbed: scripts/build-images.sh: %w\n%s", err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("testbed: image cache: %w", err)
	}
	return path, nil
}

// imageSourceDigest hashes what the images are built from.
func imageSourceDigest(root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel == ".git" || rel == "test" || rel == "docs" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go"),
			rel == "go.mod", rel == "go.sum",
			strings.HasPrefix(rel, filepath.Join("packaging", "docker")+string(filepath.Separator)),
			rel == filepath.Join("packaging", "k8s", "VERSION"),
			rel == filepath.Join("scripts", "build-images.sh"), rel == filepath.Join("scripts", "version.sh"):
		default:
			return nil
		}
		fh, err := os.Open(p)
		if err != nil {
			return err
		}
		defer fh.Close()
		fmt.Fprintf(h, "%s\x00", rel)
		_, err = io.Copy(h, fh)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("testbed: image sources: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ContivSiteSettings are the contiv-site ConfigMap's settings the
// testbed gives (docs/k8s.md, "Store"): its etcd with the client
// certificate of the Secret contiv-store, the userspace OVS datapath.
func (c *KubeCluster) ContivSiteSettings() map[string]string {
	tb := c.TB
	args := tb.StoreArgs()
	site := map[string]string{"ETCD_ENDPOINTS": args[1], "OVS_DATAPATH": "netdev", "LOG_LEVEL": "debug"}
	if tb.storeTLS() {
		site["ETCD_CACERT"] = "/etc/contiv/store/ca.pem"
		site["ETCD_CERT"] = "/etc/contiv/store/cert.pem"
		site["ETCD_KEY"] = "/etc/contiv/store/key.pem"
	}
	return site
}

// InstallContivSite does what docs/k8s.md asks of the site before "kubectl
// apply -f packaging/k8s/": the ConfigMap contiv-site, the Secrets
// contiv-store (the store's client certificate) and contiv-master-pki
// (netmaster's RPC certificate for every node's addresses), and each
// node's agent certificate in its /etc/contiv/pki.
func (c *KubeCluster) InstallContivSite(t testing.TB) {
	t.Helper()
	tb := c.TB
	ctx := context.Background()
	var ips []net.IP
	for _, n := range c.Nodes {
		if _, err := tb.AgentCert(n.Host); err != nil {
			t.Fatalf("testbed: %v", err)
		}
		ips = append(ips, net.ParseIP(n.Host.IP), net.ParseIP(n.Host.CtrlIP))
	}
	master, err := tb.PKI.CA.Issue(certgen.Request{Role: tlsutil.RoleMaster, IPs: ips})
	if err != nil {
		t.Fatalf("testbed: master certificate: %v", err)
	}
	secrets := []*corev1.Secret{{
		ObjectMeta: metav1.ObjectMeta{Name: "contiv-master-pki", Namespace: "kube-system"},
		Data:       map[string][]byte{"ca.pem": tb.PKI.CA.CertPEM(), "master.pem": master.CertPEM, "master-key.pem": master.KeyPEM},
	}}
	if tb.storeTLS() {
		store := map[string][]byte{}
		p := tb.StorePKI
		for key, f := range map[string]string{"ca.pem": p.CA, "cert.pem": p.ClientCert, "key.pem": p.ClientKey} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatalf("testbed: store client files: %v", err)
			}
			store[key] = b
		}
		secrets = append(secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "contiv-store", Namespace: "kube-system"}, Data: store})
	}
	for _, s := range secrets {
		if _, err := c.cs.CoreV1().Secrets("kube-system").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("testbed: secret %s: %v", s.Name, err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "contiv-site", Namespace: "kube-system"}, Data: c.ContivSiteSettings()}
	if _, err := c.cs.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("testbed: configmap contiv-site: %v", err)
	}
}

// DeployCoreDNS deploys CoreDNS (ContivFromManifests: once contiv
// serves the nodes) and waits until it is ready.
func (c *KubeCluster) DeployCoreDNS(t testing.TB) {
	t.Helper()
	c.deployCoreDNS(t)
}

// ContivNetctl runs netctl in node 0's namespace against the netmaster
// pods' REST API on that node's address (host network; either replica
// answers, a follower proxies to the leader).
func (c *KubeCluster) ContivNetctl(args ...string) (string, error) {
	n := c.Nodes[0]
	full := append([]string{"--netmaster", fmt.Sprintf("http://%s:%d", n.Host.IP, NetmasterPort)}, args...)
	return nsExec(n.Host.NS, c.TB.Bins.Netctl, full...)
}

// NodeExec runs a program in the node's network and mount namespaces (as
// a shell on the node would).
func (n *KubeNode) NodeExec(name string, args ...string) (string, error) {
	argv := []string{"--net=" + filepath.Join(netnsDir(), n.Host.NS)}
	if n.fs != nil {
		argv = append(argv, "--mount="+n.fs.ns)
	}
	return run("nsenter", append(append(argv, name), args...)...)
}
