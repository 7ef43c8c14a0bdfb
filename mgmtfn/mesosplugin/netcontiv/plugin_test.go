package netcontiv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	types020 "github.com/containernetworking/cni/pkg/types/020"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
	"github.com/contiv/netplugin/mgmtfn/mesosplugin"
	"github.com/contiv/netplugin/mgmtfn/mesosplugin/netcontiv"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeAgent attaches by handing out addresses and records what it holds.
type fakeAgent struct {
	mu    sync.Mutex
	next  int
	held  map[string]attach.Request // by container id
	calls int
}

func (f *fakeAgent) Attach(_ context.Context, r attach.Request) (attach.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if r.Network == "refused" {
		return attach.Result{}, fmt.Errorf("%w: network refused.%s not found", attach.ErrInvalidRequest, r.Tenant)
	}
	f.next++
	f.held[r.ContainerID] = r
	return attach.Result{EndpointID: r.Network + "." + r.Tenant + "-" + r.ContainerID, IPAddress: fmt.Sprintf("198.18.9.%d/24", f.next),
		Gateway: "198.18.9.254", MacAddress: fmt.Sprintf("02:02:c6:12:09:%02x", f.next), MTU: 1450, IfName: r.IfName}, nil
}

func (f *fakeAgent) Detach(_ context.Context, r attach.DetachRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.held, r.ContainerID)
	return nil
}

func (f *fakeAgent) CheckAttachment(context.Context, k8splugin.AttachmentRef) error { return nil }

// inProcess is the API over the Mesos server's handler, without a socket.
type inProcess struct{ h *mesosplugin.Server }

func (a inProcess) Post(ctx context.Context, path string, in, out any) error {
	srv := newLoopback(a.h)
	defer srv.close()
	return cniapi.NewClient(srv.socket).Post(ctx, path, in, out)
}

type loopback struct {
	socket string
	cancel context.CancelFunc
	done   chan struct{}
}

func newLoopback(h *mesosplugin.Server) *loopback {
	dir, _ := os.MkdirTemp("", "mesos-test")
	l := &loopback{socket: filepath.Join(dir, "m.sock"), done: make(chan struct{})}
	ln, err := net.Listen("unix", l.socket)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() {
		defer close(l.done)
		_ = h.ServeListener(ctx, ln)
	}()
	return l
}

func (l *loopback) close() {
	l.cancel()
	<-l.done
	os.RemoveAll(filepath.Dir(l.socket))
}

// mesosConf is a configuration as Mesos writes it: the operator's file
// with the container's NetworkInfo under args["org.apache.mesos"].
func mesosConf(ver string, labels ...string) []byte {
	var ls []string
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, fmt.Sprintf(`{"key":%q,"value":%q}`, labels[i], labels[i+1]))
	}
	return fmt.Appendf(nil, `{"cniVersion":%q,"name":"contiv","type":"netcontiv","logFile":"-",`+
		`"args":{"org.apache.mesos":{"network_info":{"name":"contiv","labels":{"labels":[%s]},"ip_addresses":[{"protocol":"IPv4"}]}}}}`,
		ver, strings.Join(ls, ","))
}

