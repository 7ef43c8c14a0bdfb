package endpoints

import (
	"strings"

	"github.com/contiv/netplugin/api/pluginapi"
	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/state"
)

// Validation of /plugin/* request fields. Every refusal is a 400 naming
// the field (docs/rest-errors.md) and comes before any side effect.

// required returns a 400 naming the first of the (name, value) pairs
// whose value is empty.
func required(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.TrimSpace(pairs[i+1]) == "" {
			return contivmodel.Invalidf("%s is required", pairs[i])
		}
	}
	return nil
}

// checkCreateEndpoint checks a /plugin/createEndpoint request before any
// store access: the network and the container are named. An endpoint
// without ConfigEP.Container would get the unscoped id
// "<host>-native-intf", which deleteEndpoint cannot address; no agent
// sends one (docs/rest-errors.md).
func checkCreateEndpoint(req *pluginapi.CreateEndpointRequest) error {
	return required("TenantName", req.TenantName, "NetworkName", req.NetworkName, "ConfigEP.Container", req.ConfigEP.Container)
}

// checkGroupNetwork refuses an endpoint whose group (ConfigEP.ServiceName)
// belongs to another network than the request's.
func checkGroupNetwork(req *pluginapi.CreateEndpointRequest, gs state.EndpointGroup) error {
	if gs.NetworkName != req.NetworkName {
		return contivmodel.Invalidf("ConfigEP.ServiceName: group %s of tenant %s belongs to network %s, not %s",
			req.ConfigEP.ServiceName, req.TenantName, gs.NetworkName, req.NetworkName)
	}
	return nil
}

// checkAllocAddress checks an /plugin/allocAddress request: a network id,
// or else a well-formed address pool.
func checkAllocAddress(req *pluginapi.AddressAllocRequest) error {
	if req.NetworkID != "" {
		return nil
	}
	if req.AddressPool == "" {
		return contivmodel.Invalidf("NetworkID or AddressPool is required")
	}
	if _, _, ok := parseAddressPool(req.AddressPool); !ok {
		return contivmodel.Invalidf("AddressPool %q is not <subnet>/<length> or <subnet>/<length>:<tenant>", req.AddressPool)
	}
	return nil
}
