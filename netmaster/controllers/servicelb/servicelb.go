// Package servicelb is the contivmodel controller of the service load
// balancer kind of one netmaster leadership term and its debug views
// (docs/rest-api.md §2.11, §3.8; docs/daemons.md §4.12). The running
// services, their VIPs and providers are netmaster/svclb.
package servicelb

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/endpoints"
	"github.com/contiv/netplugin/netmaster/svclb"
	"github.com/contiv/netplugin/state"
)

// Controller is the service load balancer controller of a term.
type Controller struct {
	st    *state.Store
	svcLB *svclb.Cache
	log   *logrus.Entry
}

// New returns the controller over the term's state and its service load
// balancer; failed debug views are logged to log.
func New(st *state.Store, lb *svclb.Cache, log *logrus.Entry) *Controller {
	return &Controller{st: st, svcLB: lb, log: log}
}

// Callbacks is the controller of the serviceLB kind.
func (m *Controller) Callbacks() contivmodel.Callbacks[contivmodel.ServiceLB] { return serviceLBCtl{m} }

// modelKey is the model key of a tenant's object.
func modelKey(tenant, name string) string { return tenant + ":" + name }

// serviceLBCtl is the serviceLB controller (docs/rest-api.md §2.11,
// docs/daemons.md §4.12). Every refusal is decided before the first side
// effect; the side effects (VIP, service record, provider list, cache) are
// undone when the model commit fails.
type serviceLBCtl struct{ m *Controller }

const msgBadPorts = "Invalid Port maping . Port format is - Port:TargetPort:Protocol"

// validPort checks one "<servicePort>:<targetPort>:<protocol>" entry.
func validPort(p string) bool {
	parts := strings.Split(p, ":")
	if len(parts) != 3 {
		return false
	}
	for _, n := range parts[:2] {
		if n == "" || strings.TrimLeft(n, "0123456789") != "" {
			return false
		}
		if v, err := strconv.Atoi(n); err != nil || v < 1 || v > 65535 {
			return false
		}
	}
	switch parts[2] {
	case "TCP", "tcp", "Tcp", "UDP", "udp", "Udp":
		return true
	}
	return false
}

// parseSelectors turns "key=value" entries into a map.
func parseSelectors(sel []string) (map[string]string, error) {
	out := make(map[string]string, len(sel))
	for _, s := range sel {
		if strings.Count(s, "=") != 1 {
			return nil, contivmodel.Invalidf("Invalid selector %s. selector format is key1=value1", s)
		}
		k, v, _ := strings.Cut(s, "=")
		out[k] = v
	}
	return out, nil
}

// checkService runs the create refusals of §2.11 in order and returns the
// parsed selectors.
func checkService(tx *contivmodel.Tx, s *contivmodel.ServiceLB) (map[string]string, error) {
	if s.ServiceName == "" {
		return nil, contivmodel.Invalidf("Invalid service name")
	}
	if len(s.Selectors) == 0 {
		return nil, contivmodel.Invalidf("Invalid selector options")
	}
	if len(s.Ports) == 0 {
		return nil, contivmodel.Invalidf(msgBadPorts)
	}
	for _, p := range s.Ports {
		if !validPort(p) {
			return nil, contivmodel.Invalidf(msgBadPorts)
		}
	}
	if s.TenantName == "" {
		return nil, contivmodel.Invalidf("Invalid tenant name")
	}
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, s.TenantName); err != nil {
		return nil, err
	} else if !ok {
		return nil, contivmodel.Missingf("Tenant %s not found", s.TenantName)
	}
	if ok, err := contivmodel.Exists[contivmodel.Network](tx, modelKey(s.TenantName, s.NetworkName)); err != nil {
		return nil, err
	} else if !ok {
		return nil, contivmodel.Missingf("Network %s not found", s.NetworkName)
	}
	return parseSelectors(s.Selectors)
}

// Create validates the request, sets up the service (VIP, record,
// providers) and links it to its tenant and network.
func (c serviceLBCtl) Create(ctx context.Context, tx *contivmodel.Tx, s *contivmodel.ServiceLB) error {
	sel, err := checkService(tx, s)
	if err != nil {
		return err
	}
	if err := c.m.svcLB.Apply(ctx, tx, s, sel); err != nil {
		return err
	}
	s.Links.Tenant = contivmodel.NewLink(contivmodel.TypeTenant, s.TenantName)
	return c.link(tx, s)
}

