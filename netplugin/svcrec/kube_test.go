package svcrec

import (
	"reflect"
	"testing"
)

func TestPickTenant(t *testing.T) {
	for _, tc := range []struct {
		name        string
		provs       []string
		vrfs        map[string][]string
		tenant      string
		in, unknown []string
	}{
		{"all in one", []string{"a", "b"}, map[string][]string{"a": {"t1"}, "b": {"t1"}}, "t1", []string{"a", "b"}, nil},
		{"majority wins, the rest unknown", []string{"a", "b", "c"},
			map[string][]string{"a": {"t2"}, "b": {"t1", "t2"}, "c": {"t1"}}, "t1", []string{"b", "c"}, []string{"a"}},
		{"tie: first by name", []string{"a", "b"}, map[string][]string{"a": {"z"}, "b": {"m"}}, "m", []string{"b"}, []string{"a"}},
		{"none known", []string{"a"}, map[string][]string{}, "", nil, []string{"a"}},
		{"no providers", nil, nil, "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant, in, unknown := pickTenant(tc.provs, tc.vrfs)
			if tenant != tc.tenant || !reflect.DeepEqual(in, tc.in) || !reflect.DeepEqual(unknown, tc.unknown) {
				t.Errorf("pickTenant = %q %v %v; want %q %v %v", tenant, in, unknown, tc.tenant, tc.in, tc.unknown)
			}
		})
	}
}
