package soak

import (
	"slices"
	"testing"
	"time"
)

// TestLongLivedOutliveTheRun: the long-lived pairs' echo servers live
// longer than any run of -soak.duration: the cycles until the duration has
// passed, one more cycle (about 3 minutes, up to 10 under load), the
// deletion and the leak checks. The first 60-minute run used the test
// bed's 10-minute default and lost both pairs 10 minutes in, at whatever
// fault came next (docs/soak.md, "Findings").
func TestLongLivedOutliveTheRun(t *testing.T) {
	for _, d := range []time.Duration{0, 10 * time.Minute, 60 * time.Minute, 4 * time.Hour} {
		need := d + 10*time.Minute + cleanWithin + 5*time.Minute
		if got := longLivedFor(d); got < need {
			t.Errorf("-soak.duration %v: the echo servers live %v, the run may take %v", d, got, need)
		}
	}
}

// TestSelectFaults: -soak.faults picks faults by name in the schedule's
// order; an unknown name is refused.
func TestSelectFaults(t *testing.T) {
	all, err := selectFaults("")
	if err != nil || !slices.Equal(all, faultNames) {
		t.Errorf(`"": %v %v, want every fault`, all, err)
	}
	got, err := selectFaults("store-stall-10s, netmaster-leader-kill")
	if want := []string{"netmaster-leader-kill", "store-stall-10s"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("two faults: %v %v, want %v", got, err, want)
	}
	if _, err := selectFaults("netmaster-kill"); err == nil {
		t.Error("an unknown fault was taken")
	}
}
