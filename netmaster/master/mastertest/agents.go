package mastertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// The helpers below stand in for the netplugin agents a term talks to:
// their service registrations and their REST servers.

// ListenAll listens on one port (port 0: any free one) of every ip.
func ListenAll(ips []string, port int) ([]net.Listener, error) {
	var out []net.Listener
	for _, ip := range ips {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
		if err != nil {
			for _, l := range out {
				l.Close()
			}
			return nil, err
		}
		port = ln.Addr().(*net.TCPAddr).Port
		out = append(out, ln)
	}
	return out, nil
}

// RegisterNetplugin registers the netplugin service of a host (as netplugin
// does: control IP, agent port, host name); deregistered at cleanup.
func (e *Env) RegisterNetplugin(ctrl string, port uint16, hostname string) objdb.ServiceInfo {
	e.T.Helper()
	info := objdb.ServiceInfo{ServiceName: "netplugin", Role: "netplugin", TTL: 10, HostAddr: ctrl, Port: int(port), Hostname: hostname}
	e.Register(info)
	return info
}

// Register registers a service; deregistered at cleanup.
func (e *Env) Register(info objdb.ServiceInfo) {
	e.T.Helper()
	if err := e.St.RegisterService(Ctx(e.T, 10*time.Second), info); err != nil {
		e.T.Fatalf("register %+v: %v", info, err)
	}
	e.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.St.DeregisterService(ctx, info)
	})
}

// Deregister removes a service registration.
func (e *Env) Deregister(info objdb.ServiceInfo) {
	e.T.Helper()
	if err := e.St.DeregisterService(Ctx(e.T, 10*time.Second), info); err != nil {
		e.T.Fatalf("deregister %+v: %v", info, err)
	}
}

// FakeNetplugins serves the Netplugin service of netplugin's agent RPC
// (ReclaimEndpoint, Bgp; plain, no TLS) on one port of several loopback
// addresses (one per simulated host) and records every call as
// "<verb> <ip> <path>" of the inspect route it replaces
// ("DELETE ip /debug/reclaimEndpoint/<id>", "GET ip /inspect/bgp").
// Paths in fail are refused.
type FakeNetplugins struct {
	Port int
	fail map[string]bool
	// bgp is the Bgp answer of each address (absent: 404).
	bgp map[string]FakeAnswer

	mu   sync.Mutex
	reqs []string
}

// StartFakeNetplugins serves FakeNetplugins on ips until the test ends.
func StartFakeNetplugins(t testing.TB, ips ...string) *FakeNetplugins {
	t.Helper()
	var lns []net.Listener
	for attempt := 0; ; attempt++ {
		var err error
		if lns, err = ListenAll(ips, 0); err == nil {
			break
		}
		if attempt == 20 {
			t.Fatalf("listen on %v: %v", ips, err)
		}
	}
	f := &FakeNetplugins{Port: lns[0].Addr().(*net.TCPAddr).Port, fail: map[string]bool{}, bgp: map[string]FakeAnswer{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := &fakeNetpluginService{f: f, ip: ips[i]}
			if err := ofrpc.Serve(ctx, ln, map[string]any{ofrpc.ServiceNetplugin: svc}); err != nil {
				t.Errorf("fake netplugin: %v", err)
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return f
}

// fakeNetpluginService is the Netplugin service of one address.
type fakeNetpluginService struct {
	f  *FakeNetplugins
	ip string
}

func (s *fakeNetpluginService) record(verb, path string) bool {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.reqs = append(s.f.reqs, verb+" "+s.ip+" "+path)
	return s.f.fail[path]
}

// ReclaimEndpoint records the reclaim.
func (s *fakeNetpluginService) ReclaimEndpoint(args ofrpc.ReclaimArgs, reply *bool) error {
	p := "/debug/reclaimEndpoint/" + url.PathEscape(args.EndpointID)
	if s.record(http.MethodDelete, p) {
		return errors.New("reclaim endpoint: no such endpoint")
	}
	*reply = true
	return nil
}

// Bgp answers the canned BGP state.
func (s *fakeNetpluginService) Bgp(_ struct{}, reply *ofrpc.HTTPAnswer) error {
	s.record(http.MethodGet, "/inspect/bgp")
	s.f.mu.Lock()
	a, ok := s.f.bgp[s.ip]
	s.f.mu.Unlock()
	if !ok {
		*reply = ofrpc.HTTPAnswer{Status: http.StatusNotFound, Body: []byte("404 page not found\n")}
		return nil
	}
	*reply = ofrpc.HTTPAnswer{Status: a.Code, Body: []byte(a.Body)}
	return nil
}

// FakeAnswer is a canned HTTP answer.
type FakeAnswer struct {
	Code int
	Body string
}

// ClearBgp removes the /inspect/bgp answer of the host at ip (404).
func (f *FakeNetplugins) ClearBgp(ip string) {
	f.mu.Lock()
	delete(f.bgp, ip)
	f.mu.Unlock()
}

// SetBgp sets the /inspect/bgp answer of the host at ip.
func (f *FakeNetplugins) SetBgp(ip string, a FakeAnswer) {
	f.mu.Lock()
	f.bgp[ip] = a
	f.mu.Unlock()
}

// FailPath makes requests for path p answer 500.
func (f *FakeNetplugins) FailPath(p string) {
	f.mu.Lock()
	f.fail[p] = true
	f.mu.Unlock()
}

// Take returns the recorded requests, sorted, and forgets them.
func (f *FakeNetplugins) Take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.reqs
	f.reqs = nil
	slices.Sort(out)
	return out
}

// RegisterVtep registers a host's netplugin.vtep service.
func (e *Env) RegisterVtep(ip, hostname string) {
	e.T.Helper()
	e.Register(objdb.ServiceInfo{ServiceName: "netplugin.vtep", Role: "netplugin", TTL: 10, HostAddr: ip, Port: 4789, Hostname: hostname})
}

// EpCleanup sends a /debug/epcleanup request; query is "" or e.g.
// "dryRun=true". It returns the status and body; a 200 must be text/plain.
func (e *Env) EpCleanup(tenant, category, id, query string) (int, string) {
	e.T.Helper()
	path := "/debug/epcleanup/tenant/" + tenant + "/" + category + "/" + id
	if query != "" {
		path += "?" + query
	}
	code, body, hdr := DoReq(e.T, e.Srv.URL, "DELETE", path, "")
	if code == http.StatusOK && !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		e.T.Fatalf("epcleanup %s: 200 with Content-Type %q %q", path, hdr.Get("Content-Type"), body)
	}
	return code, body
}

// EpKeys lists the endpoint state ids.
func (e *Env) EpKeys() []string {
	e.T.Helper()
	var out []string
	for k := range e.Dump() {
		if id, ok := strings.CutPrefix(k, "state/eps/"); ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
