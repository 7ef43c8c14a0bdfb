package testbed

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"go/build"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeAPIServerBin is where scripts/install-deps.sh installs the API
// server built from test/tools/kube-apiserver.
const KubeAPIServerBin = "/usr/local/bin/kube-apiserver"

// kubeReadyTimeout bounds the API server's start (about 2 s on an idle
// machine; the first start also writes its bootstrap objects).
const kubeReadyTimeout = 90 * time.Second

// KubeServiceRange is the API server's service cluster-IP range (no
// traffic is ever sent to it by these tests).
const KubeServiceRange = "198.19.200.0/24"

// FindKubeAPIServer locates the kube-apiserver binary: $KUBE_APISERVER,
// then PATH, then KubeAPIServerBin.
func FindKubeAPIServer() (string, error) {
	if p := os.Getenv("KUBE_APISERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("kube-apiserver"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(KubeAPIServerBin); err != nil {
		return "", fmt.Errorf("kube-apiserver not found (scripts/install-deps.sh builds it): %w", err)
	}
	return KubeAPIServerBin, nil
}

// KubeAPIServer is a real Kubernetes API server with its own etcd, for
// the kubernetes-mode tests: anyone with Token is a cluster admin
// (AlwaysAllow), serving certificates are self-signed.
type KubeAPIServer struct {
	// NS is the network namespace both processes run in ("" for the
	// test's own).
	NS string
	// URL is https://<ip>:<port>.
	URL   string
	Token string
	// Kubeconfig is a kubeconfig file for URL and Token (TLS not
	// verified), readable by daemons started by the test.
	Kubeconfig string
	// CertDir holds the self-signed serving certificate apiserver.crt
	// (its own CA); SAKey signs service-account tokens.
	CertDir, SAKey string

	etcd, server *daemon
}

// KubeOptions place the API server.
type KubeOptions struct {
	// NS is the network namespace to run in; "" runs on the test's own
	// loopback.
	NS string
	// IP is the address the API server binds and advertises (default
	// 127.0.0.1).
	IP string
	// Port is its secure port; 0 picks a free one (only with NS "").
	Port int
	// EtcdPort is the client port of its etcd on 127.0.0.1, the peer
	// port is the next one; 0 picks free ones (only with NS "").
	EtcdPort int
	// Cluster configures it for the kubelet-managed cluster
	// (kubecluster.go): the ServiceAccount admission plugin on (pods get
	// their token volume) and the lease endpoint reconciler (the
	// `kubernetes` Service has the API server as its endpoint).
	Cluster bool
}

// StartKubeAPIServer runs an etcd and a kube-apiserver, waits until the
// API server is ready and stops both (and removes their data) when the
// test ends. A missing binary fails the test under CI=true, else skips
// it.
func StartKubeAPIServer(t testing.TB, opt KubeOptions) *KubeAPIServer {
	t.Helper()
	bin, err := FindKubeAPIServer()
	RequireComponent(t, "kube-apiserver", err)
	etcdBin, err := etcdBinary()
	RequireComponent(t, "etcd server binary (Debian package etcd-server)", err)
	if opt.IP == "" {
		opt.IP = "127.0.0.1"
	}
	if opt.NS != "" && (opt.Port == 0 || opt.EtcdPort == 0) {
		t.Fatalf("testbed: kube-apiserver in namespace %s needs fixed ports", opt.NS)
	}
	if opt.Port == 0 {
		opt.Port = freePort(t)
	}
	peerPort := opt.EtcdPort + 1
	if opt.EtcdPort == 0 {
		opt.EtcdPort, peerPort = freePort(t), freePort(t)
	}
	dir := t.TempDir()
	k := &KubeAPIServer{NS: opt.NS, URL: "https://" + net.JoinHostPort(opt.IP, strconv.Itoa(opt.Port)), Token: randomHex(16)}
	t.Cleanup(func() { k.stop(t) })

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", opt.EtcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	k.etcd = nsDaemon("kube-etcd", opt.NS, etcdBin, filepath.Join(dir, "etcd.log"),
		"--name", "kube", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "kube="+peerURL,
		"--logger", "zap", "--log-level", "warn")
	if err := k.etcd.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}

	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(k.Token+",testbed-admin,testbed-admin,system:masters\n"), 0o600); err != nil {
		t.Fatalf("testbed: kube token file: %v", err)
	}
	saKey, saPub := writeServiceAccountKeys(t, dir)
	k.CertDir, k.SAKey = filepath.Join(dir, "certs"), saKey
	admission, reconciler := []string{"--disable-admission-plugins", "ServiceAccount"}, "none"
	if opt.Cluster {
		admission, reconciler = nil, "lease"
	}
	args := append(admission, "--endpoint-reconciler-type", reconciler)
	k.server = nsDaemon("kube-apiserver", opt.NS, bin, filepath.Join(dir, "kube-apiserver.log"), append(args,
		"--etcd-servers", etcdURL,
		"--bind-address", opt.IP, "--advertise-address", opt.IP, "--secure-port", strconv.Itoa(opt.Port),
		"--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", tokens,
		"--authorization-mode", "AlwaysAllow",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", KubeServiceRange,
		"--enable-priority-and-fairness=false", "--profiling=false",
		// kubectl exec, logs and the proxy dial a kubelet at its node
		// address: the default prefers the node's host name, which no DNS
		// here resolves.
		"--kubelet-preferred-address-types", "InternalIP",
		// The deployment manifests' netplugin DaemonSet is privileged, as
		// on a real cluster (TestManifestsDryRun).
		"--allow-privileged=true")...)
	if err := k.server.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}

	k.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: testbed-admin
  user: {token: %q}