func setup(t *testing.T) (*fakeAgent, *netcontiv.Plugin) {
	t.Helper()
	f := &fakeAgent{held: map[string]attach.Request{}}
	srv, err := mesosplugin.New(mesosplugin.Config{Attacher: f, Checker: f, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := &netcontiv.Plugin{Dial: func(string) netcontiv.API { return inProcess{srv} }, Log: io.Discard}
	return f, p
}

// capture runs fn with stdout redirected and returns what it printed.
func capture(t *testing.T, fn func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	err = fn()
	os.Stdout = old
	w.Close()
	var buf bytes.Buffer
	_, _ = io.Copy(&buf, r)
	return buf.String(), err
}

// ADD places the container by its Mesos labels and prints a 0.2.0
// result (what Mesos reads); a repeated ADD prints the same; DEL twice
// succeeds and releases the attachment.
func TestAddDelIdempotent(t *testing.T) {
	f, p := setup(t)
	args := &skel.CmdArgs{ContainerID: "0f6c0b0e-6f3c-4a52-9b1b-2d1f5b6d7e01", Netns: "/var/run/mesos/isolators/network/cni/0f6c0b0e-6f3c-4a52-9b1b-2d1f5b6d7e01/ns",
		IfName: "eth0", StdinData: mesosConf("0.2.0", "io.contiv.tenant", "t1", "io.contiv.network", "web", "io.contiv.net-group", "front", "team", "blue")}
	out1, err := capture(t, func() error { return p.Add(args) })
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	var res types020.Result
	if err := json.Unmarshal([]byte(out1), &res); err != nil || res.IP4 == nil || res.IP4.IP.String() != "198.18.9.1/24" || res.IP4.Gateway.String() != "198.18.9.254" {
		t.Fatalf("ADD result %q (%v)", out1, err)
	}
	req := f.held[args.ContainerID]
	if req.Tenant != "t1" || req.Network != "web" || req.Group != "front" || req.NetNS != args.Netns {
		t.Fatalf("attached as %+v", req)
	}
	out2, err := capture(t, func() error { return p.Add(args) })
	if err != nil || out2 != out1 || f.calls != 1 {
		t.Fatalf("repeated ADD: %v %q (first %q), %d attach calls", err, out2, out1, f.calls)
	}
	// The same container asking for another group is refused.
	other := *args
	other.StdinData = mesosConf("0.2.0", "io.contiv.tenant", "t1", "io.contiv.network", "web", "io.contiv.net-group", "back")
	if _, err := capture(t, func() error { return p.Add(&other) }); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("ADD with other labels: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := capture(t, func() error { return p.Del(args) }); err != nil {
			t.Fatalf("DEL %d: %v", i+1, err)
		}
	}
	if len(f.held) != 0 {
		t.Fatalf("after DEL the agent holds %v", f.held)
	}
	// Without labels: tenant default, network default-net; 0.3.1 result.
	args.StdinData = mesosConf("0.3.1")
	out, err := capture(t, func() error { return p.Add(args) })
	if err != nil || !strings.Contains(out, `"ips"`) {
		t.Fatalf("ADD 0.3.1: %v %s", err, out)
	}
	if req := f.held[args.ContainerID]; req.Tenant != "default" || req.Network != "default-net" || req.Group != "" {
		t.Fatalf("attached without labels as %+v", req)
	}
}

// Bad input gets CNI errors with the right codes and changes nothing.
func TestErrors(t *testing.T) {
	f, p := setup(t)
	base := skel.CmdArgs{ContainerID: "c1", Netns: "/var/run/netns/c1", IfName: "eth0", StdinData: mesosConf("0.3.1", "io.contiv.tenant", "t1")}
	for _, c := range []struct {
		name string
		mod  func(a *skel.CmdArgs)
		code uint
		msg  string
	}{
		{"bad JSON", func(a *skel.CmdArgs) { a.StdinData = []byte(`{"cniVersion":`) }, types.ErrDecodingFailure, "parse the network configuration"},
		{"labels not a list", func(a *skel.CmdArgs) {
			a.StdinData = []byte(`{"cniVersion":"0.3.1","name":"contiv","type":"netcontiv","args":{"org.apache.mesos":{"network_info":{"labels":{"labels":{"key":"x"}}}}}}`)
		}, types.ErrDecodingFailure, "parse the network configuration"},
		{"label twice", func(a *skel.CmdArgs) {
			a.StdinData = mesosConf("0.3.1", "io.contiv.tenant", "t1", "io.contiv.tenant", "t2")
		}, types.ErrInvalidNetworkConfig, "io.contiv.tenant given twice"},
		{"label with a control character", func(a *skel.CmdArgs) {
			a.StdinData = mesosConf("0.3.1", "io.contiv.network", "a\nb")
		}, types.ErrInvalidNetworkConfig, "labels"},
		{"relative socket", func(a *skel.CmdArgs) {
			a.StdinData = []byte(`{"cniVersion":"0.3.1","name":"contiv","type":"netcontiv","socket":"x.sock"}`)
		}, types.ErrInvalidNetworkConfig, "absolute path"},
		{"no netns", func(a *skel.CmdArgs) { a.Netns = "" }, types.ErrInvalidEnvironmentVariables, `field "cni_netns" is empty`},
		{"bad container id", func(a *skel.CmdArgs) { a.ContainerID = "-x" }, types.ErrInvalidEnvironmentVariables, `field "cni_containerid" is invalid`},
		{"network refused", func(a *skel.CmdArgs) { a.StdinData = mesosConf("0.3.1", "io.contiv.network", "refused") }, types.ErrInvalidNetworkConfig, "Contiv: Error creating EP"},
	} {
		a := base
		c.mod(&a)
		_, err := capture(t, func() error { return p.Add(&a) })
		var ce *types.Error
		if !errors.As(err, &ce) || ce.Code != c.code || !strings.Contains(ce.Msg+" "+ce.Details, c.msg) {
			t.Errorf("%s: %v, want code %d with %q", c.name, err, c.code, c.msg)
		}
	}
	if len(f.held) != 0 {
		t.Fatalf("refused requests attached %v", f.held)
	}
	// netplugin not reachable: try again later.
	p.Dial = nil
	a := base
	a.StdinData = []byte(`{"cniVersion":"0.3.1","name":"contiv","type":"netcontiv","logFile":"-","socket":"/nonexistent/m.sock"}`)
	_, err := capture(t, func() error { return p.Add(&a) })
	var ce *types.Error
	if !errors.As(err, &ce) || ce.Code != types.ErrTryAgainLater {
		t.Fatalf("unreachable netplugin: %v", err)
	}
}

// The server answers the original's wire format: a request of the
// original netcontiv (no cni_network) gets {"ip4",…,"dns"}; unknown
// paths answer 503.
func TestWireFormat(t *testing.T) {
	f := &fakeAgent{held: map[string]attach.Request{}}
	srv, err := mesosplugin.New(mesosplugin.Config{Attacher: f, Checker: f, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	lb := newLoopback(srv)
	defer lb.close()
	c := cniapi.NewClient(lb.socket)
	var raw json.RawMessage
	body := map[string]any{"cni_ifname": "eth0", "cni_netns": "/proc/1/ns/net", "cni_containerid": "c9",
		"labels": map[string]string{"io.contiv.tenant": "default", "io.contiv.network": "n1"}}
	if err := c.Post(context.Background(), mesosplugin.PathAdd, body, &raw); err != nil {
		t.Fatal(err)
	}
	var orig struct {
		IP4 struct{ IP, Gateway string }
		DNS *struct{}
	}
	if err := json.Unmarshal(raw, &orig); err != nil || orig.IP4.IP != "198.18.9.1/24" || orig.DNS == nil {
		t.Fatalf("ADD answer %s", raw)
	}
	err = c.Post(context.Background(), "/MesosNwIntfOther", body, nil)
	var se *cniapi.ServerError
	if !errors.As(err, &se) || se.Status != 503 {
		t.Fatalf("unknown path: %v", err)
	}
	err = c.Post(context.Background(), mesosplugin.PathAdd, map[string]any{"cni_ifname": "eth0", "bogus": 1}, nil)
	if !errors.As(err, &se) || se.Status != 400 || !strings.Contains(se.Details, "bogus") {
		t.Fatalf("unknown member: %v", err)
	}
}
