package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/contiv/netplugin/netplugin/attach"
	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/netplugin/nsutil"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// localEndpoint is an endpoint homed on this host with its OVS port.
type localEndpoint struct {
	ep     state.Endpoint
	port   ovsdriver.EndpointPort
	bridge string
}

// endpointInfo describes a local endpoint to its datapath.
func (d *Daemon) endpointInfo(le *localEndpoint, nw state.Network) agent.EndpointInfo {
	info := agent.EndpointInfo{
		PortNo:        le.port.OFPort,
		Vlan:          uint16(nw.PktTag),
		IpAddr:        net.ParseIP(le.ep.IPAddress),
		EndpointGroup: le.ep.EndpointGroupID,
	}
	info.MacAddr, _ = net.ParseMAC(le.ep.MacAddress)
	if le.ep.IPv6Address != "" {
		info.Ipv6Addr = net.ParseIP(le.ep.IPv6Address)
	}
	d.mu.Lock()
	g, ok := d.groups[le.ep.EndpointGroupKey]
	d.mu.Unlock()
	if ok {
		info.Dscp = g.DSCP
		if g.PktTag != 0 {
			info.EndpointGroupVlan = uint16(g.PktTag)
		}
	}
	return info
}

// addLocal creates the OVS port of an endpoint and announces it to its
// datapath; on failure nothing is left behind.
func (d *Daemon) addLocal(ctx context.Context, ep state.Endpoint, nw state.Network) (*localEndpoint, error) {
	d.mu.Lock()
	g, hasGroup := d.groups[ep.EndpointGroupKey]
	d.mu.Unlock()
	tag := nw.PktTag
	spec := ovsdriver.EndpointSpec{EndpointID: ep.ID, Bridge: bridgeFor(nw)}
	if hasGroup {
		if g.PktTag != 0 {
			tag = g.PktTag
		}
		spec.Bandwidth, spec.Burst = g.Bandwidth, g.Burst
	}
	spec.Tag = tag
	if nw.NwType == "infra" && ep.EndpointID == d.cfg.HostLabel { // the host's own port on the network (infra.go)
		spec.Infra, spec.InfraName = true, nw.NetworkName
	}
	mac, err := net.ParseMAC(ep.MacAddress)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s has a bad MAC %q: %w", ep.ID, ep.MacAddress, err)
	}
	spec.MAC = mac
	t0 := time.Now()
	port, err := d.drv.CreateEndpoint(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("create the OVS port of endpoint %s: %w", ep.ID, err)
	}
	tPort := time.Since(t0)
	le := &localEndpoint{ep: ep, port: port, bridge: spec.Bridge}
	if err := d.agentFor(nw).AddLocalEndpoint(ctx, d.endpointInfo(le, nw)); err != nil {
		if derr := d.drv.DeleteEndpoint(context.WithoutCancel(ctx), spec.Bridge, port.PortName); derr != nil {
			d.log.WithError(derr).Warnf("roll back port %s", port.PortName)
		}
		return nil, fmt.Errorf("add endpoint %s to the datapath: %w", ep.ID, err)
	}
	d.log.WithFields(map[string]any{"endpoint": ep.ID, "port": tPort.Round(time.Millisecond),
		"flows": (time.Since(t0) - tPort).Round(time.Millisecond)}).Debug("local endpoint added")
	oper := state.EndpointOper{Common: state.Common{ID: ep.ID}, NetID: ep.NetID, EndpointID: ep.EndpointID,
		ServiceName: ep.ServiceName, ContUUID: ep.EndpointID, IPAddress: ep.IPAddress, IPv6Address: ep.IPv6Address,
		MacAddress: ep.MacAddress, HomingHost: ep.HomingHost, IntfName: port.IntfName, PortName: port.PortName, VtepIP: ep.VtepIP}
	if _, err := d.st.EndpointOper.Write(ctx, oper); err != nil {
		d.log.WithError(err).Warnf("record oper state of %s", ep.ID) // the dataplane works without it
	}
	d.mu.Lock()
	d.locals[ep.ID] = le
	d.mu.Unlock()
	d.bgpEndpoint(ctx, le, true)
	return le, nil
}

