package netctl

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkHTTPSRequest is the cost of one netctl request to an HTTPS
// netmaster (loopback, httptest's test certificate) with the
// connection kept alive, against a new TLS handshake per request
// (docs/security.md, "Tokens").
func BenchmarkHTTPSRequest(b *testing.B) {
	srv := quietTLSServer(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`[]`))
	})
	defer srv.Close()
	for _, mode := range []struct {
		name      string
		keepAlive bool
	}{{"keepalive", true}, {"handshake-each", false}} {
		b.Run(mode.name, func(b *testing.B) {
			n := App(Options{Getenv: func(string) string { return "" }})
			n.netmaster, n.insecure, n.token = srv.URL, true, "bench-token"
			hc := n.newHTTPClient()
			tr := hc.Transport.(bearer).next.(*http.Transport)
			tr.DisableKeepAlives = !mode.keepAlive
			defer tr.CloseIdleConnections()
			for b.Loop() {
				resp, err := hc.Get(srv.URL + "/api/v1/tenants/")
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
