package reclaim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/agents"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
)

// reclaimTimeout bounds one reclaim request to a netplugin.
const reclaimTimeout = 15 * time.Second

// errNothingToClean answers a cleanup that selected no endpoint: 409,
// nothing removed (docs/security.md, "Debug endpoints").
var errNothingToClean = errors.New("endpoints: no endpoint matched")

// addEpCleanupRoute serves DELETE /debug/epcleanup/tenant/{tenant}/{category}/{id}
// (docs/daemons.md §4.10.4, docs/rest-api.md §3.10); the query dryRun=true
// lists the selection and changes nothing. The route is a DELETE, so with
// tokens on only an admin token reaches it (netmaster/auth).
func (m *Collector) addEpCleanupRoute(r *mux.Router, reg *contivmodel.Registry) {
	r.Methods(http.MethodDelete).Path("/debug/epcleanup/tenant/{tenant}/{category}/{id}").HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) { m.serveEpCleanup(w, r, reg) })
}

// serveEpCleanup answers 200 text/plain: the original's line, then one
// line per selected endpoint ("<state id> <homing host>"); a dry run says
// so on its first line. Errors go through the registry's classification:
// 400 for a bad category or dryRun value, 404 for an unknown network or
// group, 409 when nothing matched, 500 when a deletion or reclaim failed.
func (m *Collector) serveEpCleanup(w http.ResponseWriter, r *http.Request, reg *contivmodel.Registry) {
	log := m.log.WithField("path", r.URL.Path)
	var vals [3]string
	var err error
	for i, name := range []string{"tenant", "category", "id"} {
		if vals[i], err = contivmodel.PathVar(r, name); err != nil {
			break
		}
	}
	dryRun := false
	if err == nil {
		dryRun, err = parseDryRun(r.URL.Query())
	}
	var msg string
	if err == nil {
		msg, err = m.epCleanup(r.Context(), vals[0], vals[1], vals[2], dryRun)
	}
	if err != nil {
		status := contivmodel.Status(err)
		if reg != nil {
			status = reg.Status(err)
		}
		log.WithError(err).WithField("status", status).Warn("endpoint cleanup refused or failed")
		http.Error(w, contivmodel.Message(err), status)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, msg)
}

// parseDryRun reads the dryRun query parameter: absent, true or false.
func parseDryRun(q url.Values) (bool, error) {
	vs, ok := q["dryRun"]
	if !ok {
		return false, nil
	}
	if len(vs) != 1 {
		return false, contivmodel.Invalidf("dryRun given %d times", len(vs))
	}
	b, err := strconv.ParseBool(vs[0])
	if err != nil {
		return false, contivmodel.Invalidf("dryRun %q: want true or false", vs[0])
	}
	return b, nil
}

