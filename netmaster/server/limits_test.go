package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// TestSlowClientsCutOff: clients sending their body at a few bytes a
// second are cut off by the read timeout (docs/rest-errors.md): each gets
// a 408 or a closed connection long before its body would be complete,
// and the server keeps answering others.
func TestSlowClientsCutOff(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	cfg := testConfig(srv.Endpoint, freeAddr(t, "127.0.0.1"))
	cfg.HTTP = HTTPLimits{ReadTimeout: 400 * time.Millisecond}
	leader := LeaderFunc(func(ctx context.Context, st objdb.Store) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := contivmodel.ReadBody(w, r, 1<<20); err != nil {
				http.Error(w, contivmodel.Message(err), contivmodel.Status(err))
				return
			}
			fmt.Fprintln(w, "ok")
		}), nil
	})
	r := launch(t, cfg, leader, "A")
	if r.d.cfg.HTTP.WriteTimeout != DefaultHTTPLimits.WriteTimeout || r.d.cfg.HTTP.MaxBodyBytes != DefaultHTTPLimits.MaxBodyBytes {
		t.Fatalf("defaults not applied: %+v", r.d.cfg.HTTP)
	}
	waitFor(t, 10*time.Second, "leadership", func() bool { return r.d.State() == RoleLeader })
	addr := r.addr

	const clients, bodyLen = 5, 40 // 40 bytes at 10 bytes/s: 4 s, ten times the timeout
	var wg sync.WaitGroup
	results := make(chan string, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- slowPost(addr, bodyLen, 100*time.Millisecond)
		}()
	}
	wg.Wait()
	close(results)
	for r := range results {
		t.Log(r)
		if !strings.HasPrefix(r, "cut off") {
			t.Errorf("slow client: %s", r)
		}
	}
	// A normal client is served.
	resp, err := http.Post("http://"+addr+"/x", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("normal client after the slow ones: %d", resp.StatusCode)
	}
}

// slowPost sends a POST whose body of n bytes trickles one byte per gap.
// It reports "cut off (…)" when the server answered 408 or closed the
// connection before the body was complete, else what happened.
func slowPost(addr string, n int, gap time.Duration) string {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /x HTTP/1.1\r\nHost: %s\r\nAccept: application/problem+json\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, n); err != nil {
		return "write headers: " + err.Error()
	}
	answer := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answer <- "closed: " + err.Error()
			return
		}
		resp.Body.Close()
		answer <- fmt.Sprintf("status %d", resp.StatusCode)
	}()
	for i := 0; i < n; i++ {
		select {
		case a := <-answer:
			if a == "status 408" || strings.HasPrefix(a, "closed") {
				return fmt.Sprintf("cut off (%s after %d of %d bytes)", a, i, n)
			}
			return a
		case <-time.After(gap):
		}
		if _, err := conn.Write([]byte{' '}); err != nil {
			return fmt.Sprintf("cut off (write failed after %d of %d bytes)", i, n)
		}
	}
	select {
	case a := <-answer:
		return "body completed, then " + a
	case <-time.After(5 * time.Second):
		return "body completed, no answer"
	}
}
