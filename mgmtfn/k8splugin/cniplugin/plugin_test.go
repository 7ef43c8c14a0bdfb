package cniplugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniplugin"
	"github.com/contiv/netplugin/utils/runtest"
)

// asPlugin makes the test binary itself the contivk8s plugin when the
// invoke tests run it.
const asPlugin = "CONTIVK8S_TEST_AS_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(asPlugin) == "1" {
		cniplugin.Main("contivk8s under test")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// agent is a fake attach path behind a real CNI server.
type agent struct {
	mu     sync.Mutex
	eps    map[string]attach.Request
	n      int
	broken bool
}

func (a *agent) Attach(_ context.Context, r attach.Request) (attach.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	a.eps[r.Network+"."+r.Tenant+"-"+r.ContainerID] = r
	return attach.Result{EndpointID: r.Network + "." + r.Tenant + "-" + r.ContainerID, IPAddress: fmt.Sprintf("198.19.0.%d/24", a.n),
		MacAddress: "02:02:c6:13:00:01", Gateway: "198.19.0.254", MTU: 1450, IfName: r.IfName}, nil
}

func (a *agent) Detach(_ context.Context, r attach.DetachRequest) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.eps, r.Network+"."+r.Tenant+"-"+r.ContainerID)
	return nil
}

func (a *agent) CheckAttachment(_ context.Context, ref k8splugin.AttachmentRef) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.broken {
		return errors.New(`find link "eth0": Link not found`)
	}
	return nil
}

func (a *agent) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.eps)
}

// server runs a CNI server with a fake agent and returns its socket.
func server(t *testing.T) (string, *agent) {
	t.Helper()
	a := &agent{eps: map[string]attach.Request{}}
	l := logrus.New()
	l.SetOutput(io.Discard)
	srv, err := k8splugin.New(k8splugin.Config{Attacher: a, Checker: a, StateDir: filepath.Join(t.TempDir(), "rec"), Log: l})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "cni.sock")
	ln, err := attach.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	runtest.Go(t, "serve", func(ctx context.Context) error { return srv.ServeListener(ctx, ln) })
	return sock, a
}

func conf(ver, sock string, extra string) []byte {
	return []byte(fmt.Sprintf(`{"cniVersion":%q,"name":"contiv-net","type":"contivk8s","socket":%q,"logFile":"-"%s}`, ver, sock, extra))
}

func plugin() *cniplugin.Plugin { return &cniplugin.Plugin{Log: io.Discard, Timeout: 10 * time.Second} }

