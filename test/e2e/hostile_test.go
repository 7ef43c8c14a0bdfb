package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/test/testbed"
	"github.com/contiv/netplugin/utils/certgen"
)

// TestHostileNeighbour (issue 22 acceptance, docs/security.md): from a
// namespace on the underlay and the management network that is not part
// of the cluster, every listener of a host (agent RPC 9002/9003, inspect
// 9090, OpenFlow 6633/6634, on its VTEP and control addresses) and
// netmaster's ofnet RPC (9001, management and underlay addresses) is
// tried with no credentials, with a certificate of a foreign CA carrying
// the master role, and with a real agent certificate (host 1's, a
// compromised node) against another agent's RPC and, speaking for host 0,
// against the master's. Every attempt is refused, and host 0's flows,
// ports and the store are byte-identical afterwards; a write to the store
// (etcd with client certificates) is tried the same ways. A control with the
// master certificate shows that the harness sees an accepted call.
//
// netmaster's REST API (9999) runs as docs/security.md tells production to
// (testbed.Config.SecureREST: HTTPS, client certificates of the cluster
// CA, admin and read-only tokens); netctl and the netplugins use the CA,
// their certificates and the admin token. From the outsider, reads and
// state-changing calls (POST a network, DELETE a tenant and a network,
// /debug/epcleanup, /plugin/deleteEndpoint) are tried over plain http
// (even with the admin token), over TLS with no client certificate, with
// a foreign-CA certificate, and with host 1's agent certificate (which
// the API's TLS admits: a node's certificate) without a token, with a
// wrong token and, for the state-changing ones, with the read-only token;
// every one is refused before it reaches the API (by the handshake, 401,
// 403, or the 400 for http to an HTTPS port).
func TestHostileNeighbour(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, SecureREST: true})
	netctl(t, tb, "net", "create", "--subnet", "198.19.21.0/24", "--gateway", "198.19.21.254", "hn1")
	a := attachNew(t, tb.Hosts[0], "ha", "default", "hn1", "")
	b := attachNew(t, tb.Hosts[1], "hb", "default", "hn1", "")
	if err := pingOK(a, b, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	out := tb.AddOutsider(t)
	st := tb.Store(t)

	snapshot := func() map[string]string {
		t.Helper()
		snap := map[string]string{}
		for _, h := range tb.Hosts {
			for _, br := range []string{ovsdriver.VxlanBridge, ovsdriver.VlanBridge} {
				flows, err := h.Ofctl("dump-flows", "--no-stats", br)
				if err != nil {
					t.Fatal(err)
				}
				snap[h.Name+" flows "+br] = strings.Join(testbed.NormalizeFlows(flows), "\n")
				ports, err := h.Vsctl("list-ports", br)
				if err != nil {
					t.Fatal(err)
				}
				snap[h.Name+" ports "+br] = ports
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		kvs, err := st.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			snap["store "+kv.Key] = string(kv.Value)
		}
		return snap
	}
	// Let the cluster settle (registrations, flows of the pings).
	time.Sleep(2 * time.Second)
	before := snapshot()

	// The attacker's credentials.
	foreign, err := certgen.WriteCluster(t.TempDir(), []net.IP{net.ParseIP(out.IP), net.ParseIP(out.MgmtIP)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := tls.LoadX509KeyPair(foreign.Master.Cert, foreign.Master.Key)
	if err != nil {
		t.Fatal(err)
	}
	stolenFiles, err := tb.AgentCert(h1)
	if err != nil {
		t.Fatal(err)
	}
	stolen, err := tls.LoadX509KeyPair(stolenFiles.Cert, stolenFiles.Key)
	if err != nil {
		t.Fatal(err)
	}
	masterCert, err := tls.LoadX509KeyPair(tb.PKI.Master.Cert, tb.PKI.Master.Key)
	if err != nil {
		t.Fatal(err)
	}
	noCert := &tls.Config{InsecureSkipVerify: true}
	withCert := func(c tls.Certificate) *tls.Config {
		return &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{c}}
	}

	epID := "hn1.default-" + a.id
	agentCalls := []string{
		`{"method":"OfnetAgent.DummyRpc","params":["x"],"id":1}`,
		fmt.Sprintf(`{"method":"OfnetAgent.EndpointDel","params":[{"EndpointID":"%s:0","IpAddr":"%s","OriginatorIp":"%s"}],"id":2}`, b.ip(), b.ip(), h1.IP),
		`{"method":"PolicyAgent.AddRule","params":[{"RuleId":"evil","Priority":100,"Action":"deny"}],"id":3}`,
		fmt.Sprintf(`{"method":"Netplugin.ReclaimEndpoint","params":[{"EndpointID":"%s"}],"id":4}`, epID),
	}
	// Speaking for host 0 to the master.
	masterCalls := []string{
		fmt.Sprintf(`{"method":"OfnetMaster.RegisterNode","params":[{"HostAddr":"%s","HostPort":9002}],"id":1}`, h0.IP),
		fmt.Sprintf(`{"method":"OfnetMaster.EndpointAdd","params":[{"EndpointID":"198.19.21.77:0","IpAddr":"198.19.21.77","OriginatorIp":"%s","MacAddrStr":"02:02:02:02:02:02","Timestamp":"2030-01-01T00:00:00Z"}],"id":2}`, h0.IP),
		fmt.Sprintf(`{"method":"OfnetMaster.EndpointDel","params":[{"EndpointID":"%s:0","IpAddr":"%s","OriginatorIp":"%s"}],"id":3}`, a.ip(), a.ip(), h0.IP),
	}
	httpCalls := []string{
		"GET /inspect/driver HTTP/1.1\r\nHost: x\r\n\r\n",
		"DELETE /debug/reclaimEndpoint/" + epID + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	}
	ofHello := []string{string([]byte{4, 0, 0, 8, 0, 0, 0, 1})}

	type target struct {
		addr  string
		kind  string // rpc-agent, rpc-master, http, openflow
		calls []string
	}
	var targets []target
	for _, h := range tb.Hosts {
		for _, ip := range []string{h.IP, h.CtrlIP} {
			targets = append(targets,
				target{ip + ":9002", "rpc-agent", agentCalls}, target{ip + ":9003", "rpc-agent", agentCalls},
				target{ip + ":9090", "http", httpCalls},
				target{ip + ":6633", "openflow", ofHello}, target{ip + ":6634", "openflow", ofHello})
		}
	}
	for _, ip := range []string{testbed.MasterIP(0), testbed.MasterUnderlayIP(0)} {
		targets = append(targets, target{ip + ":9001", "rpc-master", masterCalls})
	}
	// The store (etcd with client certificates, the testbed's default): a
	// write through its JSON gateway.
	storePut := `{"key":"` + base64.StdEncoding.EncodeToString([]byte("/contiv.io/evil")) + `","value":"eA=="}`
	targets = append(targets, target{fmt.Sprintf("%s:%d", tb.StoreIP, testbed.EtcdPort), "http", []string{
		fmt.Sprintf("POST /v3/kv/put HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(storePut), storePut)}})

	var accepted []string
	for _, tg := range targets {
		creds := map[string]*tls.Config{"plain": nil, "TLS without a certificate": noCert, "foreign-CA master certificate": withCert(forged)}
		if tg.kind == "http" && strings.HasSuffix(tg.addr, fmt.Sprintf(":%d", testbed.EtcdPort)) {
			creds["host 1's agent RPC certificate"] = withCert(stolen)
		}
		if tg.kind == "rpc-agent" && !strings.HasPrefix(tg.addr, h1.IP+":") && !strings.HasPrefix(tg.addr, h1.CtrlIP+":") {
			creds["host 1's agent certificate"] = withCert(stolen)
		}
		if tg.kind == "rpc-master" {
			creds["host 1's agent certificate, speaking for host 0"] = withCert(stolen)
		}
		for _, name := range slices.Sorted(maps.Keys(creds)) {
			ok, detail := attempt(out, tg.addr, creds[name], tg.calls, tg.kind)
			t.Logf("%s %s with %s: %s", tg.kind, tg.addr, name, detail)
			if ok {
				accepted = append(accepted, fmt.Sprintf("%s %s with %s: %s", tg.kind, tg.addr, name, detail))
			}
		}
	}
	accepted = append(accepted, hostileREST(t, tb, out, forged, stolen, epID)...)
	for _, a := range accepted {
		t.Errorf("accepted: %s", a)
	}

	// Control: the harness does see an accepted call (the master's
	// certificate calling host 0's agent, a no-op method).
	if ok, detail := attempt(out, h0.IP+":9002", withCert(masterCert), agentCalls[:1], "rpc-agent"); !ok {
		t.Errorf("control: the master certificate was not accepted by host 0's agent: %s", detail)
	}

	time.Sleep(2 * time.Second)
	after := snapshot()
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if before[k] != after[k] {
			t.Errorf("%s changed:\nbefore:\n%s\nafter:\n%s", k, before[k], after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared: %s", k, after[k])
		}
	}
	if err := pingOK(a, b, 20*time.Second); err != nil {
		t.Errorf("after the attempts: %v", err)
	}
}

// attempt connects from o to addr (over TLS with cfg unless nil), sends
// calls and reports whether any was accepted: a JSON-RPC answer without
// an error, an HTTP 2xx, or an OpenFlow message back.
func attempt(o *testbed.Outsider, addr string, cfg *tls.Config, calls []string, kind string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := o.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, "connect: " + err.Error()
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if cfg != nil {
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return false, "handshake: " + err.Error()
		}
		conn = tc
	}
	var answer bytes.Buffer
	for _, c := range calls {
		if _, err := conn.Write([]byte(c + "\n")); err != nil {
			break
		}
	}
	buf := make([]byte, 4096)
	for answer.Len() < 64<<10 {
		n, err := conn.Read(buf)
		answer.Write(buf[:n])
		if err != nil {
			break
		}
	}
	got := answer.String()
	var ok bool
	switch kind {
	case "rpc-agent", "rpc-master":
		ok = strings.Contains(got, `"error":null`)
	case "http":
		ok = strings.HasPrefix(got, "HTTP/1.1 2") || strings.Contains(got, "\nHTTP/1.1 2")
	case "openflow":
		ok = len(got) > 0 && got[0] == 4
	}
	if len(got) > 300 {
		got = got[:300] + "…"
	}
	return ok, fmt.Sprintf("answer %q", got)
}

// hostileREST tries netmaster's REST API from o with the attacker's
// credentials (see TestHostileNeighbour) and returns the attempts that
// reached the API. Controls with the testbed's own client certificate
// show that the admin token is accepted for a read and the read-only
// token refused for a write.
func hostileREST(t *testing.T, tb *testbed.Testbed, o *testbed.Outsider, forged, stolen tls.Certificate, epID string) []string {
	t.Helper()
	type req struct {
		method, path, body string
		write              bool
	}
	reqs := []req{
		{"GET", "/api/v1/networks/", "", false},
		{"GET", "/api/v1/endpoints/", "", false},
		{"POST", "/api/v1/networks/default:evil/", `{"tenantName":"default","networkName":"evil","encap":"vxlan","subnet":"198.19.99.0/24"}`, true},
		{"DELETE", "/api/v1/networks/default:hn1/", "", true},
		{"DELETE", "/api/v1/tenants/default/", "", true},
		{"DELETE", "/debug/epcleanup/tenant/default/net/hn1", "", true},
		{"DELETE", "/debug/epcleanup/tenant/default/ep/" + epID, "", true},
		{"POST", "/plugin/deleteEndpoint", `{"tenantName":"default","networkName":"hn1","endpointId":"` + epID + `"}`, true},
	}
	type token struct{ name, header, value string }
	noToken := token{"no token", "", ""}
	wrong := token{"a wrong token", "Authorization", "Bearer wrong-" + strings.Repeat("0", 24)}
	wrongX := token{"a wrong X-Auth-Token", "X-Auth-Token", "wrong-" + strings.Repeat("1", 24)}
	readOnly := token{"the read-only token", "Authorization", "Bearer " + tb.REST.ReadToken}
	admin := token{"the admin token", "Authorization", "Bearer " + tb.REST.AdminToken}
	type cred struct {
		name   string
		scheme string
		tls    *tls.Config
		tokens []token // readOnly is used on writes only
	}
	creds := []cred{
		{"plain http", "http", nil, []token{noToken, wrong, admin}},
		{"TLS without a client certificate", "https", &tls.Config{InsecureSkipVerify: true}, []token{noToken, wrong, admin}},
		{"a foreign-CA client certificate", "https", &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{forged}}, []token{noToken, wrong, admin}},
		{"host 1's agent certificate", "https", &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{stolen}}, []token{noToken, wrong, wrongX, readOnly}},
	}
	do := func(cfg *tls.Config, scheme, addr string, r req, tk token) (int, string, error) {
		hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
			DialContext: o.DialContext, TLSClientConfig: cfg, DisableKeepAlives: true}}
		defer hc.CloseIdleConnections()
		var body io.Reader
		if r.body != "" {
			body = strings.NewReader(r.body)
		}
		hr, err := http.NewRequest(r.method, scheme+"://"+addr+r.path, body)
		if err != nil {
			return 0, "", err
		}
		if r.body != "" {
			hr.Header.Set("Content-Type", "application/json")
		}
		if tk.header != "" {
			hr.Header.Set(tk.header, tk.value)
		}
		resp, err := hc.Do(hr)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, strings.TrimSpace(string(b)), nil
	}
	var accepted []string
	m := tb.Masters[0]
	for _, addr := range []string{m.Addr(), fmt.Sprintf("%s:%d", m.UnderlayIP, testbed.NetmasterPort)} {
		for _, c := range creds {
			for _, tk := range c.tokens {
				for _, r := range reqs {
					if tk == readOnly && !r.write {
						continue // a read with the read-only token is allowed
					}
					code, body, err := do(c.tls, c.scheme, addr, r, tk)
					what := fmt.Sprintf("REST %s %s %s over %s with %s", r.method, addr, r.path, c.name, tk.name)
					switch {
					case err != nil:
						t.Logf("%s: refused: %v", what, err)
					case code == http.StatusUnauthorized || code == http.StatusForbidden ||
						(code == http.StatusBadRequest && strings.Contains(body, "HTTPS server")):
						t.Logf("%s: refused: %d %s", what, code, body)
					default:
						accepted = append(accepted, fmt.Sprintf("%s: %d %s", what, code, body))
					}
				}
			}
		}
	}
	// Controls, from the outsider too (the network does not matter, the
	// credentials do): the testbed's client certificate with the admin
	// token reads, with the read-only token may not write.
	own, err := tb.RESTClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	if code, body, err := do(own, "https", m.Addr(), reqs[0], admin); err != nil || code != http.StatusOK {
		t.Errorf("control: GET with the client certificate and the admin token: %d %s %v", code, body, err)
	}
	if code, body, err := do(own, "https", m.Addr(), reqs[4], readOnly); err != nil || code != http.StatusForbidden {
		t.Errorf("control: DELETE a tenant with the read-only token: want 403, got %d %s %v", code, body, err)
	}
	return accepted
}
