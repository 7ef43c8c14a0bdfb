package dockplugin

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoder of every request shape:
// it never panics, every error is ErrBadRequest, and whatever it accepts
// passes validation again. Seeds: testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"NetworkID":"n","EndpointID":"e","Interface":{"Address":"198.19.1.2/24","MacAddress":"02:02:c6:13:01:02"}}`))
	f.Add([]byte(`{"PoolID":"net1:web.default|198.19.1.0/24","Address":"198.19.1.9","Options":{"RequestAddressType":"com.docker.network.gateway"}}`))
	f.Add([]byte(`{"Pool":"2001:db8::/64","V6":true,"Options":{"network":"n"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mk := range []func() validator{
			func() validator { return &CreateNetworkRequest{} },
			func() validator { return &NetworkRequest{} },
			func() validator { return &AllocateNetworkRequest{} },
			func() validator { return &CreateEndpointRequest{} },
			func() validator { return &EndpointRequest{} },
			func() validator { return &JoinRequest{} },
			func() validator { return &DiscoveryNotification{} },
			func() validator { return &RequestPoolRequest{} },
			func() validator { return &PoolRequest{} },
			func() validator { return &RequestAddressRequest{} },
			func() validator { return &ReleaseAddressRequest{} },
		} {
			v := mk()
			err := decode(bytes.NewReader(data), v)
			if err != nil {
				if !errors.Is(err, ErrBadRequest) {
					t.Fatalf("%T: error %v is not ErrBadRequest", v, err)
				}
				continue
			}
			if err := v.validate(); err != nil {
				t.Fatalf("%T: accepted %q but it does not validate: %v", v, data, err)
			}
		}
	})
}
