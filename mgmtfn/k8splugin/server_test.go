package k8splugin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
	"github.com/contiv/netplugin/utils/runtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeAgent stands in for netplugin's attach path: it keeps the attached
// endpoints by tenant/network/container.
type fakeAgent struct {
	mu        sync.Mutex
	eps       map[string]attach.Request
	next      int
	calls     int
	attachErr error
	detachErr error
	checkErr  error
}

func newAgent() *fakeAgent { return &fakeAgent{eps: map[string]attach.Request{}} }

func key(tenant, network, ctr string) string { return network + "." + tenant + "-" + ctr }

func (f *fakeAgent) Attach(_ context.Context, r attach.Request) (attach.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.attachErr != nil {
		return attach.Result{}, f.attachErr
	}
	k := key(r.Tenant, r.Network, r.ContainerID)
	if _, dup := f.eps[k]; dup {
		return attach.Result{}, fmt.Errorf("endpoint %s is already attached", k)
	}
	f.next++
	f.eps[k] = r
	return attach.Result{EndpointID: k, IPAddress: fmt.Sprintf("198.19.0.%d/24", f.next), MacAddress: fmt.Sprintf("02:02:c6:13:00:%02x", f.next),
		Gateway: "198.19.0.254", MTU: 1450, PortName: fmt.Sprintf("vvport%d", f.next), IfName: r.IfName}, nil
}

func (f *fakeAgent) Detach(_ context.Context, r attach.DetachRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.detachErr != nil {
		return f.detachErr
	}
	delete(f.eps, key(r.Tenant, r.Network, r.ContainerID))
	return nil
}

func (f *fakeAgent) CheckAttachment(_ context.Context, ref k8splugin.AttachmentRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.checkErr != nil {
		return f.checkErr
	}
	if _, ok := f.eps[key(ref.Tenant, ref.Network, ref.ContainerID)]; !ok {
		return errors.New("endpoint not attached")
	}
	return nil
}

