package attach_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"testing"

	"github.com/contiv/netplugin/api/attach"
)

// FuzzDecodeRequest feeds arbitrary bytes to both request decoders: they
// never panic, every error is an invalid request, and whatever they accept
// is valid and survives an encode/decode round trip unchanged.
// Seeds: testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"tenant":"default","network":"net1","containerID":"c1","netns":"/proc/42/ns/net"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := attach.DecodeRequest(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, attach.ErrInvalidRequest) {
				t.Fatalf("decode error %v does not wrap ErrInvalidRequest", err)
			}
		} else {
			if err := req.Validate(); err != nil {
				t.Fatalf("accepted an invalid request %+v: %v", req, err)
			}
			b, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			again, err := attach.DecodeRequest(bytes.NewReader(b))
			if err != nil || !sameRequest(again, req) {
				t.Fatalf("round trip of %s: %+v %v, want %+v", b, again, err, req)
			}
		}

		dr, err := attach.DecodeDetachRequest(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, attach.ErrInvalidRequest) {
				t.Fatalf("detach decode error %v does not wrap ErrInvalidRequest", err)
			}
			return
		}
		if err := dr.Validate(); err != nil {
			t.Fatalf("accepted an invalid detach request %+v: %v", dr, err)
		}
		b, err := json.Marshal(dr)
		if err != nil {
			t.Fatal(err)
		}
		again, err := attach.DecodeDetachRequest(bytes.NewReader(b))
		if err != nil || again != dr {
			t.Fatalf("round trip of %s: %+v %v, want %+v", b, again, err, dr)
		}
	})
}

// sameRequest compares requests, taking a nil and an empty label map as equal.
func sameRequest(a, b attach.Request) bool {
	if !maps.Equal(a.Labels, b.Labels) {
		return false
	}
	a.Labels, b.Labels = nil, nil
	return reflect.DeepEqual(a, b)
}
