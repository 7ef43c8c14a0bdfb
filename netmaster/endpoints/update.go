package endpoints

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/contiv/netplugin/api/pluginapi"
	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/svclb"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// updateEndpoint handles container start/stop notifications (spec
// docs/rest-api.md §3.5, docs/daemons.md §4.12): a started container's labels, id
// and name go into its endpoint and it becomes a provider of the matching
// services; a "die" withdraws it ("null" for a container never started).
func (m *Service) updateEndpoint(ctx context.Context, req *pluginapi.UpdateEndpointRequest) (*pluginapi.UpdateEndpointResponse, error) {
	resp := &pluginapi.UpdateEndpointResponse{IPAddress: req.IPAddress}
	switch req.Event {
	case "start":
		netID := state.NetworkID(req.Tenant, req.Network)
		if _, err := m.st.Networks.Read(ctx, netID); errors.Is(err, objdb.ErrNotFound) {
			epgID := state.GroupID(req.Tenant, req.Network)
			gs, err := m.st.EndpointGroups.Read(ctx, epgID)
			if err != nil {
				return nil, apierr.Store("read group state "+epgID, err)
			}
			netID = state.NetworkID(req.Tenant, gs.NetworkName)
		} else if err != nil {
			return nil, fmt.Errorf("read network state %q: %w", netID, err)
		}
		epID := state.EndpointIDOnNetwork(netID, req.EndpointID)
		ep, err := m.st.Endpoints.Update(ctx, epID, func(ep *state.Endpoint) error {
			if ep.Labels == nil && len(req.Labels) > 0 {
				ep.Labels = map[string]string{}
			}
			for k, v := range req.Labels {
				ep.Labels[k] = v
			}
			ep.ContainerID, ep.EPCommonName = req.ContainerID, req.EPCommonName
			return nil
		})
		if err != nil {
			return nil, apierr.Store("update endpoint "+epID, err)
		}
		if req.ContainerID == "" {
			b, _ := json.Marshal(req)
			return nil, contivmodel.Invalidf("invalid ProviderID from providerInfo:%s", b)
		}
		if err := m.svcLB.Start(ctx, svclb.StartedProvider(req, ep)); err != nil {
			return nil, err
		}
		return resp, nil
	case "die":
		if req.ContainerID == "" {
			return nil, contivmodel.Invalidf("invalid containerID in UpdateEndpointRequest:(nil)")
		}
		if known, err := m.svcLB.Die(ctx, req.ContainerID); err != nil || !known {
			return nil, err
		}
		return resp, nil
	}
	return resp, nil
}
