package testbed

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSecureREST: with Config.SecureREST two netmasters serve the REST API
// over HTTPS with client certificates and tokens; /info through the
// follower (proxied to the leader with the follower's certificate and the
// caller's token) and netctl work, and a request without a token or over
// plain http is refused.
func TestSecureREST(t *testing.T) {
	tb := New(t, Config{Hosts: 1, NetMode: "vlan", FwdMode: "bridge", Netmasters: 2,
		Store: ExternalEtcd, SkipNetplugin: true, SecureREST: true})
	leader := tb.WaitLeader(t, nil, 30*time.Second)
	for _, m := range tb.Masters {
		if !strings.HasPrefix(m.URL(), "https://") {
			t.Fatalf("URL %s is not https", m.URL())
		}
		info, err := m.Info()
		if err != nil || info.LeaderIP != leader.Addr() {
			t.Errorf("netmaster %s /info: %+v %v, want leader %s", m.Addr(), info, err, leader.Addr())
		}
	}
	if out, err := tb.Netctl("tenant", "ls"); err != nil || !strings.Contains(out, "default") {
		t.Errorf("netctl: %v\n%s", err, out)
	}
	cfg, err := tb.RESTClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	noToken := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: dialIn(tb.Masters[0].NS),
		TLSClientConfig: cfg, DisableKeepAlives: true}}
	for _, m := range tb.Masters {
		resp, err := noToken.Get(m.URL() + "/api/v1/tenants/")
		if err != nil {
			t.Fatalf("GET without a token: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: GET without a token: %s, want 401", m.Addr(), resp.Status)
		}
		plain := nsHTTPClient(tb.Masters[0].NS)
		resp, err = plain.Get("http://" + m.Addr() + "/api/v1/tenants/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s: plain http: %s, want 400", m.Addr(), resp.Status)
			}
		}
	}
}
