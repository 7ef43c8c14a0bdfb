package pluginapi_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/contiv/netplugin/api/pluginapi"
)

// Every key of every /plugin/* body is pinned: a renamed field would break
// agents and netmasters of other versions (docs/daemons.md §5.4). Each case
// encodes to exactly the wire text and decodes back, unknown keys refused.
func TestWireFormat(t *testing.T) {
	cases := []struct {
		name string
		val  any
		wire string
	}{
		{"AddressAllocRequest", &pluginapi.AddressAllocRequest{NetworkID: "n", AddressPool: "p", PreferredIPv4Address: "a"},
			`{"NetworkID":"n","AddressPool":"p","PreferredIPv4Address":"a"}`},
		{"AddressAllocResponse", &pluginapi.AddressAllocResponse{NetworkID: "n", IPv4Address: "a"},
			`{"NetworkID":"n","IPv4Address":"a"}`},
		{"AddressReleaseRequest", &pluginapi.AddressReleaseRequest{NetworkID: "n", IPv4Address: "a"},
			`{"NetworkID":"n","IPv4Address":"a"}`},
		{"AddressReleaseResponse", &pluginapi.AddressReleaseResponse{Status: "success"},
			`{"Status":"success"}`},
		{"CreateEndpointRequest", &pluginapi.CreateEndpointRequest{TenantName: "t", NetworkName: "n", ServiceName: "s",
			EndpointID: "e", EPCommonName: "c", ConfigEP: pluginapi.ConfigEP{Container: "k", Host: "h",
				IPAddress: "i", IPv6Address: "j", ServiceName: "g"}},
			`{"TenantName":"t","NetworkName":"n","ServiceName":"s","EndpointID":"e","EPCommonName":"c",` +
				`"ConfigEP":{"Container":"k","Host":"h","IPAddress":"i","IPv6Address":"j","ServiceName":"g"}}`},
		{"DeleteEndpointRequest", &pluginapi.DeleteEndpointRequest{TenantName: "t", NetworkName: "n", ServiceName: "s",
			EndpointID: "e", IPv4Address: "a"},
			`{"TenantName":"t","NetworkName":"n","ServiceName":"s","EndpointID":"e","IPv4Address":"a"}`},
		{"UpdateEndpointRequest", &pluginapi.UpdateEndpointRequest{IPAddress: "i", ContainerID: "c", Labels: map[string]string{"k": "v"},
			Tenant: "t", Network: "n", Event: "start", EndpointID: "e", EPCommonName: "x"},
			`{"IPAddress":"i","ContainerID":"c","Labels":{"k":"v"},"Tenant":"t","Network":"n","Event":"start","EndpointID":"e","EPCommonName":"x"}`},
		{"UpdateEndpointResponse", &pluginapi.UpdateEndpointResponse{IPAddress: "i"},
			`{"IPAddress":"i"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.val)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.wire {
				t.Fatalf("encoding changed:\ngot:  %s\nwant: %s", got, tc.wire)
			}
			back := reflect.New(reflect.TypeOf(tc.val).Elem()).Interface()
			dec := json.NewDecoder(bytes.NewReader([]byte(tc.wire)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(back); err != nil {
				t.Fatalf("decode %s: %v", tc.wire, err)
			}
			if !reflect.DeepEqual(back, tc.val) {
				t.Fatalf("round trip: got %+v, want %+v", back, tc.val)
			}
		})
	}
}

// EndpointResponse carries the endpoint under EndpointConfig with the
// state package's own keys.
func TestEndpointResponseKey(t *testing.T) {
	got, err := json.Marshal(pluginapi.EndpointResponse{})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["EndpointConfig"]; !ok || len(m) != 1 {
		t.Fatalf("EndpointResponse encodes as %s, want the one key EndpointConfig", got)
	}
}
