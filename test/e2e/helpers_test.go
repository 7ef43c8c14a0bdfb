package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netplugin/attach"
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

// attachNew creates a container namespace on h and attaches it.
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

// pingOK pings until it succeeds (bounded: the first packets may race the
// remote endpoint's arrival at the peer).
func pingOK(from, to *ctr, within time.Duration) error {
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		if err = from.Ping(to.ip(), 1, 2*time.Second); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s (%s on %s) → %s (%s on %s): %w", from.Name, from.ip(), from.host.Name, to.Name, to.ip(), to.host.Name, err)
}

// pingFails checks that no reply comes back.
func pingFails(from, to *ctr) error {
	if err := from.Ping(to.ip(), 2, 3*time.Second); err == nil {
		return fmt.Errorf("%s (%s/%s) reached %s (%s/%s) but must not", from.Name, from.tenant, from.network, to.Name, to.tenant, to.network)
	}
	return nil
}
