package stall

import (
	"fmt"
	"os"
	"strconv"
)

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
