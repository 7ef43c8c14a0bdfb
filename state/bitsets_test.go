package state

import (
	"encoding/json"
	"strings"
	"testing"
)

// A corrupt bitset header is refused before anything is allocated.
func TestBitsetHeaderBounded(t *testing.T) {
	for _, c := range []struct{ val, want string }{
		{`{"id":"global","vlans":"f_________8AAAAAAAAAAA=="}`, "more than"},
		{`{"id":"global","vlans":"AAAAAAAAEAAAAAAAAAAAAA=="}`, "truncated"},
		{`{"id":"global","vlans":"AAAA"}`, "no 8-byte header"},
	} {
		var v VlanResource
		err := json.Unmarshal([]byte(c.val), &v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.val, err, c.want)
		}
	}
	var v VlanResource
	if err := json.Unmarshal([]byte(`{"id":"global","vlans":"AAAAAAAAAEAAAAAAAAAABg=="}`), &v); err != nil || !v.VLANs.Test(1) || !v.VLANs.Test(2) || v.ID != "global" {
		t.Fatalf("a good bitset: %v %v", err, v.VLANs.String())
	}
}

func FuzzBitsetTypes(f *testing.F) {
	f.Add([]byte(`{"id":"global","vlans":"AAAAAAAAAEAAAAAAAAAABg=="}`))
	f.Add([]byte(`{"id":"n.t","ipAllocMap":"f_________8AAAAAAAAAAA=="}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var a VlanResource
		var b VxlanResourceOper
		var c Network
		var d EndpointGroup
		_ = json.Unmarshal(data, &a)
		_ = json.Unmarshal(data, &b)
		_ = json.Unmarshal(data, &c)
		_ = json.Unmarshal(data, &d)
	})
}
