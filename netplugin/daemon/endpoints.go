package daemon

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/contiv/netplugin/api/attach"
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
	qos    endpointQoS // what the port and its flows have (d.mu)
}

// endpointQoS is the bandwidth, burst and DSCP applied to a local endpoint;
// known is false when they are not known (a port found at restart).
type endpointQoS struct {
	bandwidth string
	burst     int
	dscp      int
	known     bool
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
		info.RateKbps, info.BurstKb = d.meterFor(g)
	}
	return info
}

// meterFor is the group's bandwidth limit as an OpenFlow meter rate and burst: on
// the userspace datapath only, which ignores the ingress policing the driver sets
// (docs/traffic.md). The burst is the profile's, but at least one second of the
// rate: with less, the userspace meter's drops hold TCP to about half the rate. A
// bandwidth the driver cannot parse gives no meter (the driver refuses it with an
// error of its own).
func (d *Daemon) meterFor(g state.EndpointGroup) (rate, burst uint32) {
	if d.cfg.OVSDatapath != "netdev" {
		return 0, 0
	}
	kbps, err := ovsdriver.ParseBandwidth(g.Bandwidth)
	if err != nil || kbps <= 0 || g.Burst < 0 {
		return 0, 0
	}
	rate = uint32(min(kbps, math.MaxUint32))
	return rate, max(rate, uint32(g.Burst))
}

