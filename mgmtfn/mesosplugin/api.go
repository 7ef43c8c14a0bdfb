// Package mesosplugin is netplugin's Mesos front end (docs/mesos.md,
// docs/daemons.md §8.5): the Mesos CNI server netplugin serves on
// /run/contiv/contiv-mesos.sock for the netcontiv CNI binary
// (cmd/netcontiv, package mesosplugin/netcontiv), which Mesos' unified
// containerizer runs for a container on a contiv network.
//
// The wire format is the original's: POST /MesosNwIntfAdd and
// /MesosNwIntfDel with {"cni_ifname","cni_netns","cni_containerid",
// "labels"}, answered by {"ip4","ip6","dns"} or a 500 CNI error object;
// this project adds "cni_network" to the request and "contiv" (MAC, MTU,
// gateways, endpoint id) to the answer. The work is the Kubernetes CNI
// server's (mgmtfn/k8splugin: placement by labels, attachment records,
// the attach path), with a repeated ADD answering its recorded result.
package mesosplugin

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
	"github.com/contiv/netplugin/utils/jsonreq"
)

// DefaultSocket is where netplugin serves the Mesos CNI API, as the
// original.
const DefaultSocket = "/run/contiv/contiv-mesos.sock"

// Routes; every other path answers 503, as the original.
const (
	PathAdd = "/MesosNwIntfAdd"
	PathDel = "/MesosNwIntfDel"
)

// Request is the body of both routes.
type Request struct {
	IfName      string            `json:"cni_ifname"`
	NetNS       string            `json:"cni_netns"`
	ContainerID string            `json:"cni_containerid"`
	Network     string            `json:"cni_network,omitempty"` // the CNI network name (this project)
	Labels      map[string]string `json:"labels,omitempty"`
}

// PodAttr is the request in the CNI server's terms, validated (CNI_NETNS
// required for ADD only).
func (r Request) PodAttr(needNetNS bool) (cniapi.PodAttr, error) {
	p := cniapi.PodAttr{InfraContainerID: r.ContainerID, NwNameSpace: r.NetNS, IntfName: r.IfName,
		CNINetwork: r.Network, Labels: r.Labels}
	if err := p.Validate(needNetNS); err != nil {
		var fe *cniapi.FieldError
		if errors.As(err, &fe) {
			if name, ok := fieldNames[fe.Field]; ok {
				return cniapi.PodAttr{}, &cniapi.FieldError{Field: name, Reason: fe.Reason}
			}
		}
		return cniapi.PodAttr{}, err
	}
	return p, nil
}

// fieldNames are this request's names of the CNI server's fields that
// come from the runtime's environment (refusals of which keep code 4).
var fieldNames = map[string]string{
	"K8S_POD_INFRA_CONTAINER_ID": "cni_containerid",
	"CNI_IFNAME":                 "cni_ifname",
	"CNI_NETNS":                  "cni_netns",
}

// DecodeRequest reads one Request (unknown keys and trailing data
// refused) and validates it.
func DecodeRequest(r io.Reader, needNetNS bool) (Request, cniapi.PodAttr, error) {
	var req Request
	if err := jsonreq.DecodeStrict(r, &req); err != nil {
		return Request{}, cniapi.PodAttr{}, err
	}
	p, err := req.PodAttr(needNetNS)
	if err != nil {
		return Request{}, cniapi.PodAttr{}, err
	}
	return req, p, nil
}

// IPConfig is an address of the answer, in the CNI 0.2.0 result form the
// original answered and Mesos reads.
type IPConfig struct {
	IP      string `json:"ip"` // ip/len
	Gateway string `json:"gateway,omitempty"`
}

// Reply answers ADD: the original's members, and Contiv with what a
// current CNI result needs. DEL answers 200 with an empty body.
type Reply struct {
	IP4    *IPConfig         `json:"ip4,omitempty"`
	IP6    *IPConfig         `json:"ip6,omitempty"`
	DNS    struct{}          `json:"dns"`
	Contiv *cniapi.RspAddPod `json:"contiv,omitempty"`
}

// ReplyFor is the answer of an attachment.
func ReplyFor(rsp cniapi.RspAddPod) Reply {
	r := Reply{Contiv: &rsp}
	if rsp.IPAddress != "" {
		r.IP4 = &IPConfig{IP: rsp.IPAddress, Gateway: rsp.Gateway}
	}
	if rsp.IPv6Address != "" {
		r.IP6 = &IPConfig{IP: rsp.IPv6Address, Gateway: rsp.IPv6Gateway}
	}
	return r
}

// Attachment is what an answer gives the CNI binary: the Contiv member,
// or else what the original's members hold.
func (r Reply) Attachment() (cniapi.RspAddPod, error) {
	if r.Contiv != nil {
		return *r.Contiv, nil
	}
	var rsp cniapi.RspAddPod
	if r.IP4 != nil {
		rsp.IPAddress, rsp.Gateway = r.IP4.IP, r.IP4.Gateway
	}
	if r.IP6 != nil {
		rsp.IPv6Address, rsp.IPv6Gateway = r.IP6.IP, r.IP6.Gateway
	}
	for _, a := range []string{rsp.IPAddress, rsp.IPv6Address} {
		if a == "" {
			continue
		}
		if _, _, err := net.ParseCIDR(a); err != nil {
			return cniapi.RspAddPod{}, fmt.Errorf("netplugin answered a bad address %q: %w", a, err)
		}
	}
	if rsp.IPAddress == "" && rsp.IPv6Address == "" {
		return cniapi.RspAddPod{}, errors.New("netplugin answered no address")
	}
	return rsp, nil
}

// ErrorReply is a failure: status 500 (400 for a request that does not
// decode or validate) with a CNI error object, cniVersion 0.2.0.
type ErrorReply struct {
	CNIVersion string `json:"cniVersion"`
	Code       uint   `json:"code"`
	Msg        string `json:"msg"`
	Details    string `json:"details,omitempty"`
}

// NewErrorReply builds a failure answer; the message gets the original's
// "Contiv: " prefix.
func NewErrorReply(code uint, msg, details string) ErrorReply {
	if code == 0 {
		code = types.ErrInternal
	}
	return ErrorReply{CNIVersion: "0.2.0", Code: code, Msg: "Contiv: " + msg, Details: details}
}
