package masterclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/contiv/netplugin/api/pluginapi"
	"github.com/contiv/netplugin/state"
)

// The wire structs of docs/daemons.md §5.4 live in api/pluginapi,
// shared with netmaster; these names keep this package's callers short.
type (
	AllocAddressRequest   = pluginapi.AddressAllocRequest
	AllocAddressResponse  = pluginapi.AddressAllocResponse
	ReleaseAddressRequest = pluginapi.AddressReleaseRequest
	ConfigEP              = pluginapi.ConfigEP
	CreateEndpointRequest = pluginapi.CreateEndpointRequest
	DeleteEndpointRequest = pluginapi.DeleteEndpointRequest
	EndpointResponse      = pluginapi.EndpointResponse
	UpdateEndpointRequest = pluginapi.UpdateEndpointRequest
)

// CreateEndpoint asks netmaster to create (or return the existing)
// endpoint and allocate its addresses.
func (c *Client) CreateEndpoint(ctx context.Context, req CreateEndpointRequest) (state.Endpoint, error) {
	var resp EndpointResponse
	if err := c.Post(ctx, pluginapi.PathCreateEndpoint, req, &resp); err != nil {
		return state.Endpoint{}, fmt.Errorf("create endpoint %q in network %s.%s: %w",
			req.ConfigEP.Container, req.NetworkName, req.TenantName, err)
	}
	return resp.EndpointConfig, nil
}

// DeleteEndpoint asks netmaster to delete the endpoint and release its
// addresses; it returns the deleted endpoint.
func (c *Client) DeleteEndpoint(ctx context.Context, req DeleteEndpointRequest) (state.Endpoint, error) {
	var resp EndpointResponse
	if err := c.Post(ctx, pluginapi.PathDeleteEndpoint, req, &resp); err != nil {
		return state.Endpoint{}, fmt.Errorf("delete endpoint %q in network %s.%s: %w",
			req.EndpointID, req.NetworkName, req.TenantName, err)
	}
	return resp.EndpointConfig, nil
}

// AllocAddress reserves an address.
func (c *Client) AllocAddress(ctx context.Context, req AllocAddressRequest) (AllocAddressResponse, error) {
	var resp AllocAddressResponse
	if err := c.Post(ctx, pluginapi.PathAllocAddress, req, &resp); err != nil {
		return AllocAddressResponse{}, fmt.Errorf("allocate address in %q (pool %q): %w", req.NetworkID, req.AddressPool, err)
	}
	return resp, nil
}

// ReleaseAddress gives an address back. Both reply shapes are accepted:
// {"Status":"success"} (ours, docs/daemons.md §5.4.2) and the original's bare
// JSON string "success".
func (c *Client) ReleaseAddress(ctx context.Context, req ReleaseAddressRequest) error {
	var raw json.RawMessage
	if err := c.Post(ctx, pluginapi.PathReleaseAddress, req, &raw); err != nil {
		return fmt.Errorf("release address %s in %q: %w", req.IPv4Address, req.NetworkID, err)
	}
	if err := checkReleaseReply(raw); err != nil {
		return fmt.Errorf("release address %s in %q: %w", req.IPv4Address, req.NetworkID, err)
	}
	return nil
}

func checkReleaseReply(raw json.RawMessage) error {
	status := ""
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
		if err := json.Unmarshal(raw, &status); err != nil {
			return fmt.Errorf("decode reply %s: %w", raw, err)
		}
	} else {
		var obj struct{ Status string }
		if err := json.Unmarshal(raw, &obj); err != nil {
			return fmt.Errorf("decode reply %s: %w", raw, err)
		}
		status = obj.Status
	}
	if status != "success" {
		return fmt.Errorf("unexpected reply %s", raw)
	}
	return nil
}

// UpdateEndpoint tells netmaster about a container start or end: its id,
// name and labels go into its endpoint and make it a provider of matching
// services. A "die" of a container that provides no service is answered
// null, which is fine.
func (c *Client) UpdateEndpoint(ctx context.Context, req UpdateEndpointRequest) error {
	var raw json.RawMessage
	if err := c.Post(ctx, pluginapi.PathUpdateEndpoint, req, &raw); err != nil {
		return fmt.Errorf("update endpoint of container %s (%s): %w", req.ContainerID, req.Event, err)
	}
	return nil
}