func (f *fakeAgent) endpoints() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.eps {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

type bed struct {
	agent *fakeAgent
	dir   string
	sock  string
	c     *cniapi.Client
}

// serve runs a server with a fake agent on a fresh socket.
func serve(t *testing.T, labels k8splugin.LabelSource, ready func(context.Context) error) *bed {
	t.Helper()
	b := &bed{agent: newAgent(), dir: filepath.Join(t.TempDir(), "records")}
	srv, err := k8splugin.New(k8splugin.Config{Attacher: b.agent, Checker: b.agent, Labels: labels,
		StateDir: b.dir, Ready: ready, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	b.sock = filepath.Join(t.TempDir(), "run", "cni.sock")
	ln, err := attach.Listen(b.sock)
	if err != nil {
		t.Fatal(err)
	}
	runtest.Go(t, "serve", func(ctx context.Context) error { return srv.ServeListener(ctx, ln) })
	b.c = cniapi.NewClient(b.sock)
	return b
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func pod(id string) cniapi.PodAttr {
	return cniapi.PodAttr{Name: "web-" + id, K8sNameSpace: "prod", InfraContainerID: id, NwNameSpace: "/var/run/netns/" + id,
		IntfName: "eth0", CNINetwork: "contiv-net"}
}

// snapshot returns the record directory's files and contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func TestAddPlacesPodByLabels(t *testing.T) {
	labels := k8splugin.LabelFunc(func(_ context.Context, p k8splugin.PodRef) (map[string]string, error) {
		if p.Namespace == "prod" && p.Name == "web-a" {
			return map[string]string{k8splugin.LabelTenant: "blue", k8splugin.LabelNetwork: "front", k8splugin.LabelGroup: "web"}, nil
		}
		return nil, k8splugin.ErrPodNotFound
	})
	b := serve(t, labels, nil)
	rsp, err := b.c.AddPod(tctx(t), pod("a"))
	if err != nil {
		t.Fatal(err)
	}
	if rsp.EndpointID != "front.blue-a" || rsp.IPAddress != "198.19.0.1/24" || rsp.Gateway != "198.19.0.254" || rsp.IfName != "eth0" {
		t.Fatalf("AddPod answered %+v", rsp)
	}
	got := b.agent.eps["front.blue-a"]
	if got.Group != "web" || got.Name != "web-a" || got.NetNS != "/var/run/netns/a" {
		t.Fatalf("attach request %+v", got)
	}
	// Unknown pod: the request's labels, then the defaults.
	p := pod("b")
	p.Labels = map[string]string{k8splugin.LabelNetwork: "back"}
	if _, err := b.c.AddPod(tctx(t), p); err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.AddPod(tctx(t), pod("c")); err != nil {
		t.Fatal(err)
	}
	want := []string{"back.default-b", "default-net.default-c", "front.blue-a"}
	if got := b.agent.endpoints(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("endpoints %v, want %v", got, want)
	}
	// A second interface of the same container is its own endpoint.
	p = pod("c")
	p.IntfName = "net1"
	if rsp, err := b.c.AddPod(tctx(t), p); err != nil || rsp.EndpointID != "default-net.default-c-net1" {
		t.Fatalf("second interface: %+v %v", rsp, err)
	}
}

func TestLabelSourceFailureIsTryAgain(t *testing.T) {
	labels := k8splugin.LabelFunc(func(context.Context, k8splugin.PodRef) (map[string]string, error) {
		return nil, errors.New("API server unreachable")
	})
	b := serve(t, labels, nil)
	_, err := b.c.AddPod(tctx(t), pod("a"))
	var se *cniapi.ServerError
	if !errors.As(err, &se) || se.Code != 11 || se.Msg != "Error getting labels" {
		t.Fatalf("want Error getting labels with code 11, got %v", err)
	}
	if len(snapshot(t, b.dir)) != 0 || b.agent.calls != 0 {
		t.Fatal("a failed label lookup changed something")
	}
}

func TestDelIsIdempotent(t *testing.T) {
	b := serve(t, nil, nil)
	// DEL of an attachment never made succeeds and calls nothing.
	if err := b.c.DelPod(tctx(t), pod("ghost")); err != nil {
		t.Fatalf("DEL of an unknown attachment: %v", err)
	}
	if b.agent.calls != 0 {
		t.Fatal("DEL of an unknown attachment called the agent")
	}
	if _, err := b.c.AddPod(tctx(t), pod("a")); err != nil {
		t.Fatal(err)
	}
	p := pod("a")
	p.NwNameSpace = "" // the namespace may be gone at DEL
	for i := 0; i < 2; i++ {
		if err := b.c.DelPod(tctx(t), p); err != nil {
			t.Fatalf("DEL %d: %v", i+1, err)
		}
	}
	if eps := b.agent.endpoints(); len(eps) != 0 {
		t.Fatalf("endpoints left after DEL: %v", eps)
	}
	if s := snapshot(t, b.dir); len(s) != 0 {
		t.Fatalf("records left after DEL: %v", s)
	}
	// A failing detach keeps the record so that DEL can be retried.
	if _, err := b.c.AddPod(tctx(t), pod("b")); err != nil {
		t.Fatal(err)
	}
	b.agent.detachErr = errors.New("netmaster down")
	var se *cniapi.ServerError
	if err := b.c.DelPod(tctx(t), pod("b")); !errors.As(err, &se) || se.Code != 11 {
		t.Fatalf("DEL with netmaster down: want code 11, got %v", err)
	}
	b.agent.detachErr = nil
	if err := b.c.DelPod(tctx(t), pod("b")); err != nil {
		t.Fatalf("DEL retry: %v", err)
	}
	if eps := b.agent.endpoints(); len(eps) != 0 {
		t.Fatalf("endpoints left: %v", eps)
	}
}

// A record left "adding" (netplugin died in the middle of an ADD) is
// cleaned by DEL, and by the next ADD of the same attachment.
func TestHalfMadeAttachment(t *testing.T) {
	b := serve(t, nil, nil)
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	half := `{"cniNetwork":"contiv-net","containerID":"h","ifName":"eth0","netns":"/var/run/netns/h","tenant":"default","network":"default-net","endpointContainer":"h","state":"adding","result":{}}`
	if err := os.WriteFile(filepath.Join(b.dir, "h@eth0.json"), []byte(half), 0o600); err != nil {
		t.Fatal(err)
	}
	b.agent.eps["default-net.default-h"] = attach.Request{} // the endpoint got made
	if err := b.c.DelPod(tctx(t), pod("h")); err != nil {
		t.Fatalf("DEL of a half-made attachment: %v", err)
	}
	if len(b.agent.endpoints()) != 0 || len(snapshot(t, b.dir)) != 0 {
		t.Fatalf("half-made attachment not cleaned: %v %v", b.agent.endpoints(), snapshot(t, b.dir))
	}
	if err := os.WriteFile(filepath.Join(b.dir, "h@eth0.json"), []byte(half), 0o600); err != nil {
		t.Fatal(err)
	}
	b.agent.eps["default-net.default-h"] = attach.Request{}
	if _, err := b.c.AddPod(tctx(t), pod("h")); err != nil {
		t.Fatalf("ADD over a half-made attachment: %v", err)
	}
	if eps := b.agent.endpoints(); len(eps) != 1 {
		t.Fatalf("endpoints %v", eps)
	}
}

func TestAddTwiceAndAttachFailure(t *testing.T) {
	b := serve(t, nil, nil)
	if _, err := b.c.AddPod(tctx(t), pod("a")); err != nil {
		t.Fatal(err)
	}
	var se *cniapi.ServerError
	if _, err := b.c.AddPod(tctx(t), pod("a")); !errors.As(err, &se) || se.Msg != "Error creating EP" || !strings.Contains(se.Details, "already exists") {
		t.Fatalf("second ADD: %v", err)
	}
	before := snapshot(t, b.dir)
	b.agent.attachErr = errors.New("no address left")
	if _, err := b.c.AddPod(tctx(t), pod("b")); !errors.As(err, &se) || se.Code != 999 || !strings.Contains(se.Details, "no address left") {
		t.Fatalf("failed attach: %v", err)
	}
	if after := snapshot(t, b.dir); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a failed ADD left records: %v", after)
	}
	b.agent.attachErr = &attach.FieldError{Field: "network", Reason: "does not exist"}
	if _, err := b.c.AddPod(tctx(t), pod("b")); !errors.As(err, &se) || se.Status != 400 || se.Code != 7 {
		t.Fatalf("attach refusing the network: %v", err)
	}
}

func TestCheck(t *testing.T) {
	b := serve(t, nil, nil)
	var se *cniapi.ServerError
	if _, err := b.c.CheckPod(tctx(t), pod("a")); !errors.As(err, &se) || se.Code != 3 {
		t.Fatalf("CHECK of an unknown attachment: want code 3, got %v", err)
	}
	added, err := b.c.AddPod(tctx(t), pod("a"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.c.CheckPod(tctx(t), pod("a"))
	if err != nil || got != added {
		t.Fatalf("CHECK: %+v %v, want %+v", got, err, added)
	}
	b.agent.checkErr = errors.New(`find link "eth0": Link not found`)
	if _, err := b.c.CheckPod(tctx(t), pod("a")); !errors.As(err, &se) || se.Msg != "Attachment is broken" || !strings.Contains(se.Details, "Link not found") {
		t.Fatalf("CHECK of a broken attachment: %v", err)
	}
}

func TestGC(t *testing.T) {
	b := serve(t, nil, nil)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := b.c.AddPod(tctx(t), pod(id)); err != nil {
			t.Fatal(err)
		}
	}
	other := pod("d")
	other.CNINetwork = "other-net"
	if _, err := b.c.AddPod(tctx(t), other); err != nil {
		t.Fatal(err)
	}
	rsp, err := b.c.GC(tctx(t), cniapi.GCRequest{CNINetwork: "contiv-net", Valid: []cniapi.Attachment{{ContainerID: "b", IfName: "eth0"}}})
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, a := range rsp.Removed {
		removed = append(removed, a.ContainerID)
	}
	sort.Strings(removed)
	if strings.Join(removed, ",") != "a,c" {
		t.Fatalf("GC removed %v, want a,c", removed)
	}
	if eps := b.agent.endpoints(); strings.Join(eps, " ") != "default-net.default-b default-net.default-d" {
		t.Fatalf("endpoints after GC: %v", eps)
	}
	// A failing detach is reported; the rest goes on.
	b.agent.detachErr = errors.New("netmaster down")
	var se *cniapi.ServerError
	if _, err := b.c.GC(tctx(t), cniapi.GCRequest{CNINetwork: "contiv-net"}); !errors.As(err, &se) || !strings.Contains(se.Msg, "netmaster down") {
		t.Fatalf("GC with failures: %v", err)
	}
}

func TestStatus(t *testing.T) {
	var mu sync.Mutex
	ready := errors.New("no netmaster")
	b := serve(t, nil, func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		return ready
	})
	var se *cniapi.ServerError
	if err := b.c.Status(tctx(t)); !errors.As(err, &se) || se.Code != 50 {
		t.Fatalf("STATUS not ready: want code 50, got %v", err)
	}
	mu.Lock()
	ready = nil
	mu.Unlock()
	if err := b.c.Status(tctx(t)); err != nil {
		t.Fatalf("STATUS ready: %v", err)
	}
	os.Remove(b.sock)
	if err := cniapi.NewClient(b.sock).Status(tctx(t)); !errors.Is(err, cniapi.ErrUnavailable) {
		t.Fatalf("STATUS without a server: %v", err)
	}
}

func rawPost(t *testing.T, sock, method, path, ct, body string) (int, string) {
	t.Helper()
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", sock) }}}
	req, err := http.NewRequestWithContext(tctx(t), method, "http://x"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Malformed requests are refused with the field named and change nothing:
// the records are byte-identical and the agent is never called.
func TestMalformedRequestsChangeNothing(t *testing.T) {
	b := serve(t, nil, nil)
	if _, err := b.c.AddPod(tctx(t), pod("keep")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, b.dir)
	calls := b.agent.calls
	good := `{"K8S_POD_INFRA_CONTAINER_ID":"keep","CNI_IFNAME":"eth0","CNI_NETNS":"/var/run/netns/keep","cniNetwork":"contiv-net"}`
	cases := []struct {
		name, method, path, ct, body string
		code                         int
		msg                          string
	}{
		{"unknown route", "POST", "/ContivCNI.Nope", "application/json", good, 404, "no such route"},
		{"get", "GET", cniapi.PathDelPod, "", "", 405, "not allowed"},
		{"text", "POST", cniapi.PathDelPod, "text/plain", good, 415, "not application/json"},
		{"bad json", "POST", cniapi.PathDelPod, "application/json", `{"K8S_POD_NAME":`, 400, "decode JSON"},
		{"unknown key", "POST", cniapi.PathDelPod, "application/json", `{"K8S_POD_INFRA_CONTAINER_ID":"keep","CNI_IFNAME":"eth0","vlan":1}`, 400, "unknown field"},
		{"trailing", "POST", cniapi.PathDelPod, "application/json", good + "{}", 400, "trailing data"},
		{"array", "POST", cniapi.PathGC, "application/json", `[]`, 400, "decode JSON"},
		{"no container", "POST", cniapi.PathDelPod, "application/json", `{"CNI_IFNAME":"eth0"}`, 400, `K8S_POD_INFRA_CONTAINER_ID`},
		{"bad container", "POST", cniapi.PathDelPod, "application/json", `{"K8S_POD_INFRA_CONTAINER_ID":"../keep","CNI_IFNAME":"eth0"}`, 400, `K8S_POD_INFRA_CONTAINER_ID`},
		{"bad ifname", "POST", cniapi.PathDelPod, "application/json", `{"K8S_POD_INFRA_CONTAINER_ID":"keep","CNI_IFNAME":"a/b"}`, 400, `CNI_IFNAME`},
		{"relative netns", "POST", cniapi.PathAddPod, "application/json", `{"K8S_POD_INFRA_CONTAINER_ID":"new","CNI_IFNAME":"eth0","CNI_NETNS":"netns/x"}`, 400, `CNI_NETNS`},
		{"add without netns", "POST", cniapi.PathAddPod, "application/json", `{"K8S_POD_INFRA_CONTAINER_ID":"new","CNI_IFNAME":"eth0"}`, 400, `CNI_NETNS`},
		{"bad pod name", "POST", cniapi.PathAddPod, "application/json", `{"K8S_POD_NAME":"a/b","K8S_POD_INFRA_CONTAINER_ID":"new","CNI_IFNAME":"eth0","CNI_NETNS":"/x"}`, 400, `K8S_POD_NAME`},
		{"bad label", "POST", cniapi.PathAddPod, "application/json", `{"K8S_POD_INFRA_CONTAINER_ID":"new","CNI_IFNAME":"eth0","CNI_NETNS":"/x","labels":{"io.contiv.tenant":"a\u0000"}}`, 400, `labels`},
		{"bad tenant", "POST", cniapi.PathAddPod, "application/json", `{"K8S_POD_INFRA_CONTAINER_ID":"new","CNI_IFNAME":"eth0","CNI_NETNS":"/x","labels":{"io.contiv.tenant":"a/b"}}`, 400, `tenant`},
		{"gc without network", "POST", cniapi.PathGC, "application/json", `{"validAttachments":[]}`, 400, `cniNetwork`},
		{"too large", "POST", cniapi.PathAddPod, "application/json", `{"K8S_POD_NAME":"` + strings.Repeat("x", cniapi.MaxBodyBytes) + `"}`, 413, "too large"},
	}
	for _, tc := range cases {
		code, body := rawPost(t, b.sock, tc.method, tc.path, tc.ct, tc.body)
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: got %d %s, want %d containing %q", tc.name, code, body, tc.code, tc.msg)
		}
	}
	if after := snapshot(t, b.dir); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("records changed by malformed requests:\nbefore %v\nafter  %v", before, after)
	}
	if b.agent.calls != calls {
		t.Fatalf("the agent was called %d times by malformed requests", b.agent.calls-calls)
	}
}

// An attachment whose pod network namespace is gone (the runtime dropped
// the sandbox after a failed DEL) is detached and forgotten by the sweep;
// one whose namespace exists, or whose namespace folder is not visible, is
// kept.
func TestSweepGone(t *testing.T) {
	b := &bed{agent: newAgent(), dir: filepath.Join(t.TempDir(), "records")}
	srv, err := k8splugin.New(k8splugin.Config{Attacher: b.agent, Checker: b.agent, StateDir: b.dir, Log: quiet(),
		SweepInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b.sock = filepath.Join(t.TempDir(), "run", "cni.sock")
	ln, err := attach.Listen(b.sock)
	if err != nil {
		t.Fatal(err)
	}
	nsDir := t.TempDir()
	live := filepath.Join(nsDir, "cni-live")
	if err := os.WriteFile(live, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b.c = cniapi.NewClient(b.sock)
	// Before the server runs: its sweep must not race the ADDs' checks.
	runtest.Go(t, "serve", func(ctx context.Context) error { return srv.ServeListener(ctx, ln) })
	add := func(id, netns string) {
		p := pod(id)
		p.NwNameSpace = netns
		if _, err := b.c.AddPod(tctx(t), p); err != nil {
			t.Fatal(err)
		}
	}
	add("live", live)
	add("gone", filepath.Join(nsDir, "cni-gone"))
	add("hidden", filepath.Join(nsDir, "not-visible", "cni-x"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		eps := strings.Join(b.agent.endpoints(), " ")
		if eps == "default-net.default-hidden default-net.default-live" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoints after the sweep: %s", eps)
		}
		time.Sleep(20 * time.Millisecond)
	}
	recs := snapshot(t, b.dir)
	if _, ok := recs["gone@eth0.json"]; ok || len(recs) != 2 {
		t.Fatalf("records after the sweep: %v", recs)
	}
}
