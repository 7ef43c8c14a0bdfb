package stall

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/contiv/netplugin/objdb/objdbtest"
)

// Main is the TestMain of a package that runs the scenario: the binary
// serves as a netmaster process when Run started it as one, and otherwise
// runs its tests and fails on leaked goroutines.
func Main(m *testing.M) {
	RunDaemonIfAsked()
	goleak.VerifyTestMain(m, objdbtest.LeakOptions()...)
}

// Runs is how often each variant runs: $STALL_RUNS, or def when it is not
// set. A value that is not a positive number is an error naming it.
func Runs(def int) (int, error) {
	s := os.Getenv("STALL_RUNS")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("STALL_RUNS=%q: want a positive number", s)
	}
	return n, nil
}

// RunsFor is Runs for a test or benchmark: a bad $STALL_RUNS fails tb.
func RunsFor(tb testing.TB, def int) int {
	tb.Helper()
	n, err := Runs(def)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
