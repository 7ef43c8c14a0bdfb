// Package controllers is the contivmodel object controllers of one netmaster
// leadership term (docs/rest-api.md §2; docs/daemons.md §4.5–§4.9): global
// (global.go), tenant, network, endpoint group (epg.go, epgid.go),
// netprofile, ACI gateway (acigw.go) and BGP, with the
// Docker-mode network glue (docknet.go), the checks the kinds' field
// tables cannot express (validate.go) and the HTTP status of the
// allocators' refusals (status.go). Endpoint inspect and the /plugin/* API
// are netmaster/endpoints. The policy kinds (policy, rule, app profile,
// external contracts) are netmaster/controllers/policy and the service load
// balancer netmaster/controllers/servicelb; Callbacks wires them in.
//
// A controller changes state only inside its model transaction and undoes
// its side effects when a later step or the model commit fails. Creating
// or deleting a network or a group excludes the endpoint operations
// (endpoints.Service.LockTopology).
package controllers

import (
	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/controllers/policy"
	"github.com/contiv/netplugin/netmaster/controllers/servicelb"
	"github.com/contiv/netplugin/netmaster/endpoints"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/resources"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"

	"context"
)

// Config is what the controllers of a term work with.
type Config struct {
	KV        objdb.KV
	State     *state.Store
	V4        *ipam.V4
	V6        *ipam.V6
	Resources *resources.Manager
	// Endpoints is the term's endpoint service: its topology lock, caches
	// and endpoint list, and the service load balancer.
	Endpoints *endpoints.Service
	// ClusterMode is the --mode of the daemon (docker, kubernetes,
	// swarm-mode, test).
	ClusterMode string
	// PluginName is the docker network and IPAM driver name (--name;
	// "": DefaultPluginName), used in docker mode only.
	PluginName string
	// Docker is the Docker Engine client, docker mode only (else nil).
	Docker *dockernets.Client
	Log    *logrus.Entry
}

// Objects holds the controllers of a term.
type Objects struct {
	cfg    Config
	log    *logrus.Entry
	kv     objdb.KV
	st     *state.Store
	v4     *ipam.V4
	v6     *ipam.V6
	res    *resources.Manager
	eps    *endpoints.Service
	pol    *policy.Controllers   // policy, rule, app profile, external contracts
	svcLB  *servicelb.Controller // service load balancer
	docker *dockernets.Client    // docker mode only (docknet.go)
}

// New returns the controllers of a term over cfg.
func New(cfg Config) *Objects {
	m := &Objects{cfg: cfg, log: cfg.Log, kv: cfg.KV, st: cfg.State, v4: cfg.V4, v6: cfg.V6,
		res: cfg.Resources, eps: cfg.Endpoints, docker: cfg.Docker}
	if m.log == nil {
		m.log = logrus.NewEntry(logrus.StandardLogger())
	}
	m.pol = policy.New(policy.Config{State: m.st, Endpoints: m.eps, ACI: isACI})
	m.svcLB = servicelb.New(m.st, m.eps.ServiceLB(), m.log)
	return m
}

// Callbacks are the controllers of the model kinds. Types without one
// answer "Invalid object type" (see docs/compat.md, "## netmaster").
func (m *Objects) Callbacks() contivmodel.Controllers {
	return contivmodel.Controllers{
		Global:            globalCtl{m},
		Tenant:            tenantCtl{m},
		Network:           networkCtl{m},
		EndpointGroup:     epgCtl{m},
		Endpoint:          m.eps.InspectCallbacks(),
		Netprofile:        netprofileCtl{m},
		Policy:            m.pol.Policy(),
		Rule:              m.pol.Rule(),
		AppProfile:        m.pol.AppProfile(),
		AciGw:             aciGwCtl{m},
		Bgp:               bgpCtl{m},
		ExtContractsGroup: m.pol.ExtContracts(),
		ServiceLB:         m.svcLB.Callbacks(),
	}
}

// AddRoutes serves the service load balancer views GET /services and
// GET /service/{id} on r.
func (m *Objects) AddRoutes(r *mux.Router) { m.svcLB.AddRoutes(r) }

// undoOnAbort runs undo, on a context that outlives the request, when tx
// aborts; a failure is logged as "roll back <what>".
func (m *Objects) undoOnAbort(tx *contivmodel.Tx, what string, undo func(ctx context.Context) error) {
	tx.OnAbort(func() {
		ctx, cancel := endpoints.UndoContext()
		defer cancel()
		if err := undo(ctx); err != nil {
			m.log.WithError(err).Error("roll back " + what)
		}
	})
}
