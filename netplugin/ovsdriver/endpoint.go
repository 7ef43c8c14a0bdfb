package ovsdriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/ofnet/ovsdb"
	"github.com/contiv/netplugin/utils/phase"
)

// External ids that mark ports which are not container endpoints.
const (
	uplinkEndpointID = "uplinkPort"
	hostEndpointID   = "hostcontivh0"
	endpointIDKey    = "endpoint-id"
)

// EndpointSpec describes an endpoint port for CreateEndpoint.
type EndpointSpec struct {
	// EndpointID is the endpoint state id (external_ids endpoint-id).
	EndpointID string
	Bridge     string
	// Tag is the access VLAN (EPG vlan or network vlan); 0 makes a trunk.
	Tag int
	// MAC is set on the container side (nil: the kernel's random MAC).
	MAC net.HardwareAddr
	// MTU of the container side; 0 means EndpointMTU of the driver's
	// namespace (VXLAN when Bridge is VxlanBridge).
	MTU int
	// Bandwidth (ParseBandwidth) and Burst limit what the container sends
	// (ingress policing of the OVS side, docs/dataplane.md §1.6).
	Bandwidth string
	Burst     int
	// Infra makes an internal port named InfraName, with no veth.
	Infra     bool
	InfraName string
	// NetNS, when set, is the network namespace (a path such as
	// /var/run/netns/NAME) the container side is created in, named
	// NetNSIfName (down, with MAC and MTU), instead of vport<N> in the
	// driver's namespace: the attach path need not move it there, which
	// costs the kernel an RCU grace period per link (docs/scale.md).
	NetNS       string
	NetNSIfName string
}

// EndpointPort is an endpoint's port as created or found.
type EndpointPort struct {
	EndpointID string
	// PortName is the OVS port: vvport<N>, or the infra name.
	PortName string
	// IntfName is the container side vport<N> ("" for infra ports); with
	// EndpointSpec.NetNS the link is EndpointSpec.NetNSIfName in that
	// namespace instead, and IntfName only names it in records.
	IntfName string
	OFPort   uint32
	// MTU is the container side's MTU as created (0 for infra ports and
	// for ports ExistingEndpoints finds).
	MTU int
}

func (s EndpointSpec) validate() (rate int64, err error) {
	switch {
	case s.EndpointID == "":
		return 0, fmt.Errorf("%w: endpoint id is empty", ErrInvalid)
	case s.Bridge == "":
		return 0, fmt.Errorf("%w: endpoint %q: bridge is empty", ErrInvalid, s.EndpointID)
	case s.Tag < 0 || s.Tag > 4094:
		return 0, fmt.Errorf("%w: endpoint %q: tag %d out of range 0..4094", ErrInvalid, s.EndpointID, s.Tag)
	case s.MTU < 0:
		return 0, fmt.Errorf("%w: endpoint %q: MTU %d", ErrInvalid, s.EndpointID, s.MTU)
	case s.Burst < 0:
		return 0, fmt.Errorf("%w: endpoint %q: burst %d", ErrInvalid, s.EndpointID, s.Burst)
	case s.Infra && s.InfraName == "":
		return 0, fmt.Errorf("%w: infra endpoint %q: infra name is empty", ErrInvalid, s.EndpointID)
	case s.Infra && len(s.InfraName) > 15:
		return 0, fmt.Errorf("%w: infra endpoint %q: interface name %q longer than 15 characters", ErrInvalid, s.EndpointID, s.InfraName)
	case s.MAC != nil && len(s.MAC) != 6:
		return 0, fmt.Errorf("%w: endpoint %q: MAC %q is not 6 bytes", ErrInvalid, s.EndpointID, s.MAC)
	case s.NetNS != "" && (s.Infra || s.NetNSIfName == "" || len(s.NetNSIfName) > 15):
		return 0, fmt.Errorf("%w: endpoint %q: netns %q needs a container endpoint and an interface name of 1-15 characters, got %q",
			ErrInvalid, s.EndpointID, s.NetNS, s.NetNSIfName)
	}
	rate, err = ParseBandwidth(s.Bandwidth)
	if err != nil {
		return 0, fmt.Errorf("endpoint %q: %w", s.EndpointID, err)
	}
	return rate, nil
}

