package cniapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
)

// FuzzDecodeRequest feeds arbitrary bytes to the CNI socket's request
// decoders: they never panic, every error is an invalid request, and what
// they accept is valid and survives an encode/decode round trip.
// Seeds: testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"K8S_POD_NAME":"web","K8S_POD_NAMESPACE":"prod","K8S_POD_INFRA_CONTAINER_ID":"c1","CNI_NETNS":"/proc/42/ns/net","CNI_IFNAME":"eth0"}`))
	f.Add([]byte(`{"cniNetwork":"contiv-net","validAttachments":[{"containerID":"c1","ifname":"eth0"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, needNetNS := range []bool{true, false} {
			p, err := cniapi.DecodePodAttr(bytes.NewReader(data), needNetNS)
			if err != nil {
				if !errors.Is(err, cniapi.ErrInvalidRequest) {
					t.Fatalf("decode error %v does not wrap ErrInvalidRequest", err)
				}
				continue
			}
			if err := p.Validate(needNetNS); err != nil {
				t.Fatalf("accepted an invalid request %+v: %v", p, err)
			}
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			again, err := cniapi.DecodePodAttr(bytes.NewReader(b), needNetNS)
			if err != nil || !reflect.DeepEqual(again, p) {
				t.Fatalf("round trip of %s: %+v %v, want %+v", b, again, err, p)
			}
		}
		g, err := cniapi.DecodeGCRequest(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, cniapi.ErrInvalidRequest) {
				t.Fatalf("GC decode error %v does not wrap ErrInvalidRequest", err)
			}
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("accepted an invalid GC request %+v: %v", g, err)
		}
		b, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		again, err := cniapi.DecodeGCRequest(bytes.NewReader(b))
		if err != nil || len(again.Valid) != len(g.Valid) || again.CNINetwork != g.CNINetwork {
			t.Fatalf("GC round trip of %s: %+v %v, want %+v", b, again, err, g)
		}
	})
}