func cmdArgs(id string, stdin []byte) *skel.CmdArgs {
	return &skel.CmdArgs{ContainerID: id, Netns: "/var/run/netns/" + id, IfName: "eth0",
		Args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web-" + id + ";K8S_POD_INFRA_CONTAINER_ID=" + id, StdinData: stdin}
}

var versions = []string{"0.3.1", "0.4.0", "1.0.0", "1.1.0"}

func TestAddResultInEveryVersion(t *testing.T) {
	sock, _ := server(t)
	p := plugin()
	for i, ver := range versions {
		args := cmdArgs(fmt.Sprintf("c%d", i), conf(ver, sock, ""))
		r, raw, err := testutils.CmdAddWithArgs(args, func() error { return p.Add(args) })
		if err != nil {
			t.Fatalf("%s: ADD: %v", ver, err)
		}
		var head struct{ CNIVersion string }
		if err := json.Unmarshal(raw, &head); err != nil || head.CNIVersion != ver {
			t.Fatalf("%s: result says version %q (%v): %s", ver, head.CNIVersion, err, raw)
		}
		res, err := current.NewResultFromResult(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.IPs) != 1 || res.IPs[0].Address.String() != fmt.Sprintf("198.19.0.%d/24", i+1) || res.IPs[0].Gateway.String() != "198.19.0.254" {
			t.Fatalf("%s: IPs %+v", ver, res.IPs)
		}
		if len(res.Interfaces) != 1 || res.Interfaces[0].Name != "eth0" || res.Interfaces[0].Sandbox != args.Netns || res.Interfaces[0].Mac != "02:02:c6:13:00:01" {
			t.Fatalf("%s: interfaces %+v", ver, res.Interfaces)
		}
		if len(res.Routes) != 1 || res.Routes[0].Dst.String() != "0.0.0.0/0" || res.Routes[0].GW.String() != "198.19.0.254" {
			t.Fatalf("%s: routes %+v", ver, res.Routes)
		}
	}
}

// A chained contivk8s keeps what earlier plugins returned and adds its
// interface after theirs.
func TestAddChainsOntoPrevResult(t *testing.T) {
	sock, _ := server(t)
	prev := `,"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"lo0","sandbox":"/var/run/netns/x"}],` +
		`"ips":[{"address":"198.18.5.5/32","interface":0}],"dns":{"nameservers":["198.18.5.53"]}}`
	args := cmdArgs("chain", conf("1.0.0", sock, prev))
	r, _, err := testutils.CmdAddWithArgs(args, func() error { return plugin().Add(args) })
	if err != nil {
		t.Fatal(err)
	}
	res, err := current.NewResultFromResult(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interfaces) != 2 || res.Interfaces[0].Name != "lo0" || res.Interfaces[1].Name != "eth0" {
		t.Fatalf("interfaces %+v", res.Interfaces)
	}
	if len(res.IPs) != 2 || res.IPs[0].Address.String() != "198.18.5.5/32" || *res.IPs[1].Interface != 1 {
		t.Fatalf("IPs %+v", res.IPs)
	}
	if len(res.DNS.Nameservers) != 1 {
		t.Fatalf("DNS of prevResult lost: %+v", res.DNS)
	}
}

func cniCode(t *testing.T, err error) uint {
	t.Helper()
	var e *types.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a CNI error", err, err)
	}
	return e.Code
}

func TestDelTwiceAndUnknown(t *testing.T) {
	sock, a := server(t)
	p := plugin()
	args := cmdArgs("d1", conf("1.0.0", sock, ""))
	if _, _, err := testutils.CmdAddWithArgs(args, func() error { return p.Add(args) }); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := testutils.CmdDelWithArgs(args, func() error { return p.Del(args) }); err != nil {
			t.Fatalf("DEL %d: %v", i+1, err)
		}
	}
	if a.count() != 0 {
		t.Fatal("endpoint left after DEL")
	}
	unknown := cmdArgs("never", conf("0.3.1", sock, ""))
	unknown.Netns = ""
	if err := testutils.CmdDelWithArgs(unknown, func() error { return p.Del(unknown) }); err != nil {
		t.Fatalf("DEL of an unknown attachment: %v", err)
	}
}

func TestCheck(t *testing.T) {
	sock, a := server(t)
	p := plugin()
	args := cmdArgs("k1", conf("1.0.0", sock, ""))
	_, raw, err := testutils.CmdAddWithArgs(args, func() error { return p.Add(args) })
	if err != nil {
		t.Fatal(err)
	}
	noPrev := cmdArgs("k1", conf("1.0.0", sock, ""))
	if err := testutils.CmdCheckWithArgs(noPrev, func() error { return p.Check(noPrev) }); cniCode(t, err) != types.ErrInvalidNetworkConfig {
		t.Fatalf("CHECK without prevResult: %v", err)
	}
	withPrev := cmdArgs("k1", conf("1.0.0", sock, `,"prevResult":`+string(raw)))
	if err := testutils.CmdCheckWithArgs(withPrev, func() error { return p.Check(withPrev) }); err != nil {
		t.Fatalf("CHECK: %v", err)
	}
	wrong := cmdArgs("k1", conf("1.0.0", sock, `,"prevResult":{"cniVersion":"1.0.0","ips":[{"address":"198.19.9.9/24"}]}`))
	if err := testutils.CmdCheckWithArgs(wrong, func() error { return p.Check(wrong) }); err == nil || !strings.Contains(err.Error(), "does not list") {
		t.Fatalf("CHECK with another address in prevResult: %v", err)
	}
	a.mu.Lock()
	a.broken = true
	a.mu.Unlock()
	err = testutils.CmdCheckWithArgs(withPrev, func() error { return p.Check(withPrev) })
	if err == nil || !strings.Contains(err.Error(), "Link not found") {
		t.Fatalf("CHECK of a broken attachment: %v", err)
	}
	gone := cmdArgs("k2", conf("1.0.0", sock, `,"prevResult":`+string(raw)))
	if err := testutils.CmdCheckWithArgs(gone, func() error { return p.Check(gone) }); cniCode(t, err) != types.ErrUnknownContainer {
		t.Fatalf("CHECK of an unknown container: %v", err)
	}
}

