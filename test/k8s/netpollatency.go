package k8s

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/contiv/netplugin/utils/logsetup"
)

// applyLine is netplugin's text log line of an applied NetworkPolicy
// result (netplugin/netpolrec).
var applyLine = regexp.MustCompile(`(?m)^time="?([^" ]+)"? .*msg="networkpolicy applied".* latency="?([0-9.]+[µunm]?s)"?(\s|$)`)

// netpolApplyLatencies reads the apply latencies netplugin logged at or
// after since.
func netpolApplyLatencies(logs string, since time.Time) []time.Duration {
	var out []time.Duration
	for _, m := range applyLine.FindAllStringSubmatch(logs, -1) {
		at, err := time.Parse(logsetup.TimestampFormat, m[1])
		if err != nil || at.Before(since) {
			continue
		}
		if d, err := time.ParseDuration(m[2]); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// latencySummary gives p50, p99 and max of ds (nearest rank).
func latencySummary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	return fmt.Sprintf("p50 %v p99 %v max %v", r(rank(0.50)), r(rank(0.99)), r(s[len(s)-1]))
}
