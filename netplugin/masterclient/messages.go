package masterclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/contiv/netplugin/state"
)

// Wire structs of docs/daemons.md §5.4. They carry no JSON tags: the keys are
// the Go field names, as netmaster expects.

// AllocAddressRequest is the /plugin/allocAddress request. NetworkID is
// "<net>.<tenant>" or "<net>:<group>.<tenant>"; when empty, AddressPool
// ("ip/len[:tenant]") selects the network.
type AllocAddressRequest struct {
	NetworkID            string
	AddressPool          string
	PreferredIPv4Address string
}

// AllocAddressResponse is its answer; IPv4Address is "ip/len" (an IPv6
// address when the pool is IPv6).
type AllocAddressResponse struct {
	NetworkID   string
	IPv4Address string
}

// ReleaseAddressRequest is the /plugin/releaseAddress request.
type ReleaseAddressRequest struct {
	NetworkID   string
	IPv4Address string
}

// ConfigEP is the endpoint part of a create request. Container becomes the
// endpoint id; ServiceName is the endpoint group.
type ConfigEP struct {
	Container   string
	Host        string
	IPAddress   string
	IPv6Address string
	ServiceName string
}

// CreateEndpointRequest is the /plugin/createEndpoint request.
type CreateEndpointRequest struct {
	TenantName   string
	NetworkName  string
	ServiceName  string
	EndpointID   string
	EPCommonName string
	ConfigEP     ConfigEP
}

// DeleteEndpointRequest is the /plugin/deleteEndpoint request; EndpointID
// is the container id the endpoint was created with.
type DeleteEndpointRequest struct {
	TenantName  string
	NetworkName string
	ServiceName string
	EndpointID  string
	IPv4Address string
}

// EndpointResponse answers createEndpoint and deleteEndpoint.
type EndpointResponse struct {
	EndpointConfig state.Endpoint
}

// CreateEndpoint asks netmaster to create (or return the existing)
// endpoint and allocate its addresses.
func (c *Client) CreateEndpoint(ctx context.Context, req CreateEndpointRequest) (state.Endpoint, error) {
	var resp EndpointResponse
	if err := c.Post(ctx, "createEndpoint", req, &resp); err != nil {
		return state.Endpoint{}, fmt.Errorf("create endpoint %q in network %s.%s: %w",
			req.ConfigEP.Container, req.NetworkName, req.TenantName, err)
	}
	return resp.EndpointConfig, nil
}

// DeleteEndpoint asks netmaster to delete the endpoint and release its
// addresses; it returns the deleted endpoint.
func (c *Client) DeleteEndpoint(ctx context.Context, req DeleteEndpointRequest) (state.Endpoint, error) {
	var resp EndpointResponse
	if err := c.Post(ctx, "deleteEndpoint", req, &resp); err != nil {
		return state.Endpoint{}, fmt.Errorf("delete endpoint %q in network %s.%s: %w",
			req.EndpointID, req.NetworkName, req.TenantName, err)
	}
	return resp.EndpointConfig, nil
}

// AllocAddress reserves an address.
func (c *Client) AllocAddress(ctx context.Context, req AllocAddressRequest) (AllocAddressResponse, error) {
	var resp AllocAddressResponse
	if err := c.Post(ctx, "allocAddress", req, &resp); err != nil {
		return AllocAddressResponse{}, fmt.Errorf("allocate address in %q (pool %q): %w", req.NetworkID, req.AddressPool, err)
	}
	return resp, nil
}

// ReleaseAddress gives an address back. Both reply shapes are accepted:
// {"Status":"success"} (ours, docs/daemons.md §5.4.2) and the original's bare
// JSON string "success".
func (c *Client) ReleaseAddress(ctx context.Context, req ReleaseAddressRequest) error {
	var raw json.RawMessage
	if err := c.Post(ctx, "releaseAddress", req, &raw); err != nil {
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

// UpdateEndpointRequest is the /plugin/updateEndpoint request: a container
// of a runtime started ("start") or ended ("die").
type UpdateEndpointRequest struct {
	IPAddress    string
	ContainerID  string
	Labels       map[string]string
	Tenant       string
	Network      string // the network's name, or the group's for a group network
	Event        string
	EndpointID   string
	EPCommonName string
}

// UpdateEndpoint tells netmaster about a container start or end: its id,
// name and labels go into its endpoint and make it a provider of matching
// services. A "die" of a container that provides no service is answered
// null, which is fine.
func (c *Client) UpdateEndpoint(ctx context.Context, req UpdateEndpointRequest) error {
	var raw json.RawMessage
	if err := c.Post(ctx, "updateEndpoint", req, &raw); err != nil {
		return fmt.Errorf("update endpoint of container %s (%s): %w", req.ContainerID, req.Event, err)
	}
	return nil
}
