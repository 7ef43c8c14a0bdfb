package ovsdriver

import "github.com/contiv/netplugin/ofnet/ovsdb"

// PortInfo describes one OVS interface by its OpenFlow port.
type PortInfo struct {
	Name     string
	Type     string // "" (system), "internal", "vxlan", ...
	RemoteIP string // options:remote_ip of a tunnel
}

// PortByOFPort finds the interface of bridge with OpenFlow port ofport in
// the OVSDB cache (packet trace names the port a packet leaves by).
func (d *Driver) PortByOFPort(bridge string, ofport uint32) (PortInfo, bool) {
	var out PortInfo
	found := false
	d.ovs.Cache().View(func(v ovsdb.View) {
		for _, r := range v.Rows("Interface") {
			n, ok := r.Int("ofport")
			if !ok || n != int64(ofport) {
				continue
			}
			if br, _ := portBridge(v, r.String("name")); br != bridge {
				continue
			}
			out = PortInfo{Name: r.String("name"), Type: r.String("type"), RemoteIP: r.StringMap("options")["remote_ip"]}
			found = true
			return
		}
	})
	return out, found
}
