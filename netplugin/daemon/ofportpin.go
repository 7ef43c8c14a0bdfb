package daemon

import (
	"context"
	"fmt"
)

// ofportpin/<bridge>: every port of the bridge pinned to the OpenFlow
// port number it has (ovsdriver PinOFPorts), once at start. The driver
// pins the ports it creates; ports an older netplugin made were not, and
// a later ovs-vswitchd restart with ports added in its absence could
// renumber them under the flows and the agent's endpoints that name them
// (docs/dataplane.md §1.3, docs/soak.md "Findings"). A port without a
// number yet fails the key, which the queue retries.
const kindOFPortPin = "ofportpin"

// reconcileOFPortPin pins the ports of bridge.
func (d *Daemon) reconcileOFPortPin(ctx context.Context, bridge string) error {
	n, err := d.drv.PinOFPorts(ctx, bridge)
	if n > 0 {
		d.log.WithField("bridge", bridge).Infof("pinned the OpenFlow numbers of %d existing ports", n)
	}
	if err != nil {
		return fmt.Errorf("pin the existing ports of %s: %w", bridge, err)
	}
	return nil
}
