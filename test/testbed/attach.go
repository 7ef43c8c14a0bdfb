package testbed

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
)

// attachTimeout bounds one attach or detach call.
const attachTimeout = 60 * time.Second

// Attach asks h's netplugin to attach container c (container id = its
// namespace name) to tenant/network/group and records the address in
// c.IP. The container's interface is left as netplugin made it (the
// driver, not the test, makes it carry TCP and UDP on the userspace
// datapath; see docs/traffic.md). Any error fails the test.
func (h *Host) Attach(t testing.TB, c *Container, tenant, network, group string) attach.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), attachTimeout)
	defer cancel()
	res, err := attach.NewClient(h.AttachSocket()).Attach(ctx, attach.Request{
		Tenant: tenant, Network: network, Group: group,
		ContainerID: c.NS, Name: c.Name, NetNS: c.NSPath(),
	})
	if err != nil {
		t.Fatalf("testbed: attach %s on %s: %v", c.Name, h.Name, err)
	}
	c.IP, _, _ = strings.Cut(res.IPAddress, "/")
	return res
}

// Detach asks h's netplugin to detach container c from tenant/network.
// Any error fails the test.
func (h *Host) Detach(t testing.TB, c *Container, tenant, network string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), attachTimeout)
	defer cancel()
	err := attach.NewClient(h.AttachSocket()).Detach(ctx, attach.DetachRequest{
		Tenant: tenant, Network: network, ContainerID: c.NS, NetNS: c.NSPath(),
	})
	if err != nil {
		t.Fatalf("testbed: detach %s on %s: %v", c.Name, h.Name, err)
	}
}
