// Package attach is netplugin's endpoint attach API: the request and result
// types the CNI and Docker front ends exchange with the agent, an HTTP
// handler serving them over a unix socket, and its client. It is a contract
// package (docs/architecture.md, "Dependency direction"): the front ends
// under mgmtfn/ and netplugin both import it, neither imports the other's
// internals.
//
// The agent implements Attacher (create the endpoint in netmaster, plumb
// the OVS port and flows, move the link into the container). This package
// only carries requests to it: it decodes and validates them, answers 400
// for a bad request naming the field at fault, 500 when the Attacher
// fails, and the Result as JSON on success.
package attach

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"unicode"

	"github.com/contiv/netplugin/utils/jsonreq"
)

// DefaultIfName is the container interface name when a request gives none.
const DefaultIfName = "eth0"

// Limits of request fields.
const (
	maxIfNameLen = 15 // IFNAMSIZ minus the NUL
	maxIDLen     = 255
	maxPathLen   = 4096
)

// ErrInvalidRequest: the request is malformed or a field is invalid. Every
// validation and decoding error wraps it (the front ends' shared sentinel).
var ErrInvalidRequest = jsonreq.ErrInvalidRequest

// FieldError names the request field (by its JSON key) that is invalid.
type FieldError = jsonreq.FieldError

// Request asks for a container's endpoint on a network.
type Request struct {
	Tenant      string `json:"tenant"`
	Network     string `json:"network"`
	Group       string `json:"group,omitempty"`
	ContainerID string `json:"containerID"`    // unique per container; becomes the endpoint id
	Name        string `json:"name,omitempty"` // EPCommonName (e.g. the pod name)
	NetNS       string `json:"netns"`          // the container's netns path
	IfName      string `json:"ifName,omitempty"`
	// Labels are the container's labels: a container whose labels include a
	// service's selectors becomes one of its providers (docs/services.md).
	Labels map[string]string `json:"labels,omitempty"`
	// PodNamespace and PodName name the Kubernetes pod (the CNI front end):
	// NetworkPolicy counts the pod under its new address before its
	// interface exists (docs/k8s.md, "NetworkPolicy").
	PodNamespace string `json:"podNamespace,omitempty"`
	PodName      string `json:"podName,omitempty"`
}

// maxLabels bounds a request's label map.
const maxLabels = 64

// Result describes the attached endpoint. Addresses are "ip/len".
type Result struct {
	EndpointID  string `json:"endpointID"`
	IPAddress   string `json:"ipAddress"`
	IPv6Address string `json:"ipv6Address,omitempty"`
	MacAddress  string `json:"macAddress"`
	Gateway     string `json:"gateway,omitempty"`
	IPv6Gateway string `json:"ipv6Gateway,omitempty"`
	MTU         int    `json:"mtu"`
	PortName    string `json:"portName"` // the OVS port
	IfName      string `json:"ifName"`   // the interface in the container
}

// DetachRequest removes a container's endpoint. NetNS may be empty (or
// name a namespace already gone): only the link removal is skipped then.
type DetachRequest struct {
	Tenant      string `json:"tenant"`
	Network     string `json:"network"`
	ContainerID string `json:"containerID"`
	NetNS       string `json:"netns,omitempty"`
	IfName      string `json:"ifName,omitempty"`
	// PodNamespace and PodName: the pod NetworkPolicy forgets (Request).
	PodNamespace string `json:"podNamespace,omitempty"`
	PodName      string `json:"podName,omitempty"`
}

// Validate checks every field; the error is a *FieldError. An empty IfName
// is valid (DefaultIfName applies).
func (r Request) Validate() error {
	if err := checkIDs(idField{"tenant", r.Tenant, true}, idField{"network", r.Network, true},
		idField{"group", r.Group, false}, idField{"containerID", r.ContainerID, true}); err != nil {
		return err
	}
	if len(r.Name) > maxIDLen || strings.ContainsFunc(r.Name, unicode.IsControl) {
		return &FieldError{Field: "name", Reason: fmt.Sprintf("must be at most %d characters without control characters", maxIDLen)}
	}
	if r.NetNS == "" {
		return &FieldError{Field: "netns", Reason: "is empty"}
	}
	if err := checkNetNS(r.NetNS); err != nil {
		return err
	}
	if len(r.PodNamespace) > maxIDLen || len(r.PodName) > maxIDLen || strings.ContainsFunc(r.PodNamespace+r.PodName, unicode.IsControl) {
		return &FieldError{Field: "podName", Reason: fmt.Sprintf("pod namespace and name must be at most %d characters without control characters", maxIDLen)}
	}
	if len(r.Labels) > maxLabels {
		return &FieldError{Field: "labels", Reason: fmt.Sprintf("has %d entries, at most %d are allowed", len(r.Labels), maxLabels)}
	}
	for k, v := range r.Labels {
		if k == "" || len(k) > maxIDLen || len(v) > maxIDLen || strings.ContainsFunc(k+v, unicode.IsControl) {
			return &FieldError{Field: "labels", Reason: fmt.Sprintf("entry %q: keys must be 1..%d and values at most %d characters without control characters", k, maxIDLen, maxIDLen)}
		}
	}
	return checkIfName(r.IfName)
}

// Validate checks every field; the error is a *FieldError.
func (r DetachRequest) Validate() error {
	if err := checkIDs(idField{"tenant", r.Tenant, true}, idField{"network", r.Network, true},
		idField{"containerID", r.ContainerID, true}); err != nil {
		return err
	}
	if r.NetNS != "" {
		if err := checkNetNS(r.NetNS); err != nil {
			return err
		}
	}
	return checkIfName(r.IfName)
}

