package attach_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/utils/runtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// fakeAttacher records the requests it gets and answers with res / err.
type fakeAttacher struct {
	mu       sync.Mutex
	attaches []attach.Request
	detaches []attach.DetachRequest
	res      attach.Result
	err      error
}

func (f *fakeAttacher) Attach(_ context.Context, req attach.Request) (attach.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attaches = append(f.attaches, req)
	return f.res, f.err
}

func (f *fakeAttacher) Detach(_ context.Context, req attach.DetachRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.detaches = append(f.detaches, req)
	return f.err
}

func (f *fakeAttacher) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.attaches) + len(f.detaches)
}

// serve runs the API for a on a socket in a fresh directory until the test
// ends and returns the socket path.
func serve(t *testing.T, a attach.Attacher) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run", "attach.sock")
	ln, err := attach.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	runtest.Go(t, "serve", func(ctx context.Context) error { return attach.ServeListener(ctx, ln, a, quietLog()) })
	return path
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func goodRequest() attach.Request {
	return attach.Request{Tenant: "default", Network: "net1", Group: "web", ContainerID: "c0ffee",
		Name: "pod-1", NetNS: "/var/run/netns/x"}
}

func TestAttachDetachRoundTrip(t *testing.T) {
	want := attach.Result{EndpointID: "net1.default-c0ffee", IPAddress: "198.18.0.5/24", IPv6Address: "2001:2::5/64",
		MacAddress: "02:02:c6:12:00:05", Gateway: "198.18.0.1", IPv6Gateway: "2001:2::1", MTU: 1450,
		PortName: "vvport7", IfName: "eth0"}
	f := &fakeAttacher{res: want}
	c := attach.NewClient(serve(t, f))

	got, err := c.Attach(ctx(t), goodRequest())
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	if got != want {
		t.Fatalf("result %+v, want %+v", got, want)
	}
	wantReq := goodRequest()
	wantReq.IfName = attach.DefaultIfName
	if len(f.attaches) != 1 || !reflect.DeepEqual(f.attaches[0], wantReq) {
		t.Fatalf("attacher got %+v, want [%+v]", f.attaches, wantReq)
	}

	dr := attach.DetachRequest{Tenant: "default", Network: "net1", ContainerID: "c0ffee", IfName: "net0"}
	if err := c.Detach(ctx(t), dr); err != nil {
		t.Fatalf("detach: %v", err)
	}
	if len(f.detaches) != 1 || f.detaches[0] != dr {
		t.Fatalf("attacher got detaches %+v, want [%+v]", f.detaches, dr)
	}
}

func TestInvalidRequestsNameTheField(t *testing.T) {
	f := &fakeAttacher{}
	c := attach.NewClient(serve(t, f))
	cases := map[string]func(r *attach.Request){
		"tenant":      func(r *attach.Request) { r.Tenant = "" },
		"network":     func(r *attach.Request) { r.Network = "a/b" },
		"group":       func(r *attach.Request) { r.Group = "x y" },
		"containerID": func(r *attach.Request) { r.ContainerID = "" },
		"netns":       func(r *attach.Request) { r.NetNS = "relative/path" },
		"ifName":      func(r *attach.Request) { r.IfName = "sixteen-chars-xx" },
		"name":        func(r *attach.Request) { r.Name = "a\nb" },
	}
	for field, edit := range cases {
		req := goodRequest()
		edit(&req)
		_, err := c.Attach(ctx(t), req)
		var se *attach.StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || !errors.Is(err, attach.ErrInvalidRequest) {
			t.Errorf("%s: want a 400 StatusError, got %v", field, err)
			continue
		}
		if !strings.Contains(se.Message, fmt.Sprintf("field %q", field)) {
			t.Errorf("%s: message %q does not name the field", field, se.Message)
		}
	}
	err := c.Detach(ctx(t), attach.DetachRequest{Tenant: "t", Network: "n"})
	if !errors.Is(err, attach.ErrInvalidRequest) || !strings.Contains(err.Error(), `field "containerID"`) {
		t.Errorf("detach without containerID: %v", err)
	}
	if f.calls() != 0 {
		t.Errorf("the attacher was called %d times for invalid requests", f.calls())
	}
}

