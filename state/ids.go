package state

import (
	"net"
	"net/netip"
)

// The ids and the MAC address contiv derives from names and addresses
// (docs/daemons.md §0, "Naming conventions used everywhere"). Every daemon and
// front end that needs one calls these; none spells the rule out itself.

// NetworkID is the state id of network net of tenant: "<net>.<tenant>".
func NetworkID(tenant, net string) string { return net + "." + tenant }

// GroupID is the state id of endpoint group group of tenant:
// "<group>:<tenant>".
func GroupID(tenant, group string) string { return group + ":" + tenant }

// EndpointID is the state id of the endpoint of container (or Docker
// endpoint id) on network net of tenant: "<net>.<tenant>-<container>".
func EndpointID(tenant, net, container string) string {
	return EndpointIDOnNetwork(NetworkID(tenant, net), container)
}

// EndpointIDOnNetwork is EndpointID for the network whose state id is
// netID (NetworkID): "<netID>-<container>".
func EndpointIDOnNetwork(netID, container string) string { return netID + "-" + container }

// NativeEndpointID is the state id of an endpoint created without a
// container id on host: "<host>-native-intf" (netmaster refuses such
// requests now, docs/compat.md E5, but reads and deletes older ones).
func NativeEndpointID(host string) string { return host + "-native-intf" }

// EndpointMAC is the MAC address of the endpoint with IPv4 address a:
// 02:02 followed by the address's four octets. The flows of the endpoint
// match it (docs/dataplane.md) and the DNS redirect keys on its 02:02
// prefix. It is nil when a is not an IPv4 address.
func EndpointMAC(a netip.Addr) net.HardwareAddr {
	if !a.Is4() && !a.Is4In6() {
		return nil
	}
	b := a.Unmap().As4()
	return net.HardwareAddr{0x02, 0x02, b[0], b[1], b[2], b[3]}
}
