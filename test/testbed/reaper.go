package testbed

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/contiv/netplugin/test/orphans"
)

// markers records, for every live testbed, the owning test process and
// its folder, so that a later run removes what a killed test binary (e.g.
// a -timeout panic, which runs no cleanups) left behind.
const markers = orphans.Markers("/run/testbed")

// namePrefix starts every testbed prefix ("tb" + 4 hex digits + "-").
const namePrefix = "tb"

func writeMarker(prefix, dir string) error {
	if err := markers.Write(prefix, dir); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	return nil
}

// destroy removes everything of one testbed that does not need the test:
// every process in its namespaces, the namespaces, its folder and marker.
func destroy(prefix, dir string) error {
	var errs []error
	// Containers of the hosts' engines live in cgroups named after their
	// host namespace (docker.go).
	if tops, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", prefix+"*")); len(tops) > 0 {
		seen := map[string]bool{}
		for _, top := range tops {
			name := filepath.Base(top)
			if !seen[name] {
				seen[name] = true
				if err := killCgroup(name); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for _, ns := range listNetNS(prefix) {
		if err := killNetNS(ns); err != nil {
			errs = append(errs, err)
		}
	}
	if dir != "" && strings.HasPrefix(filepath.Base(dir), prefix) {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	markers.Remove(prefix)
	if len(errs) > 0 {
		return fmt.Errorf("testbed %s cleanup: %v", prefix, errs)
	}
	return nil
}

// reapOrphans destroys testbeds whose owning test process is gone. Only
// testbeds with a marker are touched.
func reapOrphans(t testing.TB) {
	for _, o := range markers.Orphans(namePrefix) {
		if err := destroy(o.Name, o.Dir); err != nil {
			t.Logf("testbed: reaping orphan: %v", err)
		}
		t.Logf("testbed: removed orphaned testbed %s (owner %d gone)", o.Name, o.Owner)
	}
}

// live tracks the testbeds of this process for the signal handler: on
// SIGINT/SIGTERM they are destroyed before the process exits. The handler
// runs only while at least one testbed is live.
var live = struct {
	sync.Mutex
	beds   map[string]string // prefix -> dir
	cancel context.CancelFunc
	done   chan struct{}
}{beds: map[string]string{}}

func registerLive(prefix, dir string) {
	live.Lock()
	defer live.Unlock()
	live.beds[prefix] = dir
	if live.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	live.cancel, live.done = cancel, done
	go func() {
		defer close(done)
		defer signal.Stop(sigs)
		select {
		case <-ctx.Done():
			return
		case sig := <-sigs:
			live.Lock()
			for p, d := range live.beds {
				if err := destroy(p, d); err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
			}
			live.Unlock()
			fmt.Fprintf(os.Stderr, "testbed: %v: testbeds destroyed, exiting\n", sig)
			os.Exit(1)
		}
	}()
}

func unregisterLive(prefix string) {
	live.Lock()
	delete(live.beds, prefix)
	var cancel context.CancelFunc
	var done chan struct{}
	if len(live.beds) == 0 && live.cancel != nil {
		cancel, done = live.cancel, live.done
		live.cancel, live.done = nil, nil
	}
	live.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