// addLocal creates the OVS port of an endpoint and announces it to its
// datapath; on failure nothing is left behind.
func (d *Daemon) addLocal(ctx context.Context, ep state.Endpoint, nw state.Network) (*localEndpoint, error) {
	d.mu.Lock()
	g, hasGroup := d.groups[ep.EndpointGroupKey]
	d.mu.Unlock()
	tag := nw.PktTag
	spec := ovsdriver.EndpointSpec{EndpointID: ep.ID, Bridge: bridgeFor(nw)}
	qos := endpointQoS{known: true}
	if hasGroup {
		if g.PktTag != 0 {
			tag = g.PktTag
		}
		spec.Bandwidth, spec.Burst = g.Bandwidth, g.Burst
		qos = qosOf(g)
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
	le := &localEndpoint{ep: ep, port: port, bridge: spec.Bridge, qos: qos}
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
	d.bgpEndpoint(le)
	return le, nil
}

// removeLocal takes an endpoint out of the datapath and deletes its OVS
// port; an endpoint that is not local is a no-op. On failure the endpoint
// stays local, so its reconciler (endpoint/<id>) retries the removal once
// the store no longer holds it.
func (d *Daemon) removeLocal(ctx context.Context, epID string) (err error) {
	d.mu.Lock()
	le, ok := d.locals[epID]
	delete(d.locals, epID)
	d.mu.Unlock()
	if !ok {
		return nil
	}
	defer func() {
		if err == nil {
			return
		}
		d.mu.Lock()
		if _, again := d.locals[epID]; !again {
			d.locals[epID] = le
		}
		d.mu.Unlock()
	}()
	d.bgpEndpoint(le)
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
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := d.st.EndpointOper.Clear(ctx, epID); err != nil {
		d.log.WithError(err).Debugf("clear oper state of %s", epID)
	}
	return nil
}

// Attach connects a container to a network (the attach API of the CNI
// front end): AttachHost creates the endpoint and its port, then the
// container side of the veth is moved into the container's namespace with
// its address, MAC, MTU and default route. Any failure undoes every step.
func (d *Daemon) Attach(ctx context.Context, req attach.Request) (attach.Result, error) {
	start := time.Now()
	res, err := d.attach(ctx, req)
	d.met.observeAttach("attach", start, err)
	return res, err
}

func (d *Daemon) attach(ctx context.Context, req attach.Request) (res attach.Result, err error) {
	if err := req.Validate(); err != nil {
		return res, err
	}
	if req.IfName == "" {
		req.IfName = attach.DefaultIfName
	}
	res, err = d.AttachHost(ctx, attach.HostRequest{Tenant: req.Tenant, Network: req.Network, Group: req.Group,
		ContainerID: req.ContainerID, Name: req.Name})
	if err != nil {
		return res, err
	}
	lc := nsutil.LinkConfig{HostIfName: res.IfName, NetNSPath: req.NetNS, IfName: req.IfName, MTU: res.MTU}
	if lc.IPv4, err = parsePrefix(res.IPAddress); err == nil && res.Gateway != "" {
		lc.GatewayV4 = net.ParseIP(res.Gateway)
	}
	if err == nil && res.IPv6Address != "" {
		if lc.IPv6, err = parsePrefix(res.IPv6Address); err == nil && res.IPv6Gateway != "" {
			lc.GatewayV6 = net.ParseIP(res.IPv6Gateway)
		}
	}
	lc.MAC, _ = net.ParseMAC(res.MacAddress)
	if err == nil {
		// The pod's policy first, then its interface.
		err = d.netpolAttached(ctx, req, res.IPAddress)
	}
	if err == nil {
		if err = nsutil.MoveAndConfigure(lc); err != nil {
			err = fmt.Errorf("move %s into %s: %w", res.IfName, req.NetNS, err)
		}
	}
	if err != nil {
		if derr := d.Detach(context.WithoutCancel(ctx), attach.DetachRequest{Tenant: req.Tenant, Network: req.Network,
			ContainerID: req.ContainerID, PodNamespace: req.PodNamespace, PodName: req.PodName}); derr != nil {
			d.log.WithError(derr).Warnf("roll back endpoint %s", res.EndpointID)
		}
		return attach.Result{}, err
	}
	res.IfName = req.IfName
	if len(req.Labels) > 0 {
		// The container is started: it becomes a provider of the services its
		// labels select (docs/services.md).
		ip, _, _ := strings.Cut(res.IPAddress, "/")
		if err := d.mc.UpdateEndpoint(ctx, masterclient.UpdateEndpointRequest{IPAddress: ip,
			ContainerID: req.ContainerID, Labels: req.Labels, Tenant: req.Tenant, Network: req.Network,
			Event: "start", EndpointID: req.ContainerID, EPCommonName: req.Name}); err != nil {
			if derr := d.Detach(context.WithoutCancel(ctx), attach.DetachRequest{Tenant: req.Tenant, Network: req.Network,
				ContainerID: req.ContainerID, NetNS: req.NetNS, IfName: req.IfName,
				PodNamespace: req.PodNamespace, PodName: req.PodName}); derr != nil {
				d.log.WithError(derr).Warnf("roll back endpoint %s", res.EndpointID)
			}
			return attach.Result{}, err
		}
	}
	return res, nil
}

// parsePrefix reads "ip/len" keeping the address (not the masked base).
func parsePrefix(s string) (*net.IPNet, error) {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		return nil, fmt.Errorf("endpoint address %q: %w", s, err)
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return &net.IPNet{IP: ip, Mask: n.Mask}, nil
}

// AttachHost creates a container's endpoint in netmaster (with the
// addresses the request holds, if any) and its OVS port and flows; the
// container side of the veth stays in this namespace (attach.HostAttacher).
// Any failure undoes every step; a second request for an endpoint attached
// (or being attached) here is attach.ErrAlreadyAttached and changes nothing.
func (d *Daemon) AttachHost(ctx context.Context, req attach.HostRequest) (res attach.Result, err error) {
	if err := req.Validate(); err != nil {
		return res, err
	}
	epID := state.EndpointID(req.Tenant, req.Network, req.ContainerID)
	d.mu.Lock()
	_, dup := d.locals[epID]
	if !dup {
		_, dup = d.pending[epID]
	}
	if !dup {
		d.pending[epID] = struct{}{}
	}
	d.mu.Unlock()
	if dup {
		return res, fmt.Errorf("endpoint %s: %w", epID, attach.ErrAlreadyAttached)
	}
	defer func() {
		d.mu.Lock()
		delete(d.pending, epID)
		d.mu.Unlock()
	}()
	t0 := time.Now()
	var tMaster, tLocal time.Duration
	ep, err := d.mc.CreateEndpoint(ctx, masterclient.CreateEndpointRequest{
		TenantName: req.Tenant, NetworkName: req.Network, ServiceName: req.Group,
		EndpointID: req.ContainerID, EPCommonName: req.Name,
		ConfigEP: masterclient.ConfigEP{Container: req.ContainerID, Host: d.cfg.HostLabel, ServiceName: req.Group,
			IPAddress: req.IPAddress, IPv6Address: req.IPv6Address},
	})
	undoCtx := context.WithoutCancel(ctx)
	if err != nil {
		// netmaster may have created the endpoint all the same (the
		// answer was lost or came after the request timed out).
		if rerr := d.releaseEndpoint(undoCtx, epID); rerr != nil {
			d.log.WithError(rerr).Warnf("roll back endpoint %s in netmaster; the sweep of orphaned endpoints retries", epID)
		}
		return res, fmt.Errorf("create endpoint in netmaster: %w", err)
	}
	existed := false // netmaster answered with an endpoint made before
	defer func() {
		if err != nil && !existed {
			if _, derr := d.mc.DeleteEndpoint(undoCtx, masterclient.DeleteEndpointRequest{TenantName: req.Tenant,
				NetworkName: req.Network, ServiceName: req.Group, EndpointID: req.ContainerID}); derr != nil {
				d.log.WithError(derr).Warnf("roll back endpoint %s in netmaster; the sweep of orphaned endpoints retries", ep.ID)
			}
		}
	}()
	if ep.HomingHost != d.cfg.HostLabel {
		// netmaster answered with an existing endpoint of another host:
		// it is not ours to take over or to roll back.
		existed = true
		return res, fmt.Errorf("endpoint %s is homed on host %q: %w", ep.ID, ep.HomingHost, attach.ErrAlreadyAttached)
	}
	if req.IPAddress != "" && ep.IPAddress != req.IPAddress {
		existed = true
		return res, fmt.Errorf("endpoint %s exists with address %s, not %s: %w", ep.ID, ep.IPAddress, req.IPAddress, attach.ErrAlreadyAttached)
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
	res, err = d.describe(le, nw)
	if err != nil {
		if rerr := d.removeLocal(undoCtx, ep.ID); rerr != nil {
			d.log.WithError(rerr).Warnf("roll back local endpoint %s", ep.ID)
		}
		return res, err
	}
	d.log.WithFields(map[string]any{"endpoint": ep.ID, "ip": res.IPAddress, "port": le.port.PortName,
		"netmaster": tMaster.Round(time.Millisecond), "ovs": tLocal.Round(time.Millisecond),
		"total": time.Since(t0).Round(time.Millisecond)}).Info("endpoint attached")
	return res, nil
}

// describe is the attach.Result of a local endpoint; IfName is the
// container side of its veth in this namespace.
func (d *Daemon) describe(le *localEndpoint, nw state.Network) (attach.Result, error) {
	mtu, err := ovsdriver.EndpointMTU(nil, nw.PktTagType == "vxlan")
	if err != nil {
		return attach.Result{}, fmt.Errorf("endpoint MTU: %w", err)
	}
	res := attach.Result{EndpointID: le.ep.ID, MacAddress: le.ep.MacAddress, Gateway: nw.Gateway, MTU: mtu,
		PortName: le.port.PortName, IfName: le.port.IntfName}
	if le.ep.IPAddress != "" {
		res.IPAddress = fmt.Sprintf("%s/%d", le.ep.IPAddress, nw.SubnetLen)
	}
	if le.ep.IPv6Address != "" && nw.IPv6Subnet != "" {
		res.IPv6Address = fmt.Sprintf("%s/%d", le.ep.IPv6Address, nw.IPv6SubnetLen)
		res.IPv6Gateway = nw.IPv6Gateway
	}
	return res, nil
}

// Attached returns the endpoint of (tenant, network, containerID) if it is
// attached on this host (attach.HostAttacher).
func (d *Daemon) Attached(tenant, network, containerID string) (attach.Result, bool) {
	epID := state.EndpointID(tenant, network, containerID)
	d.mu.Lock()
	le, ok := d.locals[epID]
	var nw state.Network
	if ok {
		nw, ok = d.networks[le.ep.NetID]
	}
	d.mu.Unlock()
	if !ok {
		return attach.Result{}, false
	}
	res, err := d.describe(le, nw)
	return res, err == nil
}

// endpointGone reports whether netmaster answered that the endpoint does
// not exist: a retried delete whose first attempt reached netmaster (its
// answer lost to a netmaster that died) finds it gone, and that is the
// outcome the caller wants.
func endpointGone(err error) bool {
	var se *masterclient.StatusError
	return errors.As(err, &se) && se.StatusCode == http.StatusNotFound
}

// Detach removes a container's endpoint: the link in its namespace, the
// flows, the OVS port and netmaster's endpoint (and address). Detaching an
// endpoint that is already gone succeeds.
func (d *Daemon) Detach(ctx context.Context, req attach.DetachRequest) error {
	start := time.Now()
	err := d.detach(ctx, req)
	d.met.observeAttach("detach", start, err)
	return err
}

func (d *Daemon) detach(ctx context.Context, req attach.DetachRequest) error {
	if req.Tenant == "" || req.Network == "" || req.ContainerID == "" {
		return fmt.Errorf("detach needs tenant, network and containerID (got %q, %q, %q)", req.Tenant, req.Network, req.ContainerID)
	}
	epID := state.EndpointID(req.Tenant, req.Network, req.ContainerID)
	// Pending while it is taken apart: the sweep of orphaned endpoints
	// must not delete it in netmaster meanwhile too.
	d.mu.Lock()
	_, busy := d.pending[epID]
	if !busy {
		d.pending[epID] = struct{}{}
	}
	d.mu.Unlock()
	if !busy {
		defer func() {
			d.mu.Lock()
			delete(d.pending, epID)
			d.mu.Unlock()
		}()
	}
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
	group := ""
	if ep, err := d.st.Endpoints.Read(ctx, epID); err == nil {
		group = ep.ServiceName
		if len(ep.Labels) > 0 {
			// Withdraw it from its services before its address goes away.
			if err := d.mc.UpdateEndpoint(ctx, masterclient.UpdateEndpointRequest{ContainerID: req.ContainerID,
				Event: "die"}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := d.removeLocal(ctx, epID); err != nil {
		errs = append(errs, err)
	} else {
		d.netpolDetached(req) // its address may go to another pod
	}
	if _, err := d.mc.DeleteEndpoint(ctx, masterclient.DeleteEndpointRequest{TenantName: req.Tenant,
		NetworkName: req.Network, ServiceName: group, EndpointID: req.ContainerID}); err != nil && !endpointGone(err) {
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

var (
	_ attach.Attacher     = (*Daemon)(nil)
	_ attach.HostAttacher = (*Daemon)(nil)
)