contexts:
- name: testbed
  context: {cluster: testbed, user: testbed-admin}
current-context: testbed
`, k.URL, k.Token)
	if err := os.WriteFile(k.Kubeconfig, []byte(kc), 0o644); err != nil {
		t.Fatalf("testbed: kubeconfig: %v", err)
	}
	// The state folder is the test's temporary folder: let daemons in
	// other namespaces (run as root too) read the kubeconfig.
	os.Chmod(dir, 0o755)

	hc := k.httpClient()
	err = poll(kubeReadyTimeout, k.server.exited(), func() error {
		req, err := http.NewRequest(http.MethodGet, k.URL+"/readyz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+k.Token)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("testbed: kube-apiserver at %s: %v\n--- kube-apiserver ---\n%s\n--- etcd ---\n%s",
			k.URL, err, k.server.logs(40), k.etcd.logs(20))
	}
	return k
}

// RESTConfig is a client configuration for the test process (it dials
// inside NS).
func (k *KubeAPIServer) RESTConfig(t testing.TB) *rest.Config {
	t.Helper()
	c, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		t.Fatalf("testbed: kubeconfig: %v", err)
	}
	if k.NS != "" {
		c.Dial = dialIn(k.NS)
	}
	c.Timeout = 30 * time.Second
	return c
}

// Client is a clientset for the test process.
func (k *KubeAPIServer) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(k.RESTConfig(t))
	if err != nil {
		t.Fatalf("testbed: kubernetes client: %v", err)
	}
	return cs
}

// Logs returns the last n lines of the API server's log.
func (k *KubeAPIServer) Logs(n int) string { return k.server.logs(n) }

func (k *KubeAPIServer) httpClient() *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // self-signed test server
	if k.NS != "" {
		tr.DialContext = dialIn(k.NS)
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// stop kills the API server (its graceful shutdown waits for the watches
// of clients that may still run; nothing of it is kept) and stops etcd.
func (k *KubeAPIServer) stop(t testing.TB) {
	if k.server != nil {
		k.server.stop(syscall.SIGKILL, stopGrace)
	}
	if k.etcd != nil {
		if err := k.etcd.stop(syscall.SIGTERM, stopGrace); err != nil {
			t.Logf("testbed: %v", err)
		}
	}
}

// nsDaemon is a daemon in namespace ns, or in the test's own when ns is "".
func nsDaemon(name, ns, bin, logPath string, args ...string) *daemon {
	d := &daemon{name: name, ns: ns, bin: bin, args: args, logPath: logPath}
	if ns == "" {
		d.direct = append([]string{bin}, args...)
	}
	return d
}

// writeServiceAccountKeys writes the RSA key pair the API server signs and
// checks service-account tokens with.
func writeServiceAccountKeys(t testing.TB, dir string) (keyPath, pubPath string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("testbed: service-account key: %v", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatalf("testbed: service-account key: %v", err)
	}
	keyPath, pubPath = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return keyPath, pubPath
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testbed: free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// StartKube starts a testbed of hosts hosts whose netplugins run in
// kubernetes mode and watch a real kube-apiserver started in the first
// netmaster's namespace (--k8s-config); extra netplugin arguments go in
// npArgs. Every Kubernetes end-to-end test and benchmark sets up through here.
func StartKube(t testing.TB, hosts int, npArgs ...string) (*Testbed, *KubeAPIServer) {
	t.Helper()
	args := append([]string{"--mode", "kubernetes"}, npArgs...)
	tb := New(t, Config{Hosts: hosts, SkipNetplugin: true, NetpluginArgs: args})
	m := tb.Masters[0]
	k := StartKubeAPIServer(t, KubeOptions{NS: m.NS, IP: m.IP, Port: 6443, EtcdPort: 23790})
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

// FindCnitool returns the cnitool binary (scripts/install-deps.sh installs
// it into /usr/local/bin; `go install` puts it in GOPATH/bin); missing, the
// caller fails in CI and is skipped elsewhere.
func FindCnitool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("cnitool")
	if err == nil {
		return p
	}
	alt := filepath.Join(build.Default.GOPATH, "bin", "cnitool")
	if _, serr := os.Stat(alt); serr == nil {
		return alt
	}
	RequireComponent(t, "cnitool (scripts/install-deps.sh)", err)
	return ""
}
