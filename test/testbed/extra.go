package testbed

import (
	"path/filepath"
	"syscall"
	"testing"
)

// StartProcess runs bin with args in namespace ns (a master's or a host's)
// for the rest of the test, its output in the test bed's folder as
// <name>.log; it is stopped (SIGTERM, then SIGKILL) at cleanup, and dies
// with the test binary. It returns the log's path.
func (tb *Testbed) StartProcess(t testing.TB, ns, name, bin string, args ...string) string {
	t.Helper()
	dir, err := tb.stateDir("proc-" + name)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	p := &daemon{name: name + " " + ns, ns: ns, bin: bin, args: args, logPath: filepath.Join(dir, name+".log")}
	if err := p.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	t.Cleanup(func() {
		if err := p.stop(syscall.SIGTERM, stopGrace); err != nil {
			t.Logf("testbed: stop %s: %v", name, err)
		}
	})
	return p.logPath
}
