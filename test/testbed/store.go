package testbed

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/consul"
	"github.com/contiv/netplugin/objdb/etcd"
)

// Store opens an objdb client (etcd or consul, default root) to the
// cluster store.
// The store is only routable inside the testbed, so the client talks to a
// loopback proxy of the test process whose upstream connections are
// opened inside the store's namespace. The client is closed in t.Cleanup.
func (tb *Testbed) Store(t testing.TB) objdb.Store {
	t.Helper()
	if tb.cluster != nil {
		return tb.clusterStore(t)
	}
	ns := tb.Masters[0].NS
	if tb.StoreNS != "" {
		ns = tb.StoreNS
	}
	port := EtcdPort
	if tb.Config.Store == ExternalConsul {
		port = ConsulPort
	}
	addr, err := tb.proxy.start(ns, fmt.Sprintf("%s:%d", tb.StoreIP, port))
	if err != nil {
		t.Fatalf("testbed: store proxy: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeReadyTimeout)
	defer cancel()
	var st objdb.Store
	if tb.Config.Store == ExternalConsul {
		cfg := consul.Config{Endpoints: []string{tb.consulScheme() + "://" + addr}, Token: tb.ConsulToken}
		if cfg.TLS, err = tb.storeClientTLS(); err != nil {
			t.Fatalf("testbed: store client TLS: %v", err)
		}
		st, err = consul.New(ctx, cfg)
	} else {
		tlsCfg, terr := tb.storeClientTLS()
		if terr != nil {
			t.Fatalf("testbed: store client TLS: %v", terr)
		}
		st, err = etcd.New(ctx, etcd.Config{Endpoints: []string{tb.storeScheme() + "://" + addr}, TLS: tlsCfg})
	}
	if err != nil {
		t.Fatalf("testbed: open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// WaitNetplugins waits (bounded) until the service netplugin.vtep has n
// instances, failing early when a started netplugin exits.
func (tb *Testbed) WaitNetplugins(t testing.TB, n int, within time.Duration) {
	t.Helper()
	st := tb.Store(t)
	deadline := time.Now().Add(within)
	var got []objdb.ServiceInfo
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, lastErr = st.GetService(ctx, "netplugin.vtep")
		cancel()
		if lastErr == nil && len(got) == n {
			return
		}
		for _, h := range tb.Hosts {
			if h.netplugin.bin != "" && !h.netplugin.running() {
				t.Fatalf("testbed: netplugin on %s exited (%s) before registering:\n%s",
					h.Name, h.netplugin.exitStatus(), h.netplugin.logs(60))
			}
		}
		if time.Now().After(deadline) {
			var hosts []string
			for _, s := range got {
				hosts = append(hosts, s.Hostname)
			}
			var logs strings.Builder
			for _, h := range tb.Hosts {
				fmt.Fprintf(&logs, "--- netplugin %s ---\n%s\n", h.Name, h.netplugin.logs(30))
			}
			t.Fatalf("testbed: %d of %d netplugins registered netplugin.vtep within %v (registered: %v, last error: %v)\n%s",
				len(got), n, within, hosts, lastErr, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// storeProxy forwards loopback connections of the test process to a
// target dialled inside a namespace.
type storeProxy struct {
	mu     sync.Mutex
	ln     net.Listener
	cancel context.CancelFunc
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// start listens (once) on 127.0.0.1 and returns the listening address.
func (p *storeProxy) start(ns, target string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return p.ln.Addr().String(), nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.ln, p.cancel, p.conns = ln, cancel, map[net.Conn]struct{}{}
	dial := dialIn(ns)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			down, err := ln.Accept()
			if err != nil {
				return // listener closed
			}
			dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
			up, err := dial(dctx, "tcp", target)
			dcancel()
			if err != nil {
				down.Close()
				continue
			}
			if !p.track(down, up) {
				return
			}
			p.wg.Add(2)
			go p.pipe(down, up)
			go p.pipe(up, down)
		}
	}()
	return ln.Addr().String(), nil
}

// track records a connection pair; false (and both closed) once the proxy
// is closing.
func (p *storeProxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		a.Close()
		b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// pipe copies until either side ends, then closes both.
func (p *storeProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	if p.conns != nil {
		delete(p.conns, dst)
		delete(p.conns, src)
	}
	p.mu.Unlock()
}

// close stops the listener, cuts every connection and waits for the
// proxy's goroutines.
func (p *storeProxy) close() {
	p.mu.Lock()
	if p.ln == nil {
		p.mu.Unlock()
		return
	}
	p.cancel()
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
