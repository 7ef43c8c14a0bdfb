package attachsvc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/netplugin/nsutil"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/phase"
)

// AddLocal creates the OVS port of an endpoint and announces it to its
// datapath; on failure nothing is left behind.
func (s *Service) AddLocal(ctx context.Context, ep state.Endpoint, nw state.Network) (*Local, error) {
	return s.addLocal(ctx, ep, nw, podNS{}, nil)
}

// podNS is the pod namespace an attach creates the container side of the
// veth in (with its final name), or none: then it stays in this namespace.
type podNS struct{ path, ifName string }

// portSpec is the OVS port of endpoint epID (container endpointID) of
// group groupKey on nw, its container side created in into, without the
// MAC, and the QoS it gets.
func (s *Service) portSpec(epID, endpointID, groupKey string, nw state.Network, into podNS) (ovsdriver.EndpointSpec, QoS) {
	spec := ovsdriver.EndpointSpec{EndpointID: epID, Bridge: BridgeFor(nw), NetNS: into.path, NetNSIfName: into.ifName, Tag: nw.PktTag}
	qos := QoS{Known: true}
	if g, ok := s.cfg.Cluster.Group(groupKey); ok {
		if g.PktTag != 0 {
			spec.Tag = g.PktTag
		}
		spec.Bandwidth, spec.Burst = g.Bandwidth, g.Burst
		qos = QoSOf(g)
	}
	if nw.NwType == "infra" && endpointID == s.cfg.Host { // the host's own port on the network (infra.go)
		spec.Infra, spec.InfraName = true, nw.NetworkName
	}
	return spec, qos
}

// earlyPort is a pod's OVS port (veth, OVSDB port, OpenFlow number)
// created while netmaster creates its endpoint: the port needs the
// network and the group, which the agent knows, not the address, and the
// MAC is set with the address in the pod's namespace (docs/scale.md, "CNI
// ADD against the bridge plugin"). The attach that started it takes it or
// drops it (deletes the port); it never outlives the attach.
type earlyPort struct {
	spec  ovsdriver.EndpointSpec
	done  chan struct{}
	port  ovsdriver.EndpointPort // valid once done is closed
	err   error
	steps []phase.Step
	taken bool // the endpoint owns the port now
}

// startEarlyPort starts creating the port of a pod (into names its
// namespace) when the agent knows the network (not an infra one) and the
// group the request names; nil when it does not start.
func (s *Service) startEarlyPort(ctx context.Context, req attach.HostRequest, epID string, into podNS) *earlyPort {
	if into.path == "" {
		return nil
	}
	nw, ok := s.cfg.Cluster.KnownNetwork(state.NetworkID(req.Tenant, req.Network))
	if !ok || nw.NwType == "infra" {
		return nil
	}
	groupKey := ""
	if req.Group != "" {
		if groupKey = state.GroupID(req.Tenant, req.Group); !s.knownGroup(groupKey) {
			return nil
		}
	}
	spec, _ := s.portSpec(epID, req.ContainerID, groupKey, nw, into)
	p := &earlyPort{spec: spec, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		pctx, rec := phase.With(ctx) // its own steps, added to the ADD's by wait
		p.port, p.err = s.cfg.Ports.CreateEndpoint(pctx, spec)
		p.steps = rec.Steps()
	}()
	return p
}

func (s *Service) knownGroup(id string) bool {
	_, ok := s.cfg.Cluster.Group(id)
	return ok
}

// wait waits for the port and adds its steps to those of ctx.
func (p *earlyPort) wait(ctx context.Context) {
	<-p.done
	rec := phase.From(ctx)
	for _, st := range p.steps {
		rec.Add(st.Name, st.D)
	}
	p.steps = nil
}

// dropEarlyPort deletes p's port unless the endpoint took it; nil does
// nothing.
func (s *Service) dropEarlyPort(ctx context.Context, p *earlyPort) {
	if p == nil {
		return
	}
	p.wait(ctx)
	if p.taken || p.err != nil {
		return
	}
	p.taken = true
	if err := s.cfg.Ports.DeleteEndpoint(ctx, p.spec.Bridge, p.port.PortName); err != nil {
		s.log.WithError(err).Warnf("delete port %s made for endpoint %s", p.port.PortName, p.spec.EndpointID)
	}
}

// sameSpec reports whether early port spec a is the port spec b asks
// for, the MAC aside.
func sameSpec(a, b ovsdriver.EndpointSpec) bool {
	a.MAC, b.MAC = nil, nil
	return reflect.DeepEqual(a, b)
}

