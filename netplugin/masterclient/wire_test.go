package masterclient_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/netplugin/masterclient"
)

// Our wire structs and netmaster's have the same JSON keys: every field
// set, ours encodes to exactly what netmaster's decodes (unknown keys
// refused) and encodes back.
func TestWireStructsMatchNetmaster(t *testing.T) {
	cases := []struct {
		name   string
		ours   any
		theirs any
	}{
		{"AllocAddressRequest", masterclient.AllocAddressRequest{NetworkID: "n", AddressPool: "p", PreferredIPv4Address: "a"}, &master.AddressAllocRequest{}},
		{"AllocAddressResponse", masterclient.AllocAddressResponse{NetworkID: "n", IPv4Address: "a"}, &master.AddressAllocResponse{}},
		{"ReleaseAddressRequest", masterclient.ReleaseAddressRequest{NetworkID: "n", IPv4Address: "a"}, &master.AddressReleaseRequest{}},
		{"CreateEndpointRequest", masterclient.CreateEndpointRequest{TenantName: "t", NetworkName: "n", ServiceName: "s",
			EndpointID: "e", EPCommonName: "c", ConfigEP: masterclient.ConfigEP{Container: "k", Host: "h",
				IPAddress: "i", IPv6Address: "j", ServiceName: "g"}}, &master.CreateEndpointRequest{}},
		{"DeleteEndpointRequest", masterclient.DeleteEndpointRequest{TenantName: "t", NetworkName: "n", ServiceName: "s",
			EndpointID: "e", IPv4Address: "a"}, &master.DeleteEndpointRequest{}},
		{"EndpointResponse", masterclient.EndpointResponse{}, &master.EndpointResponse{}},
		{"UpdateEndpointRequest", masterclient.UpdateEndpointRequest{IPAddress: "i", ContainerID: "c", Labels: map[string]string{"k": "v"},
			Tenant: "t", Network: "n", Event: "start", EndpointID: "e", EPCommonName: "x"}, &master.UpdateEndpointRequest{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ours, err := json.Marshal(tc.ours)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(ours))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tc.theirs); err != nil {
				t.Fatalf("netmaster's struct refuses %s: %v", ours, err)
			}
			theirs, err := json.Marshal(tc.theirs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ours, theirs) {
				t.Fatalf("encodings differ:\nours:   %s\ntheirs: %s", ours, theirs)
			}
		})
	}
}