// removeLocal takes an endpoint out of the datapath and deletes its OVS
// port; an endpoint that is not local is a no-op.
func (d *Daemon) removeLocal(ctx context.Context, epID string) error {
	d.mu.Lock()
	le, ok := d.locals[epID]
	delete(d.locals, epID)
	d.mu.Unlock()
	if !ok {
		return nil
	}
	d.bgpEndpoint(ctx, le, false)
	var errs []error
	a := d.vl
	if le.bridge == ovsdriver.VxlanBridge {
		a = d.vx
	}
	if err := a.RemoveLocalEndpoint(ctx, le.port.OFPort); err != nil {
		errs = append(errs, fmt.Errorf("remove endpoint %s from the datapath: %w", epID, err))
	}
	if err := d.drv.DeleteEndpoint(ctx, le.bridge, le.port.PortName); err != nil {
		errs = append(errs, fmt.Errorf("delete port %s: %w", le.port.PortName, err))
	}
	if err := d.st.EndpointOper.Clear(ctx, epID); err != nil {
		d.log.WithError(err).Debugf("clear oper state of %s", epID)
	}
	return errors.Join(errs...)
}

// Attach connects a container to a network (the attach API of the CNI and
// Docker front ends): netmaster creates the endpoint and picks its address,
// the OVS port and flows are set up, and the container side of the veth is
// moved into the container's namespace with its address, MAC, MTU and
// default route. Any failure undoes every step taken.
func (d *Daemon) Attach(ctx context.Context, req attach.Request) (res attach.Result, err error) {
	if err := req.Validate(); err != nil {
		return res, err
	}
	if req.IfName == "" {
		req.IfName = "eth0"
	}
	t0 := time.Now()
	var tMaster, tLocal time.Duration
	ep, err := d.mc.CreateEndpoint(ctx, masterclient.CreateEndpointRequest{
		TenantName: req.Tenant, NetworkName: req.Network, ServiceName: req.Group,
		EndpointID: req.ContainerID, EPCommonName: req.Name,
		ConfigEP: masterclient.ConfigEP{Container: req.ContainerID, Host: d.cfg.HostLabel, ServiceName: req.Group},
	})
	if err != nil {
		return res, fmt.Errorf("create endpoint in netmaster: %w", err)
	}
	undoCtx := context.WithoutCancel(ctx)
	defer func() {
		if err != nil {
			if _, derr := d.mc.DeleteEndpoint(undoCtx, masterclient.DeleteEndpointRequest{TenantName: req.Tenant,
				NetworkName: req.Network, ServiceName: req.Group, EndpointID: req.ContainerID}); derr != nil {
				d.log.WithError(derr).Warnf("roll back endpoint %s in netmaster", ep.ID)
			}
		}
	}()
	d.mu.Lock()
	_, dup := d.locals[ep.ID]
	d.mu.Unlock()
	if dup {
		return res, fmt.Errorf("endpoint %s is already attached on this host", ep.ID)
	}
	nw, err := d.network(ctx, ep.NetID)
	if err != nil {
		return res, err
	}
	tMaster = time.Since(t0)
	le, err := d.addLocal(ctx, ep, nw)
	if err != nil {
		return res, err
	}
	tLocal = time.Since(t0) - tMaster
	defer func() {
		if err != nil {
			if rerr := d.removeLocal(undoCtx, ep.ID); rerr != nil {
				d.log.WithError(rerr).Warnf("roll back local endpoint %s", ep.ID)
			}
		}
	}()
	mtu, err := ovsdriver.EndpointMTU(nil, nw.PktTagType == "vxlan")
	if err != nil {
		return res, fmt.Errorf("endpoint MTU: %w", err)
	}
	lc := nsutil.LinkConfig{HostIfName: le.port.IntfName, NetNSPath: req.NetNS, IfName: req.IfName, MTU: mtu}
	lc.IPv4 = &net.IPNet{IP: net.ParseIP(ep.IPAddress).To4(), Mask: net.CIDRMask(int(nw.SubnetLen), 32)}
	if nw.Gateway != "" {
		lc.GatewayV4 = net.ParseIP(nw.Gateway)
	}
	if ep.IPv6Address != "" && nw.IPv6Subnet != "" {
		lc.IPv6 = &net.IPNet{IP: net.ParseIP(ep.IPv6Address), Mask: net.CIDRMask(int(nw.IPv6SubnetLen), 128)}
		if nw.IPv6Gateway != "" {
			lc.GatewayV6 = net.ParseIP(nw.IPv6Gateway)
		}
	}
	lc.MAC, _ = net.ParseMAC(ep.MacAddress)
	if err := nsutil.MoveAndConfigure(lc); err != nil {
		return res, fmt.Errorf("move %s into %s: %w", le.port.IntfName, req.NetNS, err)
	}
	res = attach.Result{EndpointID: ep.ID, IPAddress: lc.IPv4.String(), MacAddress: ep.MacAddress,
		Gateway: nw.Gateway, MTU: mtu, PortName: le.port.PortName, IfName: req.IfName}
	if lc.IPv6 != nil {
		res.IPv6Address, res.IPv6Gateway = lc.IPv6.String(), nw.IPv6Gateway
	}
	d.log.WithFields(map[string]any{"endpoint": ep.ID, "ip": res.IPAddress, "port": le.port.PortName,
		"netmaster": tMaster.Round(time.Millisecond), "ovs": tLocal.Round(time.Millisecond),
		"total": time.Since(t0).Round(time.Millisecond)}).Info("endpoint attached")
	return res, nil
}

