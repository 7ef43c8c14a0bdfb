package testbed

import (
	"fmt"
	"testing"
)

// OutsideHostIP and OutsideIP are the addresses of the link between a host
// and its "outside" namespace (AddOutside): the host's end and the far end.
func OutsideHostIP(i int) string { return fmt.Sprintf("198.18.%d.1", 200+i) }

// OutsideIP is the far end's address of host i's outside link.
func OutsideIP(i int) string { return fmt.Sprintf("198.18.%d.2", 200+i) }

// AddOutside creates a namespace behind host h that stands for the world
// beyond the host: a veth "out0" in h (OutsideHostIP/24) to "eth0" in the new
// namespace (OutsideIP/24, no default route: it only answers the host's
// address). The host forwards IPv4 (net.ipv4.ip_forward=1 in its namespace),
// as a host that gives containers a way out does. Both ends compute their own
// checksums (see DisableTxOffload): forwarded packets reach OVS's userspace
// datapath through contivh0.
func (h *Host) AddOutside(t testing.TB) *Container {
	t.Helper()
	c := h.NewContainerNS(t, "outside-"+h.Name)
	if err := addVeth(h.NS, "out0", c.NS, "eth0"); err != nil {
		t.Fatalf("testbed: outside of %s: %v", h.Name, err)
	}
	for _, step := range [][]string{
		{h.NS, "addr", "add", OutsideHostIP(h.Index) + "/24", "dev", "out0"},
		{c.NS, "addr", "add", OutsideIP(h.Index) + "/24", "dev", "eth0"},
	} {
		if err := ipIn(step[0], step[1:]...); err != nil {
			t.Fatalf("testbed: outside of %s: %v", h.Name, err)
		}
	}
	for _, end := range [][2]string{{h.NS, "out0"}, {c.NS, "eth0"}} {
		if err := DisableTxOffload(end[0], end[1]); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	if _, err := nsExec(h.NS, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"); err != nil {
		t.Fatalf("testbed: outside of %s: %v", h.Name, err)
	}
	c.IP = OutsideIP(h.Index)
	return c
}

// AsContainer is the host's own namespace seen as a Container, to run the
// traffic helpers (ServeTraffic, CheckTraffic, Ping) from the host itself.
func (h *Host) AsContainer() *Container {
	return &Container{Name: "host " + h.Name, NS: h.NS, Host: h, IP: h.IP}
}