// epCleanup selects endpoints by exact match, scoped by tenant, and
// (unless dryRun) deletes them and asks their hosts to reclaim them; it
// returns the answer's text. Selections (docs/security.md, "Debug
// endpoints"): net — the network <id>.<tenant>; group — the group
// <id>:<tenant> (its endpoints in any network of the tenant); ep — the
// endpoint whose endpoint id or state id equals <id>, in a network of
// the tenant. Nothing is a prefix or substring match.
func (m *Collector) epCleanup(ctx context.Context, tenant, category, id string, dryRun bool) (string, error) {
	var match func(state.Endpoint) bool
	var what string
	switch category {
	case "net":
		netID := state.NetworkID(tenant, id)
		if _, err := m.st.Networks.Read(ctx, netID); err != nil {
			return "", apierr.Store("read network state "+netID, err)
		}
		match = func(ep state.Endpoint) bool { return ep.NetID == netID }
		what = "Network"
	case "group":
		epgID := state.GroupID(tenant, id)
		if _, err := m.st.EndpointGroups.Read(ctx, epgID); err != nil {
			return "", apierr.Store("read group state "+epgID, err)
		}
		match = func(ep state.Endpoint) bool { return ep.EndpointGroupKey == epgID }
		what = "EPG"
	case "ep":
		nets, _, err := m.st.Networks.ReadAll(ctx)
		if err != nil {
			return "", fmt.Errorf("list network states: %w", err)
		}
		inTenant := map[string]bool{}
		for _, n := range nets {
			if n.Tenant == tenant {
				inTenant[n.ID] = true
			}
		}
		match = func(ep state.Endpoint) bool {
			return inTenant[ep.NetID] && (ep.EndpointID == id || ep.ID == id)
		}
		what = "Endpoint"
	default:
		return "", contivmodel.Invalidf("unknown cleanup category %q: want net, group or ep", category)
	}
	eps, err := m.eps.AllEndpoints(ctx)
	if err != nil {
		return "", err
	}
	var selected []state.Endpoint
	for _, ep := range eps {
		if match(ep) {
			selected = append(selected, ep)
		}
	}
	if len(selected) == 0 {
		return "", &contivmodel.Error{
			Msg: fmt.Sprintf("epcleanup: no endpoint matched %s %q in tenant %q: nothing removed", strings.ToLower(what), id, tenant),
			Err: fmt.Errorf("%w: %w", contivmodel.ErrConflict, errNothingToClean),
		}
	}
	sort.Slice(selected, func(i, j int) bool { return selected[i].ID < selected[j].ID })
	var b strings.Builder
	if dryRun {
		fmt.Fprintf(&b, "Dry run: would clean up %s with ID: %s (%d endpoints)\n", what, id, len(selected))
	} else {
		if err := m.cleanupEndpoints(ctx, selected); err != nil {
			return "", fmt.Errorf("cleanup %s %q in tenant %q: %w", strings.ToLower(what), id, tenant, err)
		}
		fmt.Fprintf(&b, "Received request to cleanup %s with ID: %s\n", what, id)
	}
	for _, ep := range selected {
		fmt.Fprintf(&b, "%s %s\n", ep.ID, ep.HomingHost)
	}
	return b.String(), nil
}

// cleanupEndpoints deletes each endpoint (as /plugin/deleteEndpoint does)
// and asks the netplugin of its homing host to reclaim it. It goes on
// after a failure and returns all failures.
func (m *Collector) cleanupEndpoints(ctx context.Context, eps []state.Endpoint) error {
	vteps, err := m.eps.VtepsByHost(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, ep := range eps {
		if err := m.eps.RemoveEndpoint(ctx, ep.NetID, ep.ID); err != nil && !errors.Is(err, objdb.ErrNotFound) {
			errs = append(errs, fmt.Errorf("delete endpoint %q: %w", ep.ID, err))
			continue
		}
		vtep, ok := vteps[ep.HomingHost]
		if !ok {
			errs = append(errs, fmt.Errorf("reclaim endpoint %q: no %s registered for host %q", ep.ID, agents.ServiceVtep, ep.HomingHost))
			continue
		}
		if err := m.reclaimEndpoint(ctx, vtep, ep.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		m.log.WithFields(map[string]any{"endpoint": ep.ID, "host": ep.HomingHost}).Info("endpoint cleaned up")
	}
	return errors.Join(errs...)
}

// reclaimEndpoint asks the netplugin at vtep, over the agent RPC, to
// remove the endpoint netmaster just deleted from the store.
func (m *Collector) reclaimEndpoint(ctx context.Context, vtep, epID string) error {
	rctx, cancel := context.WithTimeout(ctx, reclaimTimeout)
	defer cancel()
	var ok bool
	if err := m.eps.CallAgent(rctx, vtep, ofrpc.NetpluginReclaimEndpoint, ofrpc.ReclaimArgs{EndpointID: epID}, &ok); err != nil {
		return fmt.Errorf("reclaim endpoint %q: %w", epID, err)
	}
	return nil
}