// link sets the network link and adds the service to the tenant's and
// the network's Servicelbs.
func (serviceLBCtl) link(tx *contivmodel.Tx, s *contivmodel.ServiceLB) error {
	netKey := modelKey(s.TenantName, s.NetworkName)
	s.Links.Network = contivmodel.NewLink(contivmodel.TypeNetwork, netKey)
	self := contivmodel.NewLink(contivmodel.TypeServiceLB, s.Key)
	if err := contivmodel.Modify(tx, s.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.Servicelbs.Add(self)
		return nil
	}); err != nil {
		return err
	}
	return contivmodel.Modify(tx, netKey, func(n *contivmodel.Network) error {
		n.LinkSets.Servicelbs.Add(self)
		return nil
	})
}

// Update runs the create logic with the request; a changed network moves
// the links. The stored config fields are then replaced by the request's.
func (c serviceLBCtl) Update(ctx context.Context, tx *contivmodel.Tx, stored, req *contivmodel.ServiceLB) error {
	sel, err := checkService(tx, req)
	if err != nil {
		return err
	}
	if err := c.m.svcLB.Apply(ctx, tx, req, sel); err != nil {
		return err
	}
	if stored.NetworkName != req.NetworkName {
		oldNet := modelKey(stored.TenantName, stored.NetworkName)
		if ok, err := contivmodel.Exists[contivmodel.Network](tx, oldNet); err != nil {
			return err
		} else if ok {
			if err := contivmodel.Modify(tx, oldNet, func(n *contivmodel.Network) error {
				n.LinkSets.Servicelbs.Remove(stored.Key)
				return nil
			}); err != nil {
				return err
			}
		}
	}
	contivmodel.CopyConfig(stored, req)
	stored.Links.Tenant = contivmodel.NewLink(contivmodel.TypeTenant, stored.TenantName)
	return c.link(tx, stored)
}

// Delete releases the VIP, withdraws the providers and removes the
// service record and links.
func (c serviceLBCtl) Delete(ctx context.Context, tx *contivmodel.Tx, s *contivmodel.ServiceLB) error {
	m := c.m
	id := svclb.ID(s.TenantName, s.ServiceName)
	if _, err := m.st.ServiceLBs.Read(ctx, id); err != nil {
		return apierr.Store("read service state "+id, err)
	}
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, s.TenantName); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Tenant %s not found", s.TenantName)
	}
	netKey := modelKey(s.TenantName, s.NetworkName)
	if ok, err := contivmodel.Exists[contivmodel.Network](tx, netKey); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Network %s not found in tenant %s", s.NetworkName, s.TenantName)
	}
	if err := m.svcLB.Remove(ctx, tx, id); err != nil {
		return err
	}
	if err := contivmodel.Modify(tx, s.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.Servicelbs.Remove(s.Key)
		return nil
	}); err != nil {
		return err
	}
	return contivmodel.Modify(tx, netKey, func(n *contivmodel.Network) error {
		n.LinkSets.Servicelbs.Remove(s.Key)
		return nil
	})
}

// Oper reports the VIP and the providers from the runtime record.
func (c serviceLBCtl) Oper(ctx context.Context, _ *contivmodel.Tx, s *contivmodel.ServiceLB) (any, error) {
	m := c.m
	svc, ok := m.svcLB.Get(svclb.ID(s.TenantName, s.ServiceName))
	if !ok {
		return nil, contivmodel.Errorf("invalid Service name. Oper state does not exist")
	}
	op := &contivmodel.ServiceLBOper{ServiceVip: svc.IPAddress, NumProviders: len(svc.Providers)}
	keys := make([]string, 0, len(svc.Providers))
	for k := range svc.Providers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := svc.Providers[k]
		var eo contivmodel.EndpointOper
		if ep, err := m.st.Endpoints.Read(ctx, p.EpIDKey); err == nil {
			eo = endpoints.Oper(ep)
		} else {
			eo = contivmodel.EndpointOper{IpAddress: []string{p.IPAddress, ""}, ContainerID: p.ContainerID,
				Labels: fmt.Sprint(p.Labels)}
		}
		eo.ServiceName = s.ServiceName
		op.Providers = append(op.Providers, eo)
	}
	return op, nil
}