// CreateEndpoint creates an endpoint's port: a veth pair vport<N> (container
// side, with MAC and MTU, and on the netdev datapath with TX checksum
// offload off) / vvport<N> (OVS side, up), N from the persisted
// counter, and an OVS port vvport<N> with the access tag, endpoint-id in the
// external_ids of Port and Interface and the ingress policing. Nothing
// about the endpoint is stored in the per-host driver record (see
// docs/dataplane-scale.md): OVSDB's endpoint-id and the endpoint's own
// oper record name its port. Infra
// endpoints get an internal port named InfraName instead (ensureInfraPort).
// A stale port of the same name is deleted first. All or nothing: on failure the veth and
// the port are removed again.
func (d *Driver) CreateEndpoint(ctx context.Context, spec EndpointSpec) (res EndpointPort, err error) {
	rate, err := spec.validate()
	if err != nil {
		return res, err
	}
	if !d.bridgeExists(spec.Bridge) {
		return res, fmt.Errorf("create endpoint %q: bridge %q: %w", spec.EndpointID, spec.Bridge, ErrNotFound)
	}
	res.EndpointID = spec.EndpointID
	if spec.Infra {
		return d.ensureInfraPort(ctx, spec, rate)
	}
	n, err := d.allocPortNum(ctx)
	if err != nil {
		return res, fmt.Errorf("create endpoint %q: %w", spec.EndpointID, err)
	}
	res.PortName, res.IntfName = ovsIfName(n), containerIfName(n)
	phase.Mark(ctx, "port.num")
	fail := func(err error) (EndpointPort, error) {
		d.rollbackEndpoint(context.WithoutCancel(ctx), spec.Bridge, res)
		return EndpointPort{}, fmt.Errorf("create endpoint %q (port %s): %w", spec.EndpointID, res.PortName, err)
	}

	if err := d.deleteStalePort(ctx, res.PortName); err != nil {
		return fail(err)
	}
	mtu := spec.MTU
	if mtu == 0 {
		if mtu, err = EndpointMTU(d.nl, spec.Bridge == VxlanBridge); err != nil {
			return fail(err)
		}
	}
	// cont is the container side's namespace: the driver's, or spec.NetNS.
	cont := linkNS{nl: d.nl, path: d.cfg.NetNSPath, fd: -1}
	contName := res.IntfName
	if spec.NetNS != "" {
		c, err := openLinkNS(spec.NetNS)
		if err != nil {
			return fail(err)
		}
		defer c.close()
		cont, contName = c, spec.NetNSIfName
	}
	if err := d.addVeth(contName, res.PortName, mtu, spec.MAC, cont.fd); err != nil {
		return fail(err)
	}
	if d.needsSoftChecksum() {
		if err := disableTxChecksum(cont.path, contName); err != nil {
			return fail(err)
		}
	}
	phase.Mark(ctx, "port.veth")
	ids := map[string]string{endpointIDKey: spec.EndpointID}
	ps := ovsdb.PortSpec{Name: res.PortName, Tag: spec.Tag, ExternalIDs: ids, InterfaceExternalIDs: ids,
		IngressPolicingRate: rate, IngressPolicingBurst: int64(spec.Burst)}
	if n <= ovsdb.MaxOFPortRequest {
		// Pinned as it is created (ofport): no second write, and no second
		// reconfiguration of every bridge by ovs-vswitchd. N is unique
		// among the endpoints' ports; a number another port holds is not
		// granted, and ofport pins the one given instead.
		ps.OFPortRequest = int64(n)
	}
	if err := d.ovs.CreatePort(ctx, spec.Bridge, ps); err != nil {
		return fail(err)
	}
	phase.Mark(ctx, "port.ovsdb")
	if res.OFPort, err = d.ofport(ctx, res.PortName); err != nil {
		return fail(err)
	}
	phase.Mark(ctx, "port.ofport")
	if spec.MTU == 0 {
		// Links ovs-vswitchd creates for a new bridge appear
		// asynchronously: the MTU is what the namespace's links say now
		// that the port exists.
		if mtu, err = d.correctMTU(cont.nl, contName, res.PortName, mtu, spec.Bridge == VxlanBridge); err != nil {
			return fail(err)
		}
	}
	res.MTU = mtu
	phase.Mark(ctx, "port.mtu")
	return res, nil
}

