package migrate

import (
	"fmt"
	"io"
	"sort"
)

// Report prints the plan: counts, notes, skipped, unmapped and problem
// records, every one of them.
func (p *Plan) Report(w io.Writer) {
	fmt.Fprintln(w, "source records mapped:")
	ks := make([]string, 0, len(p.Counts))
	for k := range p.Counts {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		fmt.Fprintf(w, "  %-40s %d\n", k, p.Counts[k])
	}
	fmt.Fprintf(w, "target: %d keys, %d IPv4 pools\n", len(p.KVs), len(p.Pools))
	for _, n := range p.Notes {
		fmt.Fprintf(w, "repaired: %s\n", n)
	}
	for _, r := range p.Skipped {
		fmt.Fprintf(w, "skipped: %s: %s\n", r.Key, r.Reason)
	}
	for _, r := range p.Unmapped {
		fmt.Fprintf(w, "UNMAPPED: %s: %s\n", r.Key, r.Reason)
	}
	for _, r := range p.Problems {
		fmt.Fprintf(w, "PROBLEM: %s: %s\n", r.Key, r.Reason)
	}
}

// Report prints what Apply did or would do; verbose lists every key.
func (r Result) Report(w io.Writer, dryRun, verbose bool) {
	switch {
	case r.AlreadyDone:
		fmt.Fprintf(w, "the target holds this migration already (%s says %s): nothing to do\n", StatusKey, StateDone)
		return
	case r.Resumed:
		fmt.Fprintln(w, "resuming a migration that was cut short")
	}
	verb := "wrote"
	if dryRun {
		verb = "would write"
	}
	if verbose || dryRun {
		for _, k := range r.ToWrite {
			fmt.Fprintf(w, "%s: %s\n", verb, k)
		}
		for _, id := range r.PoolsToWrite {
			fmt.Fprintf(w, "%s: ipv4 pool %s\n", verb, id)
		}
	}
	for _, c := range r.Conflicts {
		fmt.Fprintf(w, "CONFLICT: %s: %s\n", c.Key, c.Reason)
	}
	if dryRun {
		fmt.Fprintf(w, "dry run: %d keys and %d pools to write, %d already equal, %d conflicts; nothing written\n",
			len(r.ToWrite), len(r.PoolsToWrite), r.Equal, len(r.Conflicts))
		return
	}
	fmt.Fprintf(w, "%s %d keys and pools (%d already equal)\n", verb, r.Written, r.Equal)
}
