package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/test/testbed"
)

// ctr is a container attached to a network.
type ctr struct {
	*testbed.Container
	host    *testbed.Host
	tenant  string
	network string
	id      string
	res     attach.Result
}

func (c *ctr) ip() string { return strings.Split(c.res.IPAddress, "/")[0] }

// netctl runs netctl and fails the test on error.
func netctl(t *testing.T, tb *testbed.Testbed, args ...string) string {
	t.Helper()
	out, err := tb.Netctl(args...)
	if err != nil {
		t.Fatalf("netctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// attachNew creates a container namespace on h, attaches it and starts
// the traffic echo (testbed.TrafficPort) in it.
func attachNew(t *testing.T, h *testbed.Host, name, tenant, network, group string) *ctr {
	t.Helper()
	c := h.NewContainerNS(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := "ctr-" + name
	res, err := attach.NewClient(h.AttachSocket()).Attach(ctx, attach.Request{Tenant: tenant, Network: network,
		Group: group, ContainerID: id, Name: name, NetNS: c.NSPath()})
	if err != nil {
		t.Fatalf("attach %s on %s to %s/%s: %v", name, h.Name, tenant, network, err)
	}
	c.ServeTraffic(t)
	return &ctr{Container: c, host: h, tenant: tenant, network: network, id: id, res: res}
}

// tryAttach attaches a new container, or returns nil (and removes the
// namespace) when the attach fails.
func tryAttach(t *testing.T, h *testbed.Host, name, tenant, network string) *ctr {
	t.Helper()
	c := h.NewContainerNS(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := "ctr-" + name
	res, err := attach.NewClient(h.AttachSocket()).Attach(ctx, attach.Request{Tenant: tenant, Network: network,
		ContainerID: id, Name: name, NetNS: c.NSPath()})
	if err != nil {
		t.Logf("attach %s: %v", name, err)
		c.Delete(t)
		return nil
	}
	c.ServeTraffic(t)
	return &ctr{Container: c, host: h, tenant: tenant, network: network, id: id, res: res}
}

func detach(t *testing.T, c *ctr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := attach.NewClient(c.host.AttachSocket()).Detach(ctx, attach.DetachRequest{Tenant: c.tenant,
		Network: c.network, ContainerID: c.id, NetNS: c.NSPath()}); err != nil {
		t.Fatalf("detach %s: %v", c.Name, err)
	}
}

// trafficTimeout bounds each TCP or UDP exchange of a reachability check.
const trafficTimeout = 10 * time.Second

// blockedTimeout is how long a check waits before it calls a TCP or UDP
// exchange blocked.
const blockedTimeout = 1500 * time.Millisecond

// pingOK checks that from reaches to: pings until one is answered (bounded:
// the first packets may race the remote endpoint's arrival at the peer),
// then a TCP request/response and a UDP exchange with to's echo.
func pingOK(from, to *ctr, within time.Duration) error {
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		if err = from.Ping(to.ip(), 1, 2*time.Second); err == nil {
			break
		}
	}
	if err == nil {
		err = errors.Join(from.TCPEcho(to.ip(), testbed.TrafficPort, 64, trafficTimeout),
			udpOK(from, to))
	}
	if err != nil {
		return fmt.Errorf("%s (%s on %s) → %s (%s on %s): %w", from.Name, from.ip(), from.host.Name, to.Name, to.ip(), to.host.Name, err)
	}
	return nil
}

func udpOK(from, to *ctr) error {
	_, err := from.UDPEcho(to.ip(), testbed.TrafficPort, trafficTimeout)
	return err
}

// trafficOK is the full application check from → to: ping, TCP
// request/response, a 3 MB TCP transfer with matching checksum and a UDP
// exchange.
func trafficOK(from, to *ctr, within time.Duration) error {
	if err := pingOK(from, to, within); err != nil {
		return err
	}
	if err := from.CheckTraffic(to.ip(), testbed.TrafficPort, trafficTimeout); err != nil {
		return fmt.Errorf("%s (%s on %s) → %s (%s on %s): %w", from.Name, from.ip(), from.host.Name, to.Name, to.ip(), to.host.Name, err)
	}
	return nil
}

// pingFails checks that neither a ping nor a TCP connection nor a UDP
// exchange gets through.
func pingFails(from, to *ctr) error {
	// The three run at once: each has to wait out its timeout.
	var pingErr, appErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := from.Ping(to.ip(), 2, 3*time.Second); err == nil {
			pingErr = errors.New("ping answered")
		}
	})
	wg.Go(func() { appErr = from.CheckNoTraffic(to.ip(), testbed.TrafficPort, blockedTimeout) })
	wg.Wait()
	if err := errors.Join(pingErr, appErr); err != nil {
		return fmt.Errorf("%s (%s/%s) reached %s (%s/%s) but must not: %w", from.Name, from.tenant, from.network, to.Name, to.tenant, to.network, err)
	}
	return nil
}
