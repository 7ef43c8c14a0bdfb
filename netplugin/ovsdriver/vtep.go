package ovsdriver

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/contiv/netplugin/ofnet/ovsdb"
)

// vtepPort is a vxlan port found in the cache.
type vtepPort struct {
	name, bridge string
}

// findVTEPs returns the vxlan ports whose options:remote_ip is remoteIP.
func findVTEPs(v ovsdb.View, remoteIP string) []vtepPort {
	var out []vtepPort
	for _, r := range v.Rows("Interface") {
		if r.String("type") != "vxlan" || r.StringMap("options")["remote_ip"] != remoteIP {
			continue
		}
		name := r.String("name")
		br, _ := portBridge(v, name)
		out = append(out, vtepPort{name: name, bridge: br})
	}
	return out
}

func parseVTEPIP(remoteIP string) (string, error) {
	addr, err := netip.ParseAddr(remoteIP)
	if err != nil || !addr.Is4() {
		return "", fmt.Errorf("%w: VTEP remote ip %q is not an IPv4 address", ErrInvalid, remoteIP)
	}
	return addr.String(), nil
}

// EnsureVTEP makes sure bridge has the tunnel port vxif<ip without dots> to
// remoteIP (type vxlan, options remote_ip, key=flow, tos=inherit, dst_port
// udpPort, 0 meaning 4789) and returns its OpenFlow port. Idempotent by
// remote_ip: an existing port to that peer under another name on the same
// bridge is replaced; one on another bridge is refused (ErrMismatch).
func (d *Driver) EnsureVTEP(ctx context.Context, bridge, remoteIP string, udpPort int) (uint32, error) {
	ip, err := parseVTEPIP(remoteIP)
	if err != nil {
		return 0, err
	}
	name := ovsdb.VTEPPortName(ip)
	var found []vtepPort
	d.ovs.Cache().View(func(v ovsdb.View) { found = findVTEPs(v, ip) })
	for _, p := range found {
		switch {
		case p.name == name:
			// CreateVTEPPort below checks and corrects it.
		case p.bridge == bridge || p.bridge == "":
			d.log.WithField("port", p.name).Infof("replacing tunnel port to %s by %s", ip, name)
			if err := d.ovs.DeletePort(ctx, bridge, p.name); err != nil {
				return 0, fmt.Errorf("ensure VTEP %s: %w", ip, err)
			}
		default:
			return 0, fmt.Errorf("%w: ensure VTEP %s on bridge %q: tunnel port %q to it already exists on bridge %q",
				ErrMismatch, ip, bridge, p.name, p.bridge)
		}
	}
	err = d.ovs.CreateVTEPPort(ctx, bridge, ovsdb.VTEPSpec{Name: name, RemoteIP: ip, Key: "flow", TOS: "inherit", DstPort: udpPort})
	if err != nil {
		return 0, fmt.Errorf("ensure VTEP %s: %w", ip, err)
	}
	ofport, err := d.ofport(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("ensure VTEP %s: %w", ip, err)
	}
	return ofport, nil
}

// DeleteVTEP removes the tunnel port(s) to remoteIP from bridge. Idempotent.
func (d *Driver) DeleteVTEP(ctx context.Context, bridge, remoteIP string) error {
	ip, err := parseVTEPIP(remoteIP)
	if err != nil {
		return err
	}
	names := map[string]bool{ovsdb.VTEPPortName(ip): true}
	d.ovs.Cache().View(func(v ovsdb.View) {
		for _, p := range findVTEPs(v, ip) {
			if p.bridge == bridge {
				names[p.name] = true
			}
		}
	})
	for name := range names {
		if err := d.ovs.DeletePort(ctx, bridge, name); err != nil {
			return fmt.Errorf("delete VTEP %s: %w", ip, err)
		}
	}
	return nil
}

// VTEPs returns the tunnel ports of bridge as remote IP → OpenFlow port.
func (d *Driver) VTEPs(ctx context.Context, bridge string) (map[string]uint32, error) {
	byName := map[string]string{}
	d.ovs.Cache().View(func(v ovsdb.View) {
		for _, r := range v.Rows("Interface") {
			ip := r.StringMap("options")["remote_ip"]
			if r.String("type") != "vxlan" || ip == "" {
				continue
			}
			if br, _ := portBridge(v, r.String("name")); br == bridge {
				byName[r.String("name")] = ip
			}
		}
	})
	out := make(map[string]uint32, len(byName))
	for name, ip := range byName {
		n, err := d.ofport(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("VTEPs of bridge %q: %w", bridge, err)
		}
		out[ip] = n
	}
	return out, nil
}
