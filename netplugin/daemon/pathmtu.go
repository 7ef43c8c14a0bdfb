package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Path-MTU checks of new VTEP peers (docs/traffic.md).
const (
	pmtuProbeTimeout = time.Second
	pmtuAttempts     = 5
	pmtuRetry        = 5 * time.Second
)

// newPeer hands a peer whose tunnel was just made to checkPathMTU, unless
// its queue is full (the VTEP reconciler must not block).
func (d *Daemon) newPeer(ip string) {
	select {
	case d.pmtuPeers <- ip:
	default:
		d.log.WithField("vtep", ip).Debug("path MTU check skipped: queue full")
	}
}

// checkPathMTU probes the underlay path to every peer VTEP that arrives on peers,
// each in its own goroutine, and logs a warning naming the peer and the sizes when
// full-size encapsulated packets do not get through: the alternative is TCP
// connections that stall without a trace. It returns when ctx ends, after its
// probes.
func (d *Daemon) checkPathMTU(ctx context.Context, peers <-chan string) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case ip := <-peers:
			wg.Go(func() { d.probePeer(ctx, ip) })
		}
	}
}

func (d *Daemon) probePeer(ctx context.Context, ip string) {
	log := d.log.WithField("vtep", ip)
	for attempt := 1; ; attempt++ {
		res, err := d.drv.ProbePathMTU(ctx, ip, pmtuProbeTimeout)
		switch {
		case err != nil:
			log.WithError(err).Warn("path MTU check failed")
			return
		case res.Reachable && res.OK:
			log.Infof("path MTU check: %d-byte VXLAN packets reach the peer", res.Need)
			return
		case res.Reachable:
			log.WithFields(logrus.Fields{"need": res.Need}).Warnf(
				"PATH MTU PROBLEM: %s. Packets of containers on VXLAN networks that use the full endpoint MTU (%d) "+
					"will be dropped and their TCP connections stall: raise the underlay MTU to at least %d bytes "+
					"or lower the MTU of the host's links", res.Problem, res.Need-50, res.Need)
			return
		case attempt == pmtuAttempts:
			log.Infof("path MTU not checked: the peer does not answer ping")
			return
		}
		t := time.NewTimer(pmtuRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