// deleteStalePort removes a leftover OVS port of this name from whatever
// bridge holds it.
func (d *Driver) deleteStalePort(ctx context.Context, name string) error {
	var owner string
	var exists bool
	d.ovs.Cache().View(func(v ovsdb.View) { owner, exists = portBridge(v, name) })
	if !exists {
		return nil
	}
	d.log.WithField("port", name).Info("deleting stale OVS port before re-creating it")
	if err := d.ovs.DeletePort(ctx, owner, name); err != nil {
		return fmt.Errorf("delete stale port: %w", err)
	}
	return nil
}

// addVeth creates the veth pair in one netlink request: the OVS side up
// (without IPv6 addresses, see quietIPv6), the container side (down) with
// its MAC (nil: the kernel's), both ends with the endpoint's MTU. A veth
// drops a frame larger than its receiving end's MTU, so an OVS side left
// at the kernel's 1500 would drop every full-size packet of an endpoint
// on a jumbo underlay (docs/traffic.md, "Jumbo underlay").
// Every link change in its namespace makes ovs-vswitchd reconfigure all
// bridges and revalidate every datapath flow, work that grows with the
// number of ports; one request is one such change where creating, raising
// and configuring the ends one by one were four. (correctMTU may add one
// when the namespace's MTU changed meanwhile.)
// With contNS (an open namespace, -1 for the driver's own) the container
// side is created in that namespace.
func (d *Driver) addVeth(contName, ovsName string, mtu int, mac net.HardwareAddr, contNS int) error {
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ovsName, Flags: net.FlagUp, MTU: mtu},
		PeerName: contName, PeerMTU: uint32(mtu), PeerHardwareAddr: mac}
	if contNS >= 0 {
		veth.PeerNamespace = netlink.NsFd(contNS)
	}
	if err := d.nl.LinkAdd(veth); err != nil {
		return fmt.Errorf("create veth pair %s/%s: %w", contName, ovsName, err)
	}
	return d.quietIPv6(ovsName)
}

// correctMTU sets both ends' MTU again when EndpointMTU no longer gives the
// one they were created with (rarely: only the links of a bridge created a
// moment ago can change it). The OVS side is raised first and lowered
// last, so it never holds less than the container side, which lives in
// the namespace of contNL. It returns the MTU the ends have.
func (d *Driver) correctMTU(contNL *netlink.Handle, contName, ovsName string, created int, vxlan bool) (int, error) {
	mtu, err := EndpointMTU(d.nl, vxlan)
	if err != nil || mtu == created {
		return created, err
	}
	type end struct {
		nl   *netlink.Handle
		name string
	}
	ends := []end{{d.nl, ovsName}, {contNL, contName}}
	if mtu < created {
		ends[0], ends[1] = ends[1], ends[0]
	}
	for _, e := range ends {
		link, err := e.nl.LinkByName(e.name)
		if err != nil {
			return created, fmt.Errorf("look up link %q: %w", e.name, err)
		}
		if err := e.nl.LinkSetMTU(link, mtu); err != nil {
			return created, fmt.Errorf("set MTU %d on %q: %w", mtu, e.name, err)
		}
	}
	return mtu, nil
}

// infraAlias marks the kernel side of an infra port (ifalias), so that
// EndpointMTU, which reads links only, leaves it out like contivh0.
const infraAlias = "contiv-infra"

