package master

import (
	"context"
	"errors"
	"strings"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/objdb"
)

// endpointCtl serves endpoint inspect (docs/rest-api.md §2.13).
type endpointCtl struct {
	contivmodel.NoopCallbacks[contivmodel.Endpoint]
	m *master
}

// Oper returns the first endpoint (in store order) whose id, container id
// or container name contains the requested id.
func (c endpointCtl) Oper(ctx context.Context, _ *contivmodel.Tx, obj *contivmodel.Endpoint) (any, error) {
	eps, err := c.m.allEndpoints(ctx)
	if err != nil {
		return nil, err
	}
	id := obj.Key
	for _, ep := range eps {
		if !strings.Contains(ep.ID, id) && !strings.Contains(ep.ContainerID, id) &&
			!strings.Contains(ep.EPCommonName, id) && !strings.Contains(ep.EndpointID, id) {
			continue
		}
		op := endpointOper(ep)
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
