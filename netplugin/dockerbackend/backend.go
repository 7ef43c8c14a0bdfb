// Package dockerbackend is netplugin's side of the Docker network and IPAM
// drivers (docs/docker.md): the Backend the driver calls (attaches, netmaster's
// address and network calls, the store's state) and the Sync that keeps the
// local engine's docker networks in step with netmaster's docker network
// mappings.
package dockerbackend

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/mgmtfn/dockplugin"
	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// Backend is the agent as the Docker driver sees it (dockplugin.Backend).
type Backend struct {
	Attach attach.HostAttacher // the attach service
	Master *masterclient.Client
	Store  *state.Store
}

// AttachHost: see dockplugin.Backend.
func (b Backend) AttachHost(ctx context.Context, req attach.HostRequest) (attach.Result, error) {
	return b.Attach.AttachHost(ctx, req)
}

// Detach: see dockplugin.Backend.
func (b Backend) Detach(ctx context.Context, req attach.DetachRequest) error {
	return b.Attach.Detach(ctx, req)
}

// Attached: see dockplugin.Backend.
func (b Backend) Attached(tenant, network, containerID string) (attach.Result, bool) {
	return b.Attach.Attached(tenant, network, containerID)
}

// AllocAddress: see dockplugin.Backend.
func (b Backend) AllocAddress(ctx context.Context, networkID, pool, preferred string) (string, error) {
	resp, err := b.Master.AllocAddress(ctx, masterclient.AllocAddressRequest{NetworkID: networkID, AddressPool: pool,
		PreferredIPv4Address: preferred})
	return resp.IPv4Address, err
}

// ReleaseAddress: see dockplugin.Backend.
func (b Backend) ReleaseAddress(ctx context.Context, networkID, addr string) error {
	return b.Master.ReleaseAddress(ctx, masterclient.ReleaseAddressRequest{NetworkID: networkID, IPv4Address: addr})
}

// MapNetwork records a swarm docker network's mapping (spec key
// oper/docknet/<tenant>.<network>.<group>).
func (b Backend) MapNetwork(ctx context.Context, dockerID, tenant, network, group string) error {
	id := dockernets.StateID(tenant, network, group)
	_, err := b.Store.Docknets.Write(ctx, state.Docknet{Common: state.Common{ID: id}, TenantName: tenant,
		NetworkName: network, ServiceName: group, DocknetUUID: dockerID})
	return err
}

// UnmapNetwork deletes the mapping of a swarm docker network.
func (b Backend) UnmapNetwork(ctx context.Context, dockerID string) error {
	all, _, err := b.Store.Docknets.ReadAll(ctx)
	if err != nil {
		return err
	}
	for _, dn := range all {
		if dn.DocknetUUID == dockerID {
			return b.Store.Docknets.Clear(ctx, dn.ID)
		}
	}
	return fmt.Errorf("mapping of docker network %s: %w", dockerID, dockplugin.ErrNotFound)
}

// CreateNetwork creates a contiv network through netmaster's REST API.
func (b Backend) CreateNetwork(ctx context.Context, s dockplugin.SwarmNetwork) error {
	body := map[string]any{"tenantName": s.Tenant, "networkName": s.Name, "subnet": s.Subnet, "encap": "vxlan"}
	for k, v := range map[string]string{"gateway": s.Gateway, "ipv6Subnet": s.IPv6Subnet, "ipv6Gateway": s.IPv6Gateway} {
		if v != "" {
			body[k] = v
		}
	}
	return b.Master.Do(ctx, http.MethodPost, "/api/v1/networks/"+s.Tenant+":"+s.Name+"/", body, nil)
}

// DeleteNetwork deletes a contiv network through netmaster's REST API.
func (b Backend) DeleteNetwork(ctx context.Context, tenant, name string) error {
	return b.Master.Do(ctx, http.MethodDelete, "/api/v1/networks/"+tenant+":"+name+"/", nil, nil)
}

// ContainerEvent passes a container start or end to netmaster.
func (b Backend) ContainerEvent(ctx context.Context, ev dockplugin.ContainerEvent) error {
	return b.Master.UpdateEndpoint(ctx, masterclient.UpdateEndpointRequest{IPAddress: ev.IPAddress, ContainerID: ev.ContainerID,
		Labels: ev.Labels, Tenant: ev.Tenant, Network: ev.Network, Event: ev.Event, EndpointID: ev.EndpointID,
		EPCommonName: ev.Name})
}

func notFound(err error) error {
	if errors.Is(err, objdb.ErrNotFound) {
		return fmt.Errorf("%w: %w", dockplugin.ErrNotFound, err)
	}
	return err
}

// Network: see dockplugin.Backend.
func (b Backend) Network(ctx context.Context, id string) (state.Network, error) {
	nw, err := b.Store.Networks.Read(ctx, id)
	return nw, notFound(err)
}

// Group: see dockplugin.Backend.
func (b Backend) Group(ctx context.Context, id string) (state.EndpointGroup, error) {
	g, err := b.Store.EndpointGroups.Read(ctx, id)
	return g, notFound(err)
}

// Networks: see dockplugin.Backend.
func (b Backend) Networks(ctx context.Context) ([]state.Network, error) {
	all, _, err := b.Store.Networks.ReadAll(ctx)
	return all, err
}

// Groups: see dockplugin.Backend.
func (b Backend) Groups(ctx context.Context) ([]state.EndpointGroup, error) {
	all, _, err := b.Store.EndpointGroups.ReadAll(ctx)
	return all, err
}

// Docknets: see dockplugin.Backend.
func (b Backend) Docknets(ctx context.Context) ([]state.Docknet, error) {
	all, _, err := b.Store.Docknets.ReadAll(ctx)
	return all, err
}

var _ dockplugin.Backend = Backend{}
