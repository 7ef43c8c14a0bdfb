package contivmodel_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	cm "github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/contivmodel/modeltest"
)

// FuzzModelREST sends random requests to the generic model handlers over
// the in-memory store with accept-everything controllers: no input may
// panic a handler, and every answer other than 2xx must leave the store
// byte-identical (docs/rest-errors.md). netmaster/master's FuzzREST does
// the same with the real controllers.
func FuzzModelREST(f *testing.F) {
	plurals := []string{"tenants", "networks", "endpointGroups", "globals", "rules", "serviceLBs", "Bgps", "volumes",
		"inspect/networks", "inspect/endpoints"}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}
	for _, s := range []struct {
		m, p      uint8
		key, body string
	}{
		{1, 0, "t1", `{"tenantName":"t1"}`},
		{1, 1, "t1:n1", `{"tenantName":"t1","networkName":"n1","encap":"vlan","subnet":"10.1.1.0/24"}`},
		{2, 1, "t1:n1", `{"tenantName":"t1","networkName":"n2","encap":"vlan","subnet":"10.1.1.0/24"}`},
		{3, 0, "t1%2F..%2Fvictim", ""},
		{3, 0, "..", ""},
		{1, 0, "t\xff", "{\"tenantName\":\"t\xff\"}"},
		{1, 4, "t:p:1", `{"tenantName":"t","policyName":"p","ruleId":"1","priority":500,"port":70000}`},
		{1, 0, "t2", `{"tenantName":`},
		{0, 8, "t1:n1", ""},
	} {
		f.Add(s.m, s.p, s.key, []byte(s.body))
	}
	kv := modeltest.NewMemKV()
	reg := modeltest.NewRegistry(f, kv, cm.NoopControllers())
	router := cm.NewRouter(reg)
	f.Fuzz(func(t *testing.T, m, p uint8, key string, body []byte) {
		method := methods[int(m)%len(methods)]
		path := "/api/v1/" + plurals[int(p)%len(plurals)] + "/" + key + "/"
		req, err := http.NewRequest(method, "http://model"+path, bytes.NewReader(body))
		if err != nil || req.URL.Host != "model" || !strings.HasPrefix(req.URL.Path, "/api/v1/") {
			return
		}
		before := dump(t, kv)
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, req)
		if rec.Code >= 200 && rec.Code < 300 {
			return
		}
		if rec.Code == http.StatusInternalServerError {
			t.Fatalf("%s %s %q: server fault %q", method, path, body, rec.Body.String())
		}
		if after := dump(t, kv); !reflect.DeepEqual(before, after) {
			t.Fatalf("%s %s %q: answered %d %q but changed the store", method, path, body, rec.Code, rec.Body.String())
		}
	})
}