// Detach removes a container's endpoint: the link in its namespace, the
// flows, the OVS port and netmaster's endpoint (and address). Detaching an
// endpoint that is already gone succeeds.
func (d *Daemon) Detach(ctx context.Context, req attach.DetachRequest) error {
	if req.Tenant == "" || req.Network == "" || req.ContainerID == "" {
		return fmt.Errorf("detach needs tenant, network and containerID (got %q, %q, %q)", req.Tenant, req.Network, req.ContainerID)
	}
	epID := req.Network + "." + req.Tenant + "-" + req.ContainerID
	var errs []error
	if req.NetNS != "" {
		ifName := req.IfName
		if ifName == "" {
			ifName = "eth0"
		}
		if err := nsutil.RemoveFromNS(req.NetNS, ifName); err != nil {
			errs = append(errs, err)
		}
	}
	if err := d.removeLocal(ctx, epID); err != nil {
		errs = append(errs, err)
	}
	group := ""
	if ep, err := d.st.Endpoints.Read(ctx, epID); err == nil {
		group = ep.ServiceName
	}
	if _, err := d.mc.DeleteEndpoint(ctx, masterclient.DeleteEndpointRequest{TenantName: req.Tenant,
		NetworkName: req.Network, ServiceName: group, EndpointID: req.ContainerID}); err != nil {
		errs = append(errs, fmt.Errorf("delete endpoint %s in netmaster: %w", epID, err))
	}
	return errors.Join(errs...)
}

// network returns a network's state, from the cache or the store (a network
// created a moment ago may not have reached the watch yet).
func (d *Daemon) network(ctx context.Context, id string) (state.Network, error) {
	d.mu.Lock()
	nw, ok := d.networks[id]
	d.mu.Unlock()
	if ok {
		return nw, nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		nw, err := d.st.Networks.Read(ctx, id)
		if err != nil {
			return nw, fmt.Errorf("network %s: %w", id, err)
		}
		d.mu.Lock()
		_, ok := d.networks[id]
		d.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return nw, nil
		}
		// Let the network watch add it to the datapath first.
		if !ctxutil.Sleep(ctx, 50*time.Millisecond) {
			return nw, ctx.Err()
		}
	}
}

var _ attach.Attacher = (*Daemon)(nil)
