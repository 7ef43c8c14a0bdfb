package endpoints_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/contiv/netplugin/state"
)

// A createEndpoint naming a pod (ConfigEP.PodNamespace, PodName) records
// it in the endpoint, which every netplugin follows (docs/k8s.md,
// "NetworkPolicy"); a request without them writes a record without the
// keys, as the original's.
func TestCreateEndpointRecordsPod(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "pn", "vxlan", "198.18.9.0/24", "198.18.9.254", 0)
	withPod := strings.Replace(createEPNoGroup("c1"), `"Host":"host1"`, `"Host":"host1","PodNamespace":"ns1","PodName":"web-0"`, 1)
	e.CreateEndpoint(withPod)
	e.CreateEndpoint(createEPNoGroup("c2"))
	var got []state.Endpoint
	for k, v := range e.Dump() {
		if !strings.Contains(k, "/eps/") {
			continue
		}
		var ep state.Endpoint
		if err := json.Unmarshal([]byte(v), &ep); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if ep.EndpointID == "c2" && strings.Contains(v, "podName") {
			t.Fatalf("record of an endpoint without a pod has pod keys: %s", v)
		}
		got = append(got, ep)
	}
	seen := 0
	for _, ep := range got {
		switch ep.EndpointID {
		case "c1":
			seen++
			if ep.PodNamespace != "ns1" || ep.PodName != "web-0" {
				t.Fatalf("record of c1 names pod %q/%q, want ns1/web-0", ep.PodNamespace, ep.PodName)
			}
		case "c2":
			seen++
		}
	}
	if seen != 2 {
		t.Fatalf("found %d of the 2 endpoint records in %v", seen, got)
	}
	bad := strings.Replace(createEPNoGroup("c3"), `"Host":"host1"`, `"Host":"host1","PodName":"a\u0001b"`, 1)
	e.Refused("POST", "/plugin/createEndpoint", bad, 400, "ConfigEP.PodName must be at most 253 characters without control characters")
}

func createEPNoGroup(container string) string {
	return `{"TenantName":"default","NetworkName":"pn","EndpointID":"` + container + `","ConfigEP":{"Container":"` + container + `","Host":"host1"}}`
}
