// Package dockplugin is netplugin's Docker front end: a libnetwork remote
// network driver and IPAM driver served on a unix socket in Docker's
// plugin directory (docs/docker.md). It translates each request into the
// agent's attach API (attach.HostAttacher) and netmaster's address API and
// back; it holds no dataplane logic of its own.
package dockplugin

import (
	"encoding/json"
	"net/netip"
)

// Content type of every answer (the plugin protocol's v1 JSON).
const contentType = "application/vnd.docker.plugins.v1+json"

// Request and answer bodies of the libnetwork remote driver protocol, with
// the protocol's own (Go field) member names.

// IPAMData is one address pool of a network as the engine describes it.
type IPAMData struct {
	AddressSpace string
	Pool         string
	Gateway      string
	AuxAddresses map[string]string
}

// CreateNetworkRequest is /NetworkDriver.CreateNetwork.
type CreateNetworkRequest struct {
	NetworkID string
	Options   map[string]any
	IPv4Data  []IPAMData
	IPv6Data  []IPAMData
}

// NetworkRequest is the body of the calls that name only a network
// (DeleteNetwork, FreeNetwork).
type NetworkRequest struct {
	NetworkID string
}

// AllocateNetworkRequest is /NetworkDriver.AllocateNetwork (swarm).
type AllocateNetworkRequest struct {
	NetworkID string
	Options   map[string]string
	IPv4Data  []IPAMData
	IPv6Data  []IPAMData
}

// AllocateNetworkResponse echoes the options.
type AllocateNetworkResponse struct {
	Options map[string]string `json:"Options"`
}

// EndpointInterface is an endpoint's addresses ("ip/len") and MAC.
type EndpointInterface struct {
	Address     string
	AddressIPv6 string
	MacAddress  string
}

// CreateEndpointRequest is /NetworkDriver.CreateEndpoint.
type CreateEndpointRequest struct {
	NetworkID  string
	EndpointID string
	Interface  *EndpointInterface
	Options    map[string]any

	// Set by validate from Interface: the addresses without their
	// prefix length (zero when not given).
	addr4, addr6 netip.Addr
}

// CreateEndpointResponse gives back what the driver chose; members the
// engine set already stay empty.
type CreateEndpointResponse struct {
	Interface *EndpointInterface `json:"Interface,omitempty"`
}

// EndpointRequest is the body of the calls that name a network and an
// endpoint (DeleteEndpoint, EndpointOperInfo, Leave, Program/Revoke
// ExternalConnectivity).
type EndpointRequest struct {
	NetworkID  string
	EndpointID string
	Options    map[string]any `json:",omitempty"`
}

// EndpointInfoResponse is /NetworkDriver.EndpointOperInfo.
type EndpointInfoResponse struct {
	Value map[string]any `json:"Value"`
}

// JoinRequest is /NetworkDriver.Join.
type JoinRequest struct {
	NetworkID  string
	EndpointID string
	SandboxKey string
	Options    map[string]any
}

// InterfaceName names the link the engine moves into the sandbox.
type InterfaceName struct {
	SrcName   string
	DstPrefix string
}

// JoinResponse is the /NetworkDriver.Join answer.
type JoinResponse struct {
	InterfaceName         *InterfaceName `json:"InterfaceName"`
	Gateway               string         `json:"Gateway"`
	GatewayIPv6           string         `json:"GatewayIPv6"`
	StaticRoutes          []any          `json:"StaticRoutes"`
	DisableGatewayService bool           `json:"DisableGatewayService"`
}

// DiscoveryNotification is /NetworkDriver.DiscoverNew and DiscoverDelete.
type DiscoveryNotification struct {
	DiscoveryType int
	DiscoveryData json.RawMessage
}

// NetworkCapabilities is /NetworkDriver.GetCapabilities.
type NetworkCapabilities struct {
	Scope             string `json:"Scope"`
	ConnectivityScope string `json:"ConnectivityScope"`
}

// IpamCapabilities is /IpamDriver.GetCapabilities.
type IpamCapabilities struct {
	RequiresMACAddress    bool `json:"RequiresMACAddress"`
	RequiresRequestReplay bool `json:"RequiresRequestReplay"`
}

// AddressSpaces is /IpamDriver.GetDefaultAddressSpaces.
type AddressSpaces struct {
	LocalDefaultAddressSpace  string `json:"LocalDefaultAddressSpace"`
	GlobalDefaultAddressSpace string `json:"GlobalDefaultAddressSpace"`
}

// RequestPoolRequest is /IpamDriver.RequestPool.
type RequestPoolRequest struct {
	AddressSpace string
	Pool         string
	SubPool      string
	Options      map[string]string
	V6           bool

	pool netip.Prefix // Pool, set by validate (zero when not given)
}

// RequestPoolResponse is the /IpamDriver.RequestPool answer.
type RequestPoolResponse struct {
	PoolID string            `json:"PoolID"`
	Pool   string            `json:"Pool"`
	Data   map[string]string `json:"Data"`
}

// PoolRequest is /IpamDriver.ReleasePool.
type PoolRequest struct {
	PoolID string
}

// RequestAddressRequest is /IpamDriver.RequestAddress.
type RequestAddressRequest struct {
	PoolID  string
	Address string
	Options map[string]string

	// Set by validate: the parsed PoolID and Address (zero when not given).
	pool poolID
	addr netip.Addr
}

// RequestAddressResponse is the /IpamDriver.RequestAddress answer.
type RequestAddressResponse struct {
	Address string            `json:"Address"`
	Data    map[string]string `json:"Data"`
}

// ReleaseAddressRequest is /IpamDriver.ReleaseAddress.
type ReleaseAddressRequest struct {
	PoolID  string
	Address string

	// Set by validate: the parsed PoolID and Address.
	pool poolID
	addr netip.Addr
}

// ActivateResponse is /Plugin.Activate.
type ActivateResponse struct {
	Implements []string `json:"Implements"`
}

// errorBody is every refusal: the network driver protocol reads "Err",
// the IPAM protocol "Error"; both carry the message (docs/docker.md).
type errorBody struct {
	Err   string `json:"Err"`
	Error string `json:"Error,omitempty"`
}
