package ofrpc

// The "Netplugin" service: what netmaster asks of a host's netplugin,
// served next to OfnetAgent on the VXLAN agent's port (9002) and so behind
// the same mutual TLS, which admits master certificates only
// (docs/security.md, "Listeners").
const (
	ServiceNetplugin = "Netplugin"

	// NetpluginReclaimEndpoint removes a local endpoint netmaster deleted
	// from the store (epcleanup); the agent refuses while the store still
	// holds it.
	NetpluginReclaimEndpoint = ServiceNetplugin + ".ReclaimEndpoint"
	// NetpluginTrace runs a packet trace (the inspect server's
	// /inspect/trace query).
	NetpluginTrace = ServiceNetplugin + ".Trace"
	// NetpluginBgp returns the BGP state (/inspect/bgp).
	NetpluginBgp = ServiceNetplugin + ".Bgp"
)

// ReclaimArgs names the endpoint to reclaim.
type ReclaimArgs struct {
	EndpointID string
}

// TraceArgs is a trace question: the URL query of /inspect/trace
// (endpoint, dst, proto, port).
type TraceArgs struct {
	Query string
}

// HTTPAnswer carries what the inspect server would have answered.
type HTTPAnswer struct {
	Status      int
	ContentType string
	Body        []byte
}