type idField struct {
	name, value string
	required    bool
}

// checkIDs accepts names that can be parts of store keys: no '/', no
// white space or control characters, at most maxIDLen bytes.
func checkIDs(fields ...idField) error {
	for _, f := range fields {
		switch {
		case f.value == "" && f.required:
			return &FieldError{Field: f.name, Reason: "is empty"}
		case len(f.value) > maxIDLen:
			return &FieldError{Field: f.name, Reason: fmt.Sprintf("is longer than %d bytes", maxIDLen)}
		case strings.ContainsRune(f.value, '/'):
			return &FieldError{Field: f.name, Reason: "contains '/'"}
		case strings.ContainsFunc(f.value, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }):
			return &FieldError{Field: f.name, Reason: "contains white space or control characters"}
		}
	}
	return nil
}

func checkNetNS(p string) error {
	if !strings.HasPrefix(p, "/") || len(p) > maxPathLen || strings.ContainsRune(p, 0) {
		return &FieldError{Field: "netns", Reason: "must be an absolute path such as /var/run/netns/<name> or /proc/<pid>/ns/net"}
	}
	return nil
}

// checkIfName accepts "" (the default applies) or a Linux interface name.
func checkIfName(name string) error {
	switch {
	case name == "":
		return nil
	case len(name) > maxIfNameLen:
		return &FieldError{Field: "ifName", Reason: fmt.Sprintf("is longer than %d bytes", maxIfNameLen)}
	case name == "." || name == "..":
		return &FieldError{Field: "ifName", Reason: "is reserved"}
	case strings.ContainsFunc(name, func(c rune) bool { return c == '/' || c == ':' || unicode.IsSpace(c) || unicode.IsControl(c) }):
		return &FieldError{Field: "ifName", Reason: "contains '/', ':', white space or control characters"}
	}
	return nil
}

// DecodeRequest reads one JSON Request (unknown keys and trailing data are
// refused), fills in the default IfName and validates it. Every error
// wraps ErrInvalidRequest.
func DecodeRequest(r io.Reader) (Request, error) {
	var req Request
	if err := jsonreq.DecodeStrict(r, &req); err != nil {
		return Request{}, err
	}
	if req.IfName == "" {
		req.IfName = DefaultIfName
	}
	if err := req.Validate(); err != nil {
		return Request{}, err
	}
	return req, nil
}

// DecodeDetachRequest is DecodeRequest for a DetachRequest.
func DecodeDetachRequest(r io.Reader) (DetachRequest, error) {
	var req DetachRequest
	if err := jsonreq.DecodeStrict(r, &req); err != nil {
		return DetachRequest{}, err
	}
	if req.IfName == "" {
		req.IfName = DefaultIfName
	}
	if err := req.Validate(); err != nil {
		return DetachRequest{}, err
	}
	return req, nil
}

// ErrAlreadyAttached: the endpoint a request names is attached on this
// host already (or being attached); the existing one is left as it is.
var ErrAlreadyAttached = errors.New("attach: endpoint already attached on this host")

// HostRequest asks for a container's endpoint whose container side stays
// in the agent's own namespace, for runtimes that move and configure the
// link themselves (Docker's libnetwork, see docs/docker.md). The Result's
// IfName is then the link's name in the agent's namespace.
type HostRequest struct {
	Tenant      string
	Network     string
	Group       string
	ContainerID string // unique per endpoint; becomes the endpoint id
	Name        string // EPCommonName
	// IPAddress and IPv6Address are addresses the runtime holds already
	// (handed out by netmaster's allocAddress); "" lets netmaster pick.
	IPAddress   string
	IPv6Address string
}

// Validate checks every field; the error is a *FieldError.
func (r HostRequest) Validate() error {
	if err := checkIDs(idField{"tenant", r.Tenant, true}, idField{"network", r.Network, true},
		idField{"group", r.Group, false}, idField{"containerID", r.ContainerID, true}); err != nil {
		return err
	}
	if len(r.Name) > maxIDLen || strings.ContainsFunc(r.Name, unicode.IsControl) {
		return &FieldError{Field: "name", Reason: fmt.Sprintf("must be at most %d characters without control characters", maxIDLen)}
	}
	for _, f := range []struct{ name, v string }{{"ipAddress", r.IPAddress}, {"ipv6Address", r.IPv6Address}} {
		if f.v == "" {
			continue
		}
		a, err := netip.ParseAddr(f.v)
		if err != nil || (f.name == "ipAddress") != a.Is4() {
			return &FieldError{Field: f.name, Reason: fmt.Sprintf("%q is not an IPv%s address without a prefix length", f.v, map[bool]string{true: "4", false: "6"}[f.name == "ipAddress"])}
		}
	}
	return nil
}

// HostAttacher is the agent side of runtimes that move the container's
// link themselves.
type HostAttacher interface {
	// AttachHost creates the endpoint in netmaster and its OVS port and
	// flows, and leaves the container side of the veth, with its MAC and
	// MTU, in the agent's namespace. Any failure undoes every step; an
	// endpoint attached already is ErrAlreadyAttached and stays as it is.
	AttachHost(ctx context.Context, req HostRequest) (Result, error)
	// Detach removes the endpoint (NetNS "" for these endpoints).
	Detach(ctx context.Context, req DetachRequest) error
	// Attached returns the endpoint of (tenant, network, containerID)
	// attached on this host, as AttachHost described it.
	Attached(tenant, network, containerID string) (Result, bool)
}