// ensureInfraPort makes sure the infra endpoint's internal port exists with
// its tag, ids, MTU and MAC. A port of that name already on the bridge is
// adopted, not re-created: re-creating it would delete its kernel device,
// and with it the host's addresses and routes on it, each time netplugin
// starts. A port that cannot be adopted (another type or bridge) is
// deleted and created again. The MTU is the endpoints' (EndpointMTU), kept
// by mtu_request, since on the userspace datapath a host sending more
// than the tunnel carries gets no "fragmentation needed".
func (d *Driver) ensureInfraPort(ctx context.Context, spec EndpointSpec, rate int64) (EndpointPort, error) {
	res := EndpointPort{EndpointID: spec.EndpointID, PortName: spec.InfraName}
	var existed bool
	d.ovs.Cache().View(func(v ovsdb.View) { _, existed = portBridge(v, res.PortName) })
	fail := func(err error) (EndpointPort, error) {
		if !existed { // an adopted port stays, with the host's addresses and routes on it
			d.rollbackEndpoint(context.WithoutCancel(ctx), spec.Bridge, res)
		}
		return EndpointPort{}, fmt.Errorf("create infra endpoint %q (port %s): %w", spec.EndpointID, res.PortName, err)
	}
	mtu := spec.MTU
	if mtu == 0 {
		var err error
		if mtu, err = EndpointMTU(d.nl, spec.Bridge == VxlanBridge); err != nil {
			return fail(err)
		}
	}
	ids := map[string]string{endpointIDKey: spec.EndpointID}
	ps := ovsdb.PortSpec{Name: res.PortName, Type: "internal", Tag: spec.Tag, ExternalIDs: ids, InterfaceExternalIDs: ids,
		IngressPolicingRate: rate, IngressPolicingBurst: int64(spec.Burst), MTURequest: int64(mtu)}
	err := d.ovs.CreatePort(ctx, spec.Bridge, ps)
	if errors.Is(err, ovsdb.ErrMismatch) {
		existed = false
		if err = d.deleteStalePort(ctx, res.PortName); err == nil {
			err = d.ovs.CreatePort(ctx, spec.Bridge, ps)
		}
	}
	if err != nil {
		return fail(err)
	}
	if res.OFPort, err = d.ofport(ctx, res.PortName); err != nil {
		return fail(err)
	}
	if err := d.configureInfraLink(ctx, res.PortName, mtu, spec.MAC); err != nil {
		return fail(err)
	}
	return res, nil
}

// configureInfraLink sets alias, MTU and MAC of an infra port's internal
// interface (which ovs-vswitchd creates asynchronously) where they differ.
func (d *Driver) configureInfraLink(ctx context.Context, name string, mtu int, mac net.HardwareAddr) error {
	link, err := d.waitLink(ctx, name)
	if err != nil {
		return err
	}
	a := link.Attrs()
	if a.Alias != infraAlias {
		if err := d.nl.LinkSetAlias(link, infraAlias); err != nil {
			return fmt.Errorf("set alias of %q: %w", name, err)
		}
	}
	if a.MTU != mtu {
		if err := d.nl.LinkSetMTU(link, mtu); err != nil {
			return fmt.Errorf("set MTU %d on %q: %w", mtu, name, err)
		}
	}
	if mac != nil && !equalMAC(a.HardwareAddr, mac) {
		if err := d.nl.LinkSetHardwareAddr(link, mac); err != nil {
			return fmt.Errorf("set MAC %s on %q: %w", mac, name, err)
		}
	}
	return nil
}

// rollbackEndpoint undoes a partly created endpoint; errors are logged.
func (d *Driver) rollbackEndpoint(ctx context.Context, bridge string, p EndpointPort) {
	if p.PortName == "" {
		return
	}
	if err := d.ovs.DeletePort(ctx, bridge, p.PortName); err != nil {
		d.log.WithError(err).Warnf("roll back OVS port %s", p.PortName)
	}
	if p.IntfName != "" {
		if err := d.deleteVeth(p.PortName); err != nil {
			d.log.WithError(err).Warnf("roll back veth %s", p.PortName)
		}
	}
}

// deleteVeth deletes a veth end (and so its peer) if it exists; links of
// other kinds are left alone.
func (d *Driver) deleteVeth(name string) error {
	link, err := d.nl.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up link %q: %w", name, err)
	}
	if link.Type() != "veth" {
		return nil
	}
	if err := d.nl.LinkDel(link); err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("delete veth %q: %w", name, err)
	}
	return nil
}

