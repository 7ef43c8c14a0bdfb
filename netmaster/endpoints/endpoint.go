package endpoints

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// InspectCallbacks is the contivmodel controller of the endpoint kind:
// inspect only.
func (m *Service) InspectCallbacks() contivmodel.Callbacks[contivmodel.Endpoint] {
	return endpointCtl{m: m}
}

// endpointCtl serves endpoint inspect (docs/rest-api.md §2.13).
type endpointCtl struct {
	contivmodel.NoopCallbacks[contivmodel.Endpoint]
	m *Service
}

// Oper returns the first endpoint (in store order) whose id, container id
// or container name contains the requested id.
func (c endpointCtl) Oper(ctx context.Context, _ *contivmodel.Tx, obj *contivmodel.Endpoint) (any, error) {
	eps, err := c.m.AllEndpoints(ctx)
	if err != nil {
		return nil, err
	}
	id := obj.Key
	for _, ep := range eps {
		if !strings.Contains(ep.ID, id) && !strings.Contains(ep.ContainerID, id) &&
			!strings.Contains(ep.EPCommonName, id) && !strings.Contains(ep.EndpointID, id) {
			continue
		}
		op := Oper(ep)
		op.Key = id
		if oper, err := c.m.st.EndpointOper.Read(ctx, ep.ID); err == nil && oper.PortName != "" {
			op.VirtualPort = "v" + oper.PortName
		} else if err != nil && !errors.Is(err, objdb.ErrNotFound) {
			return nil, err
		}
		return &op, nil
	}
	return nil, contivmodel.NotFound(contivmodel.TypeEndpoint)
}

// Oper is the §2.0 view of an endpoint state.
func Oper(ep state.Endpoint) contivmodel.EndpointOper {
	op := contivmodel.EndpointOper{
		Network:          ep.NetID,
		EndpointID:       ep.EndpointID,
		ServiceName:      ep.ServiceName,
		EndpointGroupID:  ep.EndpointGroupID,
		EndpointGroupKey: ep.EndpointGroupKey,
		MacAddress:       ep.MacAddress,
		HomingHost:       ep.HomingHost,
		IntfName:         ep.IntfName,
		VtepIP:           ep.VtepIP,
		Labels:           fmt.Sprint(ep.Labels),
		ContainerID:      ep.ContainerID,
		ContainerName:    ep.EPCommonName,
	}
	if ep.IPAddress != "" || ep.IPv6Address != "" {
		op.IpAddress = []string{ep.IPAddress, ep.IPv6Address}
	}
	return op
}

// Opers is the §2.0 view of the endpoints of eps that keep selects (nil
// when none does).
func Opers(eps []state.Endpoint, keep func(ep state.Endpoint) bool) []contivmodel.EndpointOper {
	var out []contivmodel.EndpointOper
	for _, ep := range eps {
		if keep(ep) {
			out = append(out, Oper(ep))
		}
	}
	return out
}
