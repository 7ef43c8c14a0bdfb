package ovsdriver_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
)

func TestParseBandwidth(t *testing.T) {
	ok := []struct {
		in   string
		kbps int64
	}{
		{"", 0},
		{"  ", 0},
		{"10Mbps", 10 * 1048576 / 1000},
		{"10 mbps", 10485},
		{"100 mbps", 104857},
		{"500k", 512},
		{"10 kbps", 10},
		{"1K", 1},
		{"1G", 1073741},
		{"1gbps", 1073741},
		{"2Gb", 2147483},
		{"0M", 0},
		{"1000", 0}, // no unit letter: no limit, as upstream
		{"1000bps", 0},
	}
	for _, c := range ok {
		got, err := ovsdriver.ParseBandwidth(c.in)
		if err != nil || got != c.kbps {
			t.Errorf("ParseBandwidth(%q) = %d, %v; want %d", c.in, got, err, c.kbps)
		}
	}
	for _, in := range []string{"fast", "M10", "10x", "10 Tbps", "1.5G", "-5M", "10Mbit", "10 M bps", "99999999999999999999G", "9999999999999999G"} {
		_, err := ovsdriver.ParseBandwidth(in)
		if !errors.Is(err, ovsdriver.ErrInvalid) || !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("ParseBandwidth(%q) error %v, want ErrInvalid naming the input", in, err)
		}
	}
}

func FuzzParseBandwidth(f *testing.F) {
	for _, s := range []string{"10Mbps", "500k", "1G", "", "10 kbps", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ovsdriver.ParseBandwidth(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseBandwidth(%q) = %d", s, n)
		}
		if err != nil && n != 0 {
			t.Fatalf("ParseBandwidth(%q) = %d with error %v", s, n, err)
		}
	})
}
