package cniapi_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
)

// serve runs h on a unix socket of the test and returns its path.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cni.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return sock
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// The client's own HTTP/1.1 reads every framing net/http's server uses:
// a length, chunks (an answer larger than the server's buffer) and, on
// error, the server's message and code.
func TestClientFraming(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	sock := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || r.ContentLength <= 0 {
			http.Error(w, "bad request line or header", http.StatusTeapot)
			return
		}
		switch r.URL.Path {
		case "/small":
			w.Write([]byte(`{"endpointid":"ep1"}`))
		case "/chunked":
			w.Write([]byte(`{"endpointid":"` + big + `"}`))
			w.(http.Flusher).Flush()
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"result":1,"errmsg":"Error creating EP","errinfo":"Err: boom","code":11}`))
		case "/slow":
			time.Sleep(2 * time.Second)
		}
	}))
	c := cniapi.NewClient(sock)
	var r cniapi.RspAddPod
	if err := c.Post(ctx(t), "/small", struct{}{}, &r); err != nil || r.EndpointID != "ep1" {
		t.Fatalf("small: %v, %+v", err, r)
	}
	r = cniapi.RspAddPod{}
	if err := c.Post(ctx(t), "/chunked", struct{}{}, &r); err != nil || r.EndpointID != big {
		t.Fatalf("chunked: %v, endpoint id of %d bytes", err, len(r.EndpointID))
	}
	err := c.Post(ctx(t), "/fail", struct{}{}, &r)
	var se *cniapi.ServerError
	if !errors.As(err, &se) || se.Status != 500 || se.Msg != "Error creating EP" || se.Details != "Err: boom" || se.Code != 11 {
		t.Fatalf("fail: %v", err)
	}
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = c.Post(short, "/slow", struct{}{}, &r)
	if !errors.Is(err, cniapi.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow: %v, want unavailable and the deadline", err)
	}
}

func TestClientNoServer(t *testing.T) {
	err := cniapi.NewClient(filepath.Join(t.TempDir(), "none.sock")).Status(ctx(t))
	if !errors.Is(err, cniapi.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
}

// A server that closes without an answer, or answers garbage, is
// unavailable; a body cut short is an error.
func TestClientBrokenServer(t *testing.T) {
	for name, answer := range map[string]string{
		"closed":    "",
		"garbage":   "SSH-2.0-x\r\n\r\n",
		"truncated": "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"endpointid\":",
		"badchunk":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "s.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, 4096)
				conn.Read(buf)
				conn.Write([]byte(answer))
				conn.Close()
			}()
			var r cniapi.RspAddPod
			err = cniapi.NewClient(sock).Post(ctx(t), cniapi.PathAddPod, struct{}{}, &r)
			if err == nil {
				t.Fatal("no error")
			}
			if unavailable := errors.Is(err, cniapi.ErrUnavailable); unavailable != (name == "closed" || name == "garbage") {
				t.Errorf("%v: unavailable %v", err, unavailable)
			}
		})
	}
}