// ExistingEndpoints returns the endpoint ports on bridge (ports with an
// endpoint-id external id, except the uplink and the host port), with their
// OpenFlow port numbers, sorted by port name. It reads OVSDB only, so it
// also reports ports whose container side has moved into a container's
// namespace. A port whose device is gone (its veth was destroyed with the
// container's namespace) is reported with OFPort 0: it is dead and should
// be removed with DeleteEndpoint. A missing bridge has no endpoints.
func (d *Driver) ExistingEndpoints(ctx context.Context, bridge string) ([]EndpointPort, error) {
	var ports []EndpointPort
	d.ovs.Cache().View(func(v ovsdb.View) {
		br, ok := v.FindString("Bridge", "name", bridge)
		if !ok {
			return
		}
		for _, p := range rowsOf(v, "Port", br.UUIDs("ports")) {
			epID := p.StringMap("external_ids")[endpointIDKey]
			if epID == "" || epID == uplinkEndpointID || epID == hostEndpointID {
				continue
			}
			ep := EndpointPort{EndpointID: epID, PortName: p.String("name")}
			if rest, ok := strings.CutPrefix(ep.PortName, "vvport"); ok {
				ep.IntfName = "vport" + rest
			}
			ports = append(ports, ep)
		}
	})
	sort.Slice(ports, func(i, j int) bool { return ports[i].PortName < ports[j].PortName })
	for i := range ports {
		if ports[i].IntfName != "" {
			// OVS keeps the number of a vanished device: ask the kernel.
			gone, err := d.linkGone(ports[i].PortName)
			if err != nil {
				return nil, fmt.Errorf("endpoint port %q on bridge %q: %w", ports[i].PortName, bridge, err)
			}
			if gone {
				d.log.WithField("port", ports[i].PortName).Info("endpoint port has no device")
				continue
			}
		}
		n, err := d.liveOFPort(ctx, ports[i].PortName)
		if errors.Is(err, errNoDevice) {
			d.log.WithField("port", ports[i].PortName).Info("endpoint port has no device")
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("endpoint port %q on bridge %q: %w", ports[i].PortName, bridge, err)
		}
		ports[i].OFPort = n
	}
	return ports, nil
}

// linkGone reports whether the driver's namespace has no link called name.
func (d *Driver) linkGone(name string) (bool, error) {
	_, err := d.nl.LinkByName(name)
	var nf netlink.LinkNotFoundError
	switch {
	case err == nil:
		return false, nil
	case errors.As(err, &nf):
		return true, nil
	}
	return false, fmt.Errorf("look up link %q: %w", name, err)
}

// DeleteEndpoint removes the OVS port and the host-side veth (if it still
// exists). Idempotent.
func (d *Driver) DeleteEndpoint(ctx context.Context, bridge, portName string) error {
	if portName == "" {
		return fmt.Errorf("%w: delete endpoint on bridge %q: port name is empty", ErrInvalid, bridge)
	}
	if err := d.ovs.DeletePort(ctx, bridge, portName); err != nil {
		return fmt.Errorf("delete endpoint port %q: %w", portName, err)
	}
	if err := d.deleteVeth(portName); err != nil {
		return fmt.Errorf("delete endpoint port %q: %w", portName, err)
	}
	return nil
}

// UpdatePolicing rewrites the ingress policing columns of a port's
// interface (zero clears them), as on an EPG change.
func (d *Driver) UpdatePolicing(ctx context.Context, portName, bandwidth string, burst int) error {
	rate, err := ParseBandwidth(bandwidth)
	if err != nil {
		return fmt.Errorf("update policing of %q: %w", portName, err)
	}
	if burst < 0 {
		return fmt.Errorf("%w: update policing of %q: burst %d", ErrInvalid, portName, burst)
	}
	res, err := d.ovs.Transact(ctx, ovsdb.Update("Interface",
		ovsdb.Row{"ingress_policing_rate": rate, "ingress_policing_burst": int64(burst)},
		ovsdb.Eq("name", portName)))
	if err != nil {
		return fmt.Errorf("update policing of %q: %w", portName, err)
	}
	if res[0].Count == 0 {
		return fmt.Errorf("update policing of %q: interface %w", portName, ErrNotFound)
	}
	return nil
}