// addLocal creates the endpoint's port, or takes early (when not nil) if
// it was made as the endpoint needs it (the caller sets the MAC then), and
// announces the endpoint to its datapath. An early port it does not take
// it deletes.
func (s *Service) addLocal(ctx context.Context, ep state.Endpoint, nw state.Network, into podNS, early *earlyPort) (*Local, error) {
	spec, qos := s.portSpec(ep.ID, ep.EndpointID, ep.EndpointGroupKey, nw, into)
	mac, err := net.ParseMAC(ep.MacAddress)
	if err != nil {
		s.dropEarlyPort(context.WithoutCancel(ctx), early)
		return nil, fmt.Errorf("endpoint %s has a bad MAC %q: %w", ep.ID, ep.MacAddress, err)
	}
	spec.MAC = mac
	t0 := time.Now()
	var port ovsdriver.EndpointPort
	if early != nil {
		early.wait(ctx)
		phase.Mark(ctx, "port.wait")
		if early.err == nil && sameSpec(early.spec, spec) {
			port, early.taken = early.port, true
		} else {
			s.dropEarlyPort(context.WithoutCancel(ctx), early)
		}
	}
	if port.PortName == "" {
		if port, err = s.cfg.Ports.CreateEndpoint(ctx, spec); err != nil {
			return nil, fmt.Errorf("create the OVS port of endpoint %s: %w", ep.ID, err)
		}
	}
	tPort := time.Since(t0)
	le := &Local{EP: ep, Port: port, Bridge: spec.Bridge, QoS: qos}
	// The oper record is written while the flows go in (one store round
	// trip off the attach); both are done before the endpoint is local.
	var operErr error
	operDone := make(chan struct{})
	go func() {
		defer close(operDone)
		operErr = s.writeOper(ctx, *le)
	}()
	if err := s.cfg.Datapath(spec.Bridge).AddLocalEndpoint(ctx, s.cfg.Cluster.EndpointInfo(*le, nw)); err != nil {
		<-operDone
		undoCtx := context.WithoutCancel(ctx)
		if cerr := s.cfg.Store.EndpointOper.Clear(undoCtx, ep.ID); cerr != nil {
			s.log.WithError(cerr).Debugf("roll back oper state of %s; retrying", ep.ID)
			s.retryOper(ep.ID) // not local: the queue clears it
		}
		if derr := s.cfg.Ports.DeleteEndpoint(undoCtx, spec.Bridge, port.PortName); derr != nil {
			s.log.WithError(derr).Warnf("roll back port %s", port.PortName)
		}
		return nil, fmt.Errorf("add endpoint %s to the datapath: %w", ep.ID, err)
	}
	phase.Mark(ctx, "flows")
	s.log.WithFields(map[string]any{"endpoint": ep.ID, "port": tPort.Round(time.Millisecond),
		"flows": (time.Since(t0) - tPort).Round(time.Millisecond)}).Debug("local endpoint added")
	<-operDone
	phase.Mark(ctx, "oper")
	s.mu.Lock()
	s.locals[ep.ID] = le
	s.mu.Unlock()
	if operErr != nil {
		// The dataplane works without it; the queue retries it once the
		// endpoint is local.
		s.log.WithError(operErr).Warnf("record oper state of %s; retrying", ep.ID)
		s.retryOper(ep.ID)
	}
	s.changed(*le)
	return le, nil
}