func TestAttacherErrors(t *testing.T) {
	f := &fakeAttacher{err: errors.New("netmaster: network not found")}
	c := attach.NewClient(serve(t, f))
	_, err := c.Attach(ctx(t), goodRequest())
	var se *attach.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError || se.Message != "netmaster: network not found" {
		t.Fatalf("want 500 with the attacher's message, got %v", err)
	}
	if errors.Is(err, attach.ErrInvalidRequest) {
		t.Fatalf("a 500 must not read as an invalid request: %v", err)
	}
	err = c.Detach(ctx(t), attach.DetachRequest{Tenant: "t", Network: "n", ContainerID: "c"})
	if !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError {
		t.Fatalf("detach: want 500, got %v", err)
	}
	// The attacher's own validation error is still a 400.
	f.err = &attach.FieldError{Field: "group", Reason: "does not exist"}
	if _, err := c.Attach(ctx(t), goodRequest()); !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest {
		t.Fatalf("attacher FieldError: want 400, got %v", err)
	}
}

// rawPost sends a request over the socket as is.
func rawPost(t *testing.T, sock, method, path, ct string, body io.Reader) (int, string) {
	t.Helper()
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", sock) }}}
	req, err := http.NewRequestWithContext(ctx(t), method, "http://x"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s %s: content type %q", method, path, resp.Header.Get("Content-Type"))
	}
	return resp.StatusCode, string(b)
}

func TestHTTPStatuses(t *testing.T) {
	f := &fakeAttacher{}
	sock := serve(t, f)
	good := `{"tenant":"t","network":"n","containerID":"c","netns":"/proc/1/ns/net"}`
	huge := `{"tenant":"t","network":"n","containerID":"c","netns":"/proc/1/ns/net","name":"` + strings.Repeat("x", attach.MaxBodyBytes) + `"}`
	cases := []struct {
		name, method, path, ct, body string
		code                         int
		msg                          string
	}{
		{"ok", "POST", "/attach", "application/json", good, 200, ""},
		{"ok charset", "POST", "/detach", "application/json; charset=utf-8", good, 200, ""},
		{"get", "GET", "/attach", "", "", 405, "not allowed"},
		{"put", "PUT", "/detach", "application/json", good, 405, "not allowed"},
		{"unknown path", "POST", "/ContivCNI.AddPod", "application/json", good, 404, "no such route"},
		{"bad json", "POST", "/attach", "application/json", `{"tenant":`, 400, "decode JSON"},
		{"unknown key", "POST", "/attach", "application/json", `{"tenant":"t","vlan":5}`, 400, "unknown field"},
		{"trailing data", "POST", "/attach", "application/json", good + `{}`, 400, "trailing data"},
		{"array", "POST", "/detach", "application/json", `[]`, 400, "decode JSON"},
		{"too large", "POST", "/attach", "application/json", huge, 413, "too large"},
		{"text body", "POST", "/attach", "text/plain", good, 415, "not application/json"},
	}
	for _, tc := range cases {
		code, body := rawPost(t, sock, tc.method, tc.path, tc.ct, strings.NewReader(tc.body))
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: got %d %s; want %d containing %q", tc.name, code, body, tc.code, tc.msg)
		}
		if code != 200 && !strings.HasPrefix(body, `{"error":`) {
			t.Errorf("%s: error body %q is not {\"error\":...}", tc.name, body)
		}
	}
	if f.calls() != 2 {
		t.Errorf("attacher called %d times, want 2", f.calls())
	}
}

// Serve creates the socket directory 0700, replaces a stale socket, and
// removes the socket when ctx ends.
func TestServeSocketLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "contiv")
	sock := filepath.Join(dir, "attach.sock")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}

	f := &fakeAttacher{res: attach.Result{EndpointID: "e"}}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- attach.Serve(sctx, sock, f, quietLog()) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()
	c := attach.NewClient(sock)
	var res attach.Result
	for i := 0; ; i++ {
		if res, err = c.Attach(ctx(t), goodRequest()); err == nil {
			break
		}
		if i == 100 {
			t.Fatalf("server never answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res.EndpointID != "e" {
		t.Fatalf("result %+v", res)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v (%v), want 0600", fi.Mode(), err)
	}

	// A second server on the same path refuses to steal the live socket.
	if _, err := attach.Listen(sock); !errors.Is(err, attach.ErrSocketInUse) {
		t.Errorf("listen on a live socket: want ErrSocketInUse, got %v", err)
	}

	cancel()
	err = <-done
	stopped = true
	if err != nil {
		t.Fatalf("serve returned %v after cancel", err)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there after stop: %v", err)
	}
}

func TestListenCreatesPrivateDirAndRefusesNonSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	ln, err := attach.Listen(filepath.Join(dir, "a.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode %v (%v), want 0700", fi.Mode(), err)
	}
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := attach.Listen(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("listen on a regular file: %v", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Errorf("regular file was touched: %q %v", b, err)
	}
}
