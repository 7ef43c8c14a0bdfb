// Package cniapi is the wire format between the contivk8s CNI binary and
// netplugin's CNI server (docs/daemons.md §8.2): HTTP with JSON bodies over
// the unix socket /run/contiv/contiv-cni.sock. The original's two routes
// (AddPod, DelPod) and field names are kept; CheckPod, GC and Status are
// this project's additions for the CNI 1.1 verbs.
//
// Every decoder here refuses unknown keys, trailing data and invalid
// fields with an error wrapping ErrInvalidRequest that names the field.
package cniapi

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/utils"

	"github.com/contiv/netplugin/utils/jsonreq"
)

// DefaultSocket is where netplugin serves the CNI API in kubernetes mode.
const DefaultSocket = "/run/contiv/contiv-cni.sock"

// Routes. Every other /ContivCNI.* path answers 404.
const (
	PathAddPod   = "/ContivCNI.AddPod"
	PathDelPod   = "/ContivCNI.DelPod"
	PathCheckPod = "/ContivCNI.CheckPod"
	PathGC       = "/ContivCNI.GC"
	PathStatus   = "/ContivCNI.Status"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 1 << 20

// Limits of fields.
const (
	maxNameLen   = 253 // a Kubernetes object name
	maxPathLen   = 4096
	maxLabels    = 64
	maxLabelLen  = 317 // prefix (253) + '/' + name (63)
	maxValueLen  = 255
	maxGCEntries = 65536
)

// ErrInvalidRequest: a request is malformed or a field is invalid. Every
// decoding and validation error wraps it (the front ends' shared sentinel).
var ErrInvalidRequest = jsonreq.ErrInvalidRequest

// FieldError names the JSON key of the invalid field.
type FieldError = jsonreq.FieldError

// PodAttr is the request of AddPod, DelPod and CheckPod: the original's
// CNIPodAttr plus the CNI network name, the pod's UID and labels the
// caller already knows (from CNI_ARGS or the network configuration).
// One attachment is (K8S_POD_INFRA_CONTAINER_ID, CNI_IFNAME).
type PodAttr struct {
	Name             string            `json:"K8S_POD_NAME,omitempty"`
	K8sNameSpace     string            `json:"K8S_POD_NAMESPACE,omitempty"`
	InfraContainerID string            `json:"K8S_POD_INFRA_CONTAINER_ID,omitempty"`
	PodUID           string            `json:"K8S_POD_UID,omitempty"`
	NwNameSpace      string            `json:"CNI_NETNS,omitempty"`
	IntfName         string            `json:"CNI_IFNAME,omitempty"`
	CNINetwork       string            `json:"cniNetwork,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
}

// Validate checks every field. The container id, interface and network
// names follow the CNI library's own rules; DelPod may omit CNI_NETNS.
func (p PodAttr) Validate(needNetNS bool) error {
	if p.InfraContainerID == "" {
		return &FieldError{Field: "K8S_POD_INFRA_CONTAINER_ID", Reason: "is empty"}
	}
	if err := utils.ValidateContainerID(p.InfraContainerID); err != nil {
		return &FieldError{Field: "K8S_POD_INFRA_CONTAINER_ID", Reason: "is invalid: " + err.Msg}
	}
	if p.IntfName == "" {
		return &FieldError{Field: "CNI_IFNAME", Reason: "is empty"}
	}
	if err := utils.ValidateInterfaceName(p.IntfName); err != nil {
		return &FieldError{Field: "CNI_IFNAME", Reason: "is invalid: " + err.Msg}
	}
	if p.NwNameSpace == "" {
		if needNetNS {
			return &FieldError{Field: "CNI_NETNS", Reason: "is empty"}
		}
	} else if !strings.HasPrefix(p.NwNameSpace, "/") || len(p.NwNameSpace) > maxPathLen ||
		strings.ContainsFunc(p.NwNameSpace, unicode.IsControl) {
		return &FieldError{Field: "CNI_NETNS", Reason: "must be an absolute path such as /var/run/netns/<name> or /proc/<pid>/ns/net"}
	}
	if p.CNINetwork != "" {
		if err := utils.ValidateNetworkName(p.CNINetwork); err != nil {
			return &FieldError{Field: "cniNetwork", Reason: "is invalid: " + err.Msg}
		}
	}
	for _, f := range []struct{ key, v string }{{"K8S_POD_NAME", p.Name}, {"K8S_POD_NAMESPACE", p.K8sNameSpace}, {"K8S_POD_UID", p.PodUID}} {
		if err := checkName(f.v); err != nil {
			return &FieldError{Field: f.key, Reason: err.Error()}
		}
	}
	if len(p.Labels) > maxLabels {
		return &FieldError{Field: "labels", Reason: fmt.Sprintf("has more than %d entries", maxLabels)}
	}
	for k, v := range p.Labels {
		if k == "" || len(k) > maxLabelLen || strings.ContainsFunc(k, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }) {
			return &FieldError{Field: "labels", Reason: fmt.Sprintf("key %q must be 1-%d characters without white space", k, maxLabelLen)}
		}
		if len(v) > maxValueLen || strings.ContainsFunc(v, unicode.IsControl) {
			return &FieldError{Field: "labels", Reason: fmt.Sprintf("value of %q must be at most %d characters without control characters", k, maxValueLen)}
		}
	}
	return nil
}

// checkName accepts "" or a Kubernetes-like name: at most 253 bytes, no
// '/', white space or control characters.
func checkName(v string) error {
	switch {
	case len(v) > maxNameLen:
		return fmt.Errorf("is longer than %d bytes", maxNameLen)
	case strings.ContainsRune(v, '/'):
		return errors.New("contains '/'")
	case strings.ContainsFunc(v, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }):
		return errors.New("contains white space or control characters")
	}
	return nil
}

// RspAddPod is the answer of AddPod, DelPod and CheckPod: the original's
// fields, plus what a CNI result needs (MAC, gateways, MTU, interface)
// and Code, the CNI error code the failure maps to.
type RspAddPod struct {
	Result      uint   `json:"result,omitempty"` // 1 on failure
	EndpointID  string `json:"endpointid,omitempty"`
	IPAddress   string `json:"ipaddress,omitempty"` // ip/len
	IPv6Address string `json:"ipv6address,omitempty"`
	MacAddress  string `json:"macaddress,omitempty"`
	Gateway     string `json:"gateway,omitempty"`
	IPv6Gateway string `json:"ipv6gateway,omitempty"`
	MTU         int    `json:"mtu,omitempty"`
	IfName      string `json:"ifname,omitempty"`
	ErrMsg      string `json:"errmsg,omitempty"`
	ErrInfo     string `json:"errinfo,omitempty"`
	Code        uint   `json:"code,omitempty"` // CNI error code of a failure
}

// Attachment names one attachment, as in CNI's cni.dev/valid-attachments.
type Attachment struct {
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
}

// GCRequest asks to remove every attachment of CNINetwork made on this
// host that is not in Valid.
type GCRequest struct {
	CNINetwork string       `json:"cniNetwork"`
	Valid      []Attachment `json:"validAttachments"`
}

// Validate checks the network name. Entries of Valid are only compared,
// so any strings are accepted there.
func (g GCRequest) Validate() error {
	if g.CNINetwork == "" {
		return &FieldError{Field: "cniNetwork", Reason: "is empty"}
	}
	if err := utils.ValidateNetworkName(g.CNINetwork); err != nil {
		return &FieldError{Field: "cniNetwork", Reason: "is invalid: " + err.Msg}
	}
	if len(g.Valid) > maxGCEntries {
		return &FieldError{Field: "validAttachments", Reason: fmt.Sprintf("has more than %d entries", maxGCEntries)}
	}
	return nil
}

// RspGC answers GC: the attachments removed and, on a partial failure,
// what went wrong (status 500).
type RspGC struct {
	Removed []Attachment `json:"removed"`
	ErrMsg  string       `json:"errmsg,omitempty"`
}

// RspStatus answers Status: 200 when ADD can be served; else 500 with
// ErrMsg and Code 50.
type RspStatus struct {
	ErrMsg string `json:"errmsg,omitempty"`
	Code   uint   `json:"code,omitempty"`
}

// DecodePodAttr reads one PodAttr and validates it.
func DecodePodAttr(r io.Reader, needNetNS bool) (PodAttr, error) {
	var p PodAttr
	if err := jsonreq.DecodeStrict(r, &p); err != nil {
		return PodAttr{}, err
	}
	if err := p.Validate(needNetNS); err != nil {
		return PodAttr{}, err
	}
	return p, nil
}

// DecodeGCRequest reads one GCRequest and validates it.
func DecodeGCRequest(r io.Reader) (GCRequest, error) {
	var g GCRequest
	if err := jsonreq.DecodeStrict(r, &g); err != nil {
		return GCRequest{}, err
	}
	if err := g.Validate(); err != nil {
		return GCRequest{}, err
	}
	return g, nil
}

// CNI error codes used by the server beyond those of the CNI library
// (types.Err*): STATUS's "not available".
const ErrPluginNotAvailable uint = 50

// CodeFor is the CNI error code of a request validation error: the pod
// identity, netns and interface come from the runtime's environment
// (code 4); a bad label or network name from the configuration (code 7).
func CodeFor(err error) uint {
	var fe *FieldError
	if errors.As(err, &fe) {
		switch fe.Field {
		case "labels", "cniNetwork", "tenant", "network", "group":
			return types.ErrInvalidNetworkConfig
		}
		return types.ErrInvalidEnvironmentVariables
	}
	return types.ErrDecodingFailure
}