// RemoveLocal takes an endpoint out of the datapath and deletes its OVS
// port; an endpoint that is not local is a no-op. On failure the endpoint
// stays local, so its reconciler (endpoint/<id>) retries the removal once
// the store no longer holds it.
func (s *Service) RemoveLocal(ctx context.Context, epID string) (err error) {
	s.mu.Lock()
	le, ok := s.locals[epID]
	delete(s.locals, epID)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	defer func() {
		if err == nil {
			return
		}
		s.mu.Lock()
		if _, again := s.locals[epID]; !again {
			s.locals[epID] = le
		}
		s.mu.Unlock()
	}()
	s.changed(*le)
	var errs []error
	if err := s.cfg.Datapath(le.Bridge).RemoveLocalEndpoint(ctx, le.Port.OFPort); err != nil {
		errs = append(errs, fmt.Errorf("remove endpoint %s from the datapath: %w", epID, err))
	}
	if err := s.cfg.Ports.DeleteEndpoint(ctx, le.Bridge, le.Port.PortName); err != nil {
		errs = append(errs, fmt.Errorf("delete port %s: %w", le.Port.PortName, err))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := s.cfg.Store.EndpointOper.Clear(ctx, epID); err != nil {
		s.log.WithError(err).Debugf("clear oper state of %s; retrying", epID)
		s.retryOper(epID)
	}
	return nil
}

// Attach connects a container to a network (the attach API of the CNI
// front end): AttachHost creates the endpoint and its port, then the
// container side of the veth is moved into the container's namespace with
// its address, MAC, MTU and default route. Any failure undoes every step.
func (s *Service) Attach(ctx context.Context, req attach.Request) (attach.Result, error) {
	start := time.Now()
	res, err := s.attach(ctx, req)
	s.observe("attach", start, err)
	return res, err
}

func (s *Service) attach(ctx context.Context, req attach.Request) (res attach.Result, err error) {
	if err := req.Validate(); err != nil {
		return res, err
	}
	if req.IfName == "" {
		req.IfName = attach.DefaultIfName
	}
	// The container side is created in the pod's namespace under its
	// final name and MTU (no move, docs/scale.md), while netmaster creates
	// the endpoint when it can (earlyPort): then it gets its MAC with the
	// address below.
	res, err = s.attachHost(ctx, attach.HostRequest{Tenant: req.Tenant, Network: req.Network, Group: req.Group,
		ContainerID: req.ContainerID, Name: req.Name, PodNamespace: req.PodNamespace, PodName: req.PodName},
		podNS{path: req.NetNS, ifName: req.IfName})
	if err != nil {
		return res, err
	}
	lc := nsutil.LinkConfig{NetNSPath: req.NetNS, IfName: req.IfName}
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
		err = s.policyAttached(ctx, req, res.IPAddress)
		phase.Mark(ctx, "policy")
	}
	if err == nil {
		if err = nsutil.ConfigureInNS(lc); err != nil {
			err = fmt.Errorf("configure %s in %s: %w", req.IfName, req.NetNS, err)
		}
		phase.Mark(ctx, "netns")
	}
	if err != nil {
		if derr := s.Detach(context.WithoutCancel(ctx), attach.DetachRequest{Tenant: req.Tenant, Network: req.Network,
			ContainerID: req.ContainerID, PodNamespace: req.PodNamespace, PodName: req.PodName}); derr != nil {
			s.log.WithError(derr).Warnf("roll back endpoint %s", res.EndpointID)
		}
		return attach.Result{}, err
	}
	res.IfName = req.IfName
	if len(req.Labels) > 0 {
		// The container is started: it becomes a provider of the services its
		// labels select (docs/services.md).
		ip, _, _ := strings.Cut(res.IPAddress, "/")
		if err := s.cfg.Master.UpdateEndpoint(ctx, masterclient.UpdateEndpointRequest{IPAddress: ip,
			ContainerID: req.ContainerID, Labels: req.Labels, Tenant: req.Tenant, Network: req.Network,
			Event: "start", EndpointID: req.ContainerID, EPCommonName: req.Name}); err != nil {
			if derr := s.Detach(context.WithoutCancel(ctx), attach.DetachRequest{Tenant: req.Tenant, Network: req.Network,
				ContainerID: req.ContainerID, NetNS: req.NetNS, IfName: req.IfName,
				PodNamespace: req.PodNamespace, PodName: req.PodName}); derr != nil {
				s.log.WithError(derr).Warnf("roll back endpoint %s", res.EndpointID)
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
func (s *Service) AttachHost(ctx context.Context, req attach.HostRequest) (res attach.Result, err error) {
	return s.attachHost(ctx, req, podNS{})
}

func (s *Service) attachHost(ctx context.Context, req attach.HostRequest, into podNS) (res attach.Result, err error) {
	if err := req.Validate(); err != nil {
		return res, err
	}
	epID := state.EndpointID(req.Tenant, req.Network, req.ContainerID)
	s.mu.Lock()
	_, dup := s.locals[epID]
	if !dup {
		_, dup = s.pending[epID]
	}
	if !dup {
		s.pending[epID] = struct{}{}
	}
	s.mu.Unlock()
	if dup {
		return res, fmt.Errorf("endpoint %s: %w", epID, attach.ErrAlreadyAttached)
	}
	defer func() {
		s.mu.Lock()
		delete(s.pending, epID)
		s.mu.Unlock()
	}()
	t0 := time.Now()
	var tMaster, tLocal time.Duration
	// A pod's port is made while netmaster creates the endpoint; every
	// failure below deletes it unless the endpoint took it.
	early := s.startEarlyPort(ctx, req, epID, into)
	undoCtx := context.WithoutCancel(ctx)
	defer func() {
		if err != nil {
			s.dropEarlyPort(undoCtx, early)
		}
	}()
	ep, err := s.cfg.Master.CreateEndpoint(ctx, masterclient.CreateEndpointRequest{
		TenantName: req.Tenant, NetworkName: req.Network, ServiceName: req.Group,
		EndpointID: req.ContainerID, EPCommonName: req.Name,
		ConfigEP: masterclient.ConfigEP{Container: req.ContainerID, Host: s.cfg.Host, ServiceName: req.Group,
			IPAddress: req.IPAddress, IPv6Address: req.IPv6Address, PodNamespace: req.PodNamespace, PodName: req.PodName},
	})
	if err != nil {
		// netmaster may have created the endpoint all the same (the
		// answer was lost or came after the request timed out).
		if rerr := s.cfg.Cluster.Release(undoCtx, epID); rerr != nil {
			s.log.WithError(rerr).Warnf("roll back endpoint %s in netmaster; the sweep of orphaned endpoints retries", epID)
		}
		return res, fmt.Errorf("create endpoint in netmaster: %w", err)
	}
	phase.Mark(ctx, "netmaster")
	existed := false // netmaster answered with an endpoint made before
	defer func() {
		if err != nil && !existed {
			if _, derr := s.cfg.Master.DeleteEndpoint(undoCtx, masterclient.DeleteEndpointRequest{TenantName: req.Tenant,
				NetworkName: req.Network, ServiceName: req.Group, EndpointID: req.ContainerID}); derr != nil {
				s.log.WithError(derr).Warnf("roll back endpoint %s in netmaster; the sweep of orphaned endpoints retries", ep.ID)
			}
		}
	}()
	if ep.HomingHost != s.cfg.Host {
		// netmaster answered with an existing endpoint of another host:
		// it is not ours to take over or to roll back.
		existed = true
		return res, fmt.Errorf("endpoint %s is homed on host %q: %w", ep.ID, ep.HomingHost, attach.ErrAlreadyAttached)
	}
	if req.IPAddress != "" && ep.IPAddress != req.IPAddress {
		existed = true
		return res, fmt.Errorf("endpoint %s exists with address %s, not %s: %w", ep.ID, ep.IPAddress, req.IPAddress, attach.ErrAlreadyAttached)
	}
	nw, err := s.cfg.Cluster.Network(ctx, ep.NetID)
	if err != nil {
		return res, err
	}
	phase.Mark(ctx, "network")
	tMaster = time.Since(t0)
	le, err := s.addLocal(ctx, ep, nw, into, early)
	if err != nil {
		return res, err
	}
	tLocal = time.Since(t0) - tMaster
	res, err = s.describe(le, nw)
	phase.Mark(ctx, "describe")
	if err != nil {
		if rerr := s.RemoveLocal(undoCtx, ep.ID); rerr != nil {
			s.log.WithError(rerr).Warnf("roll back local endpoint %s", ep.ID)
		}
		return res, err
	}
	s.log.WithFields(map[string]any{"endpoint": ep.ID, "ip": res.IPAddress, "port": le.Port.PortName,
		"netmaster": tMaster.Round(time.Millisecond), "ovs": tLocal.Round(time.Millisecond),
		"total": time.Since(t0).Round(time.Millisecond)}).Info("endpoint attached")
	return res, nil
}

// describe is the attach.Result of a local endpoint; IfName is the
// container side of its veth in this namespace.
func (s *Service) describe(le *Local, nw state.Network) (attach.Result, error) {
	mtu := le.Port.MTU // the port's own; unknown for a port of an earlier run
	if mtu == 0 {
		var err error
		if mtu, err = ovsdriver.EndpointMTU(nil, nw.PktTagType == "vxlan"); err != nil {
			return attach.Result{}, fmt.Errorf("endpoint MTU: %w", err)
		}
	}
	res := attach.Result{EndpointID: le.EP.ID, MacAddress: le.EP.MacAddress, Gateway: nw.Gateway, MTU: mtu,
		PortName: le.Port.PortName, IfName: le.Port.IntfName}
	if le.EP.IPAddress != "" {
		res.IPAddress = fmt.Sprintf("%s/%d", le.EP.IPAddress, nw.SubnetLen)
	}
	if le.EP.IPv6Address != "" && nw.IPv6Subnet != "" {
		res.IPv6Address = fmt.Sprintf("%s/%d", le.EP.IPv6Address, nw.IPv6SubnetLen)
		res.IPv6Gateway = nw.IPv6Gateway
	}
	return res, nil
}

// Attached returns the endpoint of (tenant, network, containerID) if it is
// attached on this host (attach.HostAttacher).
func (s *Service) Attached(tenant, network, containerID string) (attach.Result, bool) {
	epID := state.EndpointID(tenant, network, containerID)
	le, ok := s.Get(epID)
	var nw state.Network
	if ok {
		nw, ok = s.cfg.Cluster.KnownNetwork(le.EP.NetID)
	}
	if !ok {
		return attach.Result{}, false
	}
	res, err := s.describe(&le, nw)
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
func (s *Service) Detach(ctx context.Context, req attach.DetachRequest) error {
	start := time.Now()
	err := s.detach(ctx, req)
	s.observe("detach", start, err)
	return err
}

func (s *Service) detach(ctx context.Context, req attach.DetachRequest) error {
	if req.Tenant == "" || req.Network == "" || req.ContainerID == "" {
		return fmt.Errorf("detach needs tenant, network and containerID (got %q, %q, %q)", req.Tenant, req.Network, req.ContainerID)
	}
	epID := state.EndpointID(req.Tenant, req.Network, req.ContainerID)
	// Pending while it is taken apart: the sweep of orphaned endpoints
	// must not delete it in netmaster meanwhile too.
	s.mu.Lock()
	_, busy := s.pending[epID]
	if !busy {
		s.pending[epID] = struct{}{}
	}
	s.mu.Unlock()
	if !busy {
		defer func() {
			s.mu.Lock()
			delete(s.pending, epID)
			s.mu.Unlock()
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
	if ep, err := s.cfg.Store.Endpoints.Read(ctx, epID); err == nil {
		group = ep.ServiceName
		if len(ep.Labels) > 0 {
			// Withdraw it from its services before its address goes away.
			if err := s.cfg.Master.UpdateEndpoint(ctx, masterclient.UpdateEndpointRequest{ContainerID: req.ContainerID,
				Event: "die"}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := s.RemoveLocal(ctx, epID); err != nil {
		errs = append(errs, err)
	} else {
		s.policyDetached(req) // its address may go to another pod
	}
	if _, err := s.cfg.Master.DeleteEndpoint(ctx, masterclient.DeleteEndpointRequest{TenantName: req.Tenant,
		NetworkName: req.Network, ServiceName: group, EndpointID: req.ContainerID}); err != nil && !endpointGone(err) {
		errs = append(errs, fmt.Errorf("delete endpoint %s in netmaster: %w", epID, err))
	}
	return errors.Join(errs...)
}

// BridgeFor is the bridge that carries a network's endpoints.
func BridgeFor(nw state.Network) string {
	if nw.PktTagType == "vxlan" {
		return ovsdriver.VxlanBridge
	}
	return ovsdriver.VlanBridge
}

func (s *Service) policyAttached(ctx context.Context, req attach.Request, cidr string) error {
	if s.cfg.Hooks.PolicyAttached == nil {
		return nil
	}
	return s.cfg.Hooks.PolicyAttached(ctx, req, cidr)
}

func (s *Service) policyDetached(req attach.DetachRequest) {
	if s.cfg.Hooks.PolicyDetached != nil {
		s.cfg.Hooks.PolicyDetached(req)
	}
}

var (
	_ attach.Attacher     = (*Service)(nil)
	_ attach.HostAttacher = (*Service)(nil)
)

// CheckAttachment verifies a CNI attachment: its endpoint is local to this
// host, and its interface is in the namespace, up, with its MAC and
// address.
func (s *Service) CheckAttachment(_ context.Context, ref k8splugin.AttachmentRef) error {
	epID := state.EndpointID(ref.Tenant, ref.Network, ref.ContainerID)
	if !s.Has(epID) {
		return fmt.Errorf("endpoint %s is not attached on this host", epID)
	}
	var addr *net.IPNet
	if ref.IPAddress != "" {
		ip, n, err := net.ParseCIDR(ref.IPAddress)
		if err != nil {
			return fmt.Errorf("recorded address %q: %w", ref.IPAddress, err)
		}
		addr = &net.IPNet{IP: ip, Mask: n.Mask}
	}
	var mac net.HardwareAddr
	if ref.MacAddress != "" {
		mac, _ = net.ParseMAC(ref.MacAddress)
	}
	return nsutil.CheckInNS(ref.NetNS, ref.IfName, addr, mac)
}

var _ k8splugin.Checker = (*Service)(nil)
