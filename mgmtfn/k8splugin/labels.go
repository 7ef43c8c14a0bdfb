package k8splugin

import (
	"context"
	"errors"
)

// Pod label keys that place a pod (docs/daemons.md §8.2 step 1), and their
// defaults.
const (
	LabelTenant    = "io.contiv.tenant"
	LabelNetwork   = "io.contiv.network"
	LabelGroup     = "io.contiv.net-group"
	DefaultTenant  = "default"
	DefaultNetwork = "default-net"
)

// PodRef names a pod in the API server.
type PodRef struct {
	Namespace string
	Name      string
	UID       string
}

// ErrPodNotFound: the source does not know the pod. The server then uses
// the labels the request carries (and the defaults).
var ErrPodNotFound = errors.New("pod not found")

// LabelSource gives a pod's labels. The original read them from the API
// server for every AddPod; the client-go pod informer of netplugin
// (docs/k8s.md) implements this interface from its cache. Any error other
// than ErrPodNotFound fails the ADD with "Error getting labels" and code
// 11 (try again later).
type LabelSource interface {
	PodLabels(ctx context.Context, pod PodRef) (map[string]string, error)
}

// RequestLabels is the LabelSource used until the informers exist: it
// knows no pod, so only the labels carried by the request (CNI_ARGS
// CONTIV_TENANT / CONTIV_NETWORK / CONTIV_NET_GROUP, or the network
// configuration's args.cni.labels) and the defaults apply.
type RequestLabels struct{}

// PodLabels always answers ErrPodNotFound.
func (RequestLabels) PodLabels(context.Context, PodRef) (map[string]string, error) {
	return nil, ErrPodNotFound
}

// LabelFunc adapts a function to LabelSource (tests, static maps).
type LabelFunc func(ctx context.Context, pod PodRef) (map[string]string, error)

// PodLabels calls f.
func (f LabelFunc) PodLabels(ctx context.Context, pod PodRef) (map[string]string, error) {
	return f(ctx, pod)
}

// Placement is where a pod's endpoint goes.
type Placement struct {
	Tenant, Network, Group string
}

// PlacementFrom maps labels to tenant, network and group as the original
// did: io.contiv.tenant (default "default"), io.contiv.network (default
// "default-net"), io.contiv.net-group (default none). The source's labels
// win over the request's for each key.
func PlacementFrom(source, request map[string]string) Placement {
	get := func(k, def string) string {
		if v, ok := source[k]; ok && v != "" {
			return v
		}
		if v, ok := request[k]; ok && v != "" {
			return v
		}
		return def
	}
	return Placement{Tenant: get(LabelTenant, DefaultTenant), Network: get(LabelNetwork, DefaultNetwork), Group: get(LabelGroup, "")}
}
