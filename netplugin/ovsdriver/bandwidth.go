package ovsdriver

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseBandwidth turns a netprofile bandwidth ("10Mbps", "500k", "1G",
// "10 kbps") into the kbps of Interface.ingress_policing_rate (spec
// docs/dataplane.md §1.6): the number times 1024, 1024² or 1024³ for a k, m or g
// unit (any case), divided by 1000. As upstream, a number without a unit
// letter gives 0 (no limit), and so does the empty string. After the unit
// letter only "bps" or "b" may follow. Anything else is an error naming the
// input; it never panics.
func ParseBandwidth(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%w: bandwidth %q: no leading number", ErrInvalid, s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bandwidth %q: %v", ErrInvalid, s, err)
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	var mult int64
	switch {
	case unit == "" || unit == "bps" || unit == "b":
		return 0, nil
	case unit[0] == 'k':
		mult = 1 << 10
	case unit[0] == 'm':
		mult = 1 << 20
	case unit[0] == 'g':
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("%w: bandwidth %q: unknown unit %q (want k, m or g)", ErrInvalid, s, unit)
	}
	switch unit[1:] {
	case "", "b", "bps":
	default:
		return 0, fmt.Errorf("%w: bandwidth %q: unknown unit %q (want k, m or g)", ErrInvalid, s, unit)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%w: bandwidth %q: too large", ErrInvalid, s)
	}
	return n * mult / 1000, nil
}
