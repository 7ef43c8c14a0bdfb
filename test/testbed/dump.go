package testbed

import (
	"fmt"
	"strings"
	"testing"
)

// ContivBridges are the bridges netplugin creates on every host.
var ContivBridges = []string{"contivVxlanBridge", "contivVlanBridge"}

// DumpOnFailure logs, when t has failed, what explains most failures: the
// netmasters' logs, each host's netplugin log tail, ovs-vsctl show and the
// flows of both contiv bridges, and the addresses of every container
// namespace. It runs once per testbed (New also registers it as a cleanup).
func (tb *Testbed) DumpOnFailure(t testing.TB) {
	t.Helper()
	if !t.Failed() {
		return
	}
	tb.dumpOnce.Do(func() { t.Logf("testbed %s state at failure:\n%s", tb.Prefix, tb.dump()) })
}

func (tb *Testbed) dump() string {
	var b strings.Builder
	b.WriteString(tb.masterLogTails(200))
	for _, h := range tb.Hosts {
		fmt.Fprintf(&b, "=== host %s (vtep %s, ctrl %s), netplugin %s ===\n", h.Name, h.IP, h.CtrlIP, runState(h.netplugin))
		fmt.Fprintf(&b, "--- netplugin log (tail) ---\n%s\n", h.netplugin.logs(80))
		if h.OVS == nil || h.stopped.Load() {
			continue
		}
		out, err := h.Vsctl("show")
		fmt.Fprintf(&b, "--- ovs-vsctl show ---\n%s%s\n", out, errText(err))
		for _, br := range ContivBridges {
			out, err := h.Ofctl("dump-flows", br)
			fmt.Fprintf(&b, "--- dump-flows %s ---\n%s%s\n", br, out, errText(err))
		}
	}
	for _, ns := range listNetNS(tb.Prefix + "c") {
		out, err := nsExec(ns, "ip", "-br", "addr")
		fmt.Fprintf(&b, "=== container %s ip addr ===\n%s%s\n", ns, out, errText(err))
	}
	return b.String()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "(error: " + err.Error() + ")"
}
