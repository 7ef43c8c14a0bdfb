// Command e2ecount prints the pass/fail/skip counts of an upstream
// Kubernetes e2e.test run from its Ginkgo JSON report
// (--ginkgo.json-report), as scripts/k8s-e2e.sh shows them
// (docs/k8s.md, "Upstream e2e suites"):
//
//	e2ecount report.json
//
// A spec left out by --ginkgo.focus/--ginkgo.skip is not counted; a spec
// that ran and skipped itself (the framework found the cluster lacks what
// it needs) is counted as skipped with its reason. The exit status is 1
// when a spec failed or none ran.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// specReport is the part of Ginkgo v2's types.SpecReport read here.
type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	State                   string
	Failure                 struct {
		Message string
	}
}

type suiteReport struct {
	SpecReports []specReport
}

// counts of the specs that ran.
type counts struct {
	Passed, Failed, Skipped int
	Failures, Skips         []string
}

func tally(reports []suiteReport) counts {
	var c counts
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType != "It" {
				continue
			}
			name := strings.TrimSpace(strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " "))
			switch s.State {
			case "passed":
				c.Passed++
			case "skipped":
				if s.Failure.Message == "" {
					continue // filtered out, never ran
				}
				c.Skipped++
				c.Skips = append(c.Skips, name+": "+firstLine(s.Failure.Message))
			case "pending":
			default: // failed, panicked, interrupted, aborted, timedout
				c.Failed++
				c.Failures = append(c.Failures, name+" ["+s.State+"]: "+firstLine(s.Failure.Message))
			}
		}
	}
	sort.Strings(c.Failures)
	sort.Strings(c.Skips)
	return c
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func run(args []string, out io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: e2ecount report.json")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return fmt.Errorf("read report: %w", err)
	}
	var reports []suiteReport
	if err := json.Unmarshal(b, &reports); err != nil {
		return fmt.Errorf("decode %s: %w", args[0], err)
	}
	c := tally(reports)
	for _, f := range c.Failures {
		fmt.Fprintln(out, "FAIL", f)
	}
	for _, s := range c.Skips {
		fmt.Fprintln(out, "SKIP", s)
	}
	fmt.Fprintf(out, "pass=%d fail=%d skip=%d\n", c.Passed, c.Failed, c.Skipped)
	switch {
	case c.Failed > 0:
		return fmt.Errorf("%d specs failed", c.Failed)
	case c.Passed+c.Skipped == 0:
		return errors.New("no spec ran")
	}
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "e2ecount:", err)
		os.Exit(1)
	}
}
