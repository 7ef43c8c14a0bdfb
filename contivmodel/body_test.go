package contivmodel_test

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	cm "github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/contivmodel/modeltest"
)

// TestBodyChecks: invalid UTF-8, unpaired surrogate escapes and bodies
// above the limit are refused before decoding (docs/rest-errors.md);
// proper surrogate pairs and escaped backslashes are not.
func TestBodyChecks(t *testing.T) {
	kv := modeltest.NewMemKV()
	srv := modeltest.Start(t, kv, cm.NoopControllers())
	before := dump(t, kv)
	for _, tc := range []struct{ body, want string }{
		{"{\"tenantName\":\"t1\xff\"}", "request body is not valid UTF-8 (byte 17)"},
		{"{\"tenantName\":\"t1\",\"defaultNetwork\":\"\xc3\"}", "request body is not valid UTF-8 (byte 37)"},
		{`{"tenantName":"t1","defaultNetwork":"\ud800"}`, `request body has an unpaired UTF-16 surrogate \ud800 (byte 37)`},
		{`{"tenantName":"t1","defaultNetwork":"\uDC00\uD800"}`, `request body has an unpaired UTF-16 surrogate \uDC00 (byte 37)`},
		{`{"tenantName":"t1","defaultNetwork":"a\ud83d"}`, `request body has an unpaired UTF-16 surrogate \ud83d (byte 38)`},
	} {
		expectStatus(t, tc.body, srv.Do(t, http.MethodPost, "/api/v1/tenants/t1/", tc.body), http.StatusBadRequest, tc.want)
	}
	r := srv.Do(t, http.MethodPost, "/api/v1/tenants/t1/", `{"tenantName":"t1","x":"`+strings.Repeat("a", cm.MaxBodyBytes)+`"}`)
	expectStatus(t, "large body", r, http.StatusRequestEntityTooLarge, "request body exceeds 4194304 bytes")
	// Without a Content-Length (chunked) the limit applies while reading.
	big := io.MultiReader(strings.NewReader(`{"tenantName":"t1","x":"`), strings.NewReader(strings.Repeat("a", cm.MaxBodyBytes)))
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/tenants/t1/", big)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || string(b) != "request body exceeds 4194304 bytes\n" {
		t.Errorf("chunked large body: %d %q", resp.StatusCode, b)
	}
	if after := dump(t, kv); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused bodies changed the store: %v", after)
	}
	// An unknown member is ignored, after the checks.
	expectOK(t, "pair and escaped backslash", srv.Do(t, http.MethodPost, "/api/v1/tenants/t1/", `{"tenantName":"t1","note":"\ud83d\ude00 \\ud800"}`))
}
