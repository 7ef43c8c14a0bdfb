package dockernets

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// IPAMConfig is one address family's pool of a network.
type IPAMConfig struct {
	Subnet  string `json:"Subnet,omitempty"`
	Gateway string `json:"Gateway,omitempty"`
}

// IPAM is a network's address management.
type IPAM struct {
	Driver  string            `json:"Driver,omitempty"`
	Config  []IPAMConfig      `json:"Config"`
	Options map[string]string `json:"Options,omitempty"`
}

// CreateRequest is the body of POST /networks/create.
type CreateRequest struct {
	Name           string            `json:"Name"`
	CheckDuplicate bool              `json:"CheckDuplicate"`
	Driver         string            `json:"Driver"`
	EnableIPv6     bool              `json:"EnableIPv6"`
	IPAM           IPAM              `json:"IPAM"`
	Attachable     bool              `json:"Attachable"`
	Options        map[string]string `json:"Options,omitempty"`
}

// Network is what the engine reports about a network (the fields used here).
type Network struct {
	Name       string            `json:"Name"`
	ID         string            `json:"Id"`
	Driver     string            `json:"Driver"`
	Scope      string            `json:"Scope"`
	EnableIPv6 bool              `json:"EnableIPv6"`
	Attachable bool              `json:"Attachable"`
	IPAM       IPAM              `json:"IPAM"`
	Options    map[string]string `json:"Options"`
	Labels     map[string]string `json:"Labels"`
}

// DecodeNetworks parses a GET /networks answer.
func DecodeNetworks(data []byte) ([]Network, error) {
	var out []Network
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("dockernets: decode network list: %w", err)
	}
	return out, nil
}

// CreateNetwork creates a network and returns its ID.
func (c *Client) CreateNetwork(ctx context.Context, req CreateRequest) (string, error) {
	var resp struct {
		ID      string `json:"Id"`
		Warning string `json:"Warning"`
	}
	if err := c.versioned(ctx, http.MethodPost, "/networks/create", req, &resp); err != nil {
		return "", fmt.Errorf("create docker network %q: %w", req.Name, err)
	}
	if resp.ID == "" {
		return "", fmt.Errorf("create docker network %q: engine returned no id", req.Name)
	}
	return resp.ID, nil
}

// InspectNetwork reads a network by ID or name (ErrNotFound when absent).
func (c *Client) InspectNetwork(ctx context.Context, idOrName string) (Network, error) {
	var nw Network
	err := c.versioned(ctx, http.MethodGet, "/networks/"+escape(idOrName), nil, &nw)
	if isStatus(err, http.StatusNotFound) {
		return Network{}, fmt.Errorf("inspect docker network %q: %w", idOrName, ErrNotFound)
	}
	if err != nil {
		return Network{}, fmt.Errorf("inspect docker network %q: %w", idOrName, err)
	}
	return nw, nil
}

// ListNetworks lists the networks matching filters (name → values, as the
// engine's "filters" parameter; nil lists all).
func (c *Client) ListNetworks(ctx context.Context, filters map[string][]string) ([]Network, error) {
	path := "/networks"
	if len(filters) > 0 {
		f := map[string]map[string]bool{}
		for k, vs := range filters {
			f[k] = map[string]bool{}
			for _, v := range vs {
				f[k][v] = true
			}
		}
		b, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		path += "?filters=" + url.QueryEscape(string(b))
	}
	var raw json.RawMessage
	if err := c.versioned(ctx, http.MethodGet, path, nil, &raw); err != nil {
		return nil, fmt.Errorf("list docker networks: %w", err)
	}
	return DecodeNetworks(raw)
}

// FindNetwork returns the network named exactly name (the engine's name
// filter matches substrings; ErrNotFound when none).
func (c *Client) FindNetwork(ctx context.Context, name string) (Network, error) {
	list, err := c.ListNetworks(ctx, map[string][]string{"name": {name}})
	if err != nil {
		return Network{}, err
	}
	for _, nw := range list {
		if nw.Name == name {
			return nw, nil
		}
	}
	return Network{}, fmt.Errorf("find docker network %q: %w", name, ErrNotFound)
}

// RemoveNetwork deletes a network by ID or name (ErrNotFound when absent).
func (c *Client) RemoveNetwork(ctx context.Context, idOrName string) error {
	err := c.versioned(ctx, http.MethodDelete, "/networks/"+escape(idOrName), nil, nil)
	if isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("remove docker network %q: %w", idOrName, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("remove docker network %q: %w", idOrName, err)
	}
	return nil
}
