// Package pluginapi holds the request and response bodies of netmaster's
// /plugin/* HTTP API (docs/rest-api.md §3, docs/daemons.md §5.4), shared by
// the server side (netmaster) and the client side (netplugin/masterclient).
//
// The structs carry no JSON tags: the keys on the wire are the Go field
// names, as the original's agents send them. Renaming a field changes the
// wire format; wire_test.go pins every key. The type names show in
// netmaster's 400 answers to a malformed body ("Go struct field
// AddressAllocRequest.NetworkID"), so they stay as they are too.
package pluginapi

import "github.com/contiv/netplugin/state"

// Paths of the /plugin/* routes.
const (
	PathAllocAddress   = "/plugin/allocAddress"
	PathReleaseAddress = "/plugin/releaseAddress"
	PathCreateEndpoint = "/plugin/createEndpoint"
	PathDeleteEndpoint = "/plugin/deleteEndpoint"
	PathUpdateEndpoint = "/plugin/updateEndpoint"
)

// AddressAllocRequest is the /plugin/allocAddress request. NetworkID is
// "<net>.<tenant>" or "<net>:<group>.<tenant>"; when empty, AddressPool
// ("ip/len[:tenant]") selects the network.
type AddressAllocRequest struct {
	NetworkID            string
	AddressPool          string
	PreferredIPv4Address string
}

// AddressAllocResponse is the /plugin/allocAddress answer; IPv4Address is
// "ip/len" (an IPv6 address when the pool is IPv6).
type AddressAllocResponse struct {
	NetworkID   string
	IPv4Address string
}

// AddressReleaseRequest is the /plugin/releaseAddress request.
type AddressReleaseRequest struct {
	NetworkID   string
	IPv4Address string
}

// AddressReleaseResponse is the /plugin/releaseAddress answer
// (docs/daemons.md §5.4.2, §10 #5: an object the agent can decode).
type AddressReleaseResponse struct {
	Status string
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

// UpdateEndpointResponse is the /plugin/updateEndpoint answer.
type UpdateEndpointResponse struct {
	IPAddress string
}