func TestGCKeepsValidAttachments(t *testing.T) {
	sock, a := server(t)
	p := plugin()
	for _, id := range []string{"g1", "g2", "g3"} {
		args := cmdArgs(id, conf("1.1.0", sock, ""))
		if _, _, err := testutils.CmdAddWithArgs(args, func() error { return p.Add(args) }); err != nil {
			t.Fatal(err)
		}
	}
	gc := &skel.CmdArgs{StdinData: conf("1.1.0", sock, `,"cni.dev/valid-attachments":[{"containerID":"g2","ifname":"eth0"}]`)}
	if err := p.GC(gc); err != nil {
		t.Fatalf("GC: %v", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.eps["default-net.default-g2"]; len(a.eps) != 1 || !ok {
		t.Fatalf("after GC: %v", a.eps)
	}
}

func TestStatus(t *testing.T) {
	sock, _ := server(t)
	p := plugin()
	if err := testutils.CmdStatus(func() error { return p.Status(&skel.CmdArgs{StdinData: conf("1.1.0", sock, "")}) }); err != nil {
		t.Fatalf("STATUS with netplugin up: %v", err)
	}
	down := filepath.Join(t.TempDir(), "nothing.sock")
	err := testutils.CmdStatus(func() error { return p.Status(&skel.CmdArgs{StdinData: conf("1.1.0", down, "")}) })
	if cniCode(t, err) != cniapi.ErrPluginNotAvailable {
		t.Fatalf("STATUS with netplugin down: %v", err)
	}
}

// exec runs the test binary as the plugin through the CNI library's invoke
// package, exactly as a runtime would.
func exec(t *testing.T, cmd, containerID, netns, cniArgs string, stdin []byte) ([]byte, error) {
	t.Helper()
	t.Setenv(asPlugin, "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := &invoke.Args{Command: cmd, ContainerID: containerID, NetNS: netns, IfName: "eth0", PluginArgsStr: cniArgs, Path: "/nonexistent"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return (&invoke.RawExec{Stderr: io.Discard}).ExecPlugin(ctx, self, stdin, args.AsEnv())
}

func TestErrorCodesFromTheBinary(t *testing.T) {
	sock, a := server(t)
	down := filepath.Join(t.TempDir(), "down.sock")
	good := "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web"
	cases := []struct {
		name, cmd, args string
		stdin           []byte
		code            uint
		msg             string
	}{
		{"old version", "ADD", good, conf("0.2.0", sock, ""), types.ErrIncompatibleCNIVersion, "incompatible CNI versions"},
		{"future version", "ADD", good, conf("9.9.9", sock, ""), types.ErrIncompatibleCNIVersion, "incompatible CNI versions"},
		{"bad version string", "DEL", good, conf("one", sock, ""), types.ErrIncompatibleCNIVersion, ""},
		{"CHECK before 0.4.0", "CHECK", good, conf("0.3.1", sock, ""), types.ErrIncompatibleCNIVersion, "does not allow CHECK"},
		{"GC before 1.1.0", "GC", good, conf("1.0.0", sock, ""), types.ErrIncompatibleCNIVersion, "does not allow GC"},
		{"STATUS before 1.1.0", "STATUS", good, conf("1.0.0", sock, ""), types.ErrIncompatibleCNIVersion, "does not allow STATUS"},
		{"malformed JSON", "ADD", good, []byte(`{"cniVersion":"1.0.0","name":`), types.ErrDecodingFailure, ""},
		{"no name", "ADD", good, []byte(`{"cniVersion":"1.0.0","type":"contivk8s"}`), types.ErrInvalidNetworkConfig, "missing network name"},
		{"relative socket", "ADD", good, conf("1.0.0", "run/x.sock", ""), types.ErrInvalidNetworkConfig, "socket"},
		{"bad prevResult", "ADD", good, conf("1.0.0", sock, `,"prevResult":{"cniVersion":"1.0.0","ips":"x"}`), types.ErrDecodingFailure, "prevResult"},
		{"unknown CNI_ARGS key", "ADD", "K8S_POD_NAME=web;COLOR=red", conf("1.0.0", sock, ""), types.ErrInvalidEnvironmentVariables, "CNI_ARGS"},
		{"CNI_ARGS pair without =", "DEL", "K8S_POD_NAME", conf("1.0.0", sock, ""), types.ErrInvalidEnvironmentVariables, "CNI_ARGS"},
		{"bad pod name", "ADD", "K8S_POD_NAME=a/b", conf("1.0.0", sock, ""), types.ErrInvalidEnvironmentVariables, "K8S_POD_NAME"},
		{"other infra id", "ADD", "K8S_POD_INFRA_CONTAINER_ID=zzz", conf("1.0.0", sock, ""), types.ErrInvalidEnvironmentVariables, "K8S_POD_INFRA_CONTAINER_ID"},
		{"bad tenant", "ADD", "CONTIV_TENANT=a/b", conf("1.0.0", sock, ""), types.ErrInvalidNetworkConfig, "tenant"},
		{"netplugin down ADD", "ADD", good, conf("1.0.0", down, ""), types.ErrTryAgainLater, "not reachable"},
		{"netplugin down DEL", "DEL", good, conf("1.0.0", down, ""), types.ErrTryAgainLater, "not reachable"},
		{"netplugin down STATUS", "STATUS", "", conf("1.1.0", down, ""), cniapi.ErrPluginNotAvailable, "not reachable"},
		{"unknown command", "FROB", good, conf("1.0.0", sock, ""), types.ErrInvalidEnvironmentVariables, "unknown CNI_COMMAND"},
	}
	for _, tc := range cases {
		out, err := exec(t, tc.cmd, "ctr1", "/var/run/netns/ctr1", tc.args, tc.stdin)
		if err == nil {
			t.Errorf("%s: succeeded: %s", tc.name, out)
			continue
		}
		var e *types.Error
		if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Error(), tc.msg) {
			t.Errorf("%s: got %v (%T), want code %d containing %q", tc.name, err, err, tc.code, tc.msg)
		}
	}
	if a.count() != 0 {
		t.Fatal("a failed call attached something")
	}
	// VERSION lists exactly the spec versions supported.
	out, err := exec(t, "VERSION", "", "", "", []byte(`{"cniVersion":"1.1.0"}`))
	if err != nil {
		t.Fatal(err)
	}
	info, err := (&version.PluginDecoder{}).Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(info.SupportedVersions(), ","); got != "0.3.1,0.4.0,1.0.0,1.1.0" {
		t.Fatalf("VERSION: %s", got)
	}
	// A DEL of an unknown attachment through the binary succeeds, no output.
	if out, err := exec(t, "DEL", "ghost", "", good, conf("1.1.0", sock, "")); err != nil || len(out) != 0 {
		t.Fatalf("DEL of an unknown attachment: %q %v", out, err)
	}
}
