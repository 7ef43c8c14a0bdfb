package consul

import (
	"errors"
	"testing"

	"github.com/contiv/netplugin/objdb"
)

func TestPickScheme(t *testing.T) {
	for _, tc := range []struct {
		named   []string
		haveTLS bool
		want    string
		bad     bool
	}{
		{[]string{""}, false, "http", false},
		{[]string{"http"}, false, "http", false},
		{[]string{""}, true, "https", false},
		{[]string{"https"}, false, "https", false},
		{[]string{"https", ""}, true, "https", false},
		{[]string{"http"}, true, "", true},
		{[]string{"http", "https"}, false, "", true},
	} {
		named := map[string]bool{}
		for _, n := range tc.named {
			named[n] = true
		}
		got, err := pickScheme(named, tc.haveTLS)
		if tc.bad {
			if !errors.Is(err, objdb.ErrInvalid) {
				t.Errorf("%v tls=%v: %q %v, want ErrInvalid", tc.named, tc.haveTLS, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v tls=%v: %q %v, want %q", tc.named, tc.haveTLS, got, err, tc.want)
		}
	}
}
