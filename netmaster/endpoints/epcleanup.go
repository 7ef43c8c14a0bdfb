package endpoints

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/agents"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
)

// reclaimTimeout bounds one reclaim request to a netplugin.
const reclaimTimeout = 15 * time.Second

// errNothingToClean answers a cleanup of a network or group without
// endpoints (the original's empty 200).
var errNothingToClean = errors.New("endpoints: no endpoints to clean up")

// addEpCleanupRoute serves DELETE /debug/epcleanup/tenant/{tenant}/{category}/{id}
// (docs/daemons.md §4.10.4, docs/rest-api.md §3.10).
func (m *Service) addEpCleanupRoute(r *mux.Router) {
	r.Methods(http.MethodDelete).Path("/debug/epcleanup/tenant/{tenant}/{category}/{id}").HandlerFunc(m.serveEpCleanup)
}

// serveEpCleanup always answers 200: the text line when every selected
// endpoint was deleted and reclaimed, an empty body otherwise (failures
// are logged; docs/rest-api.md Appendix A Q12).
func (m *Service) serveEpCleanup(w http.ResponseWriter, r *http.Request) {
	log := m.log.WithField("path", r.URL.Path)
	var vals [3]string
	var err error
	for i, name := range []string{"tenant", "category", "id"} {
		if vals[i], err = contivmodel.PathVar(r, name); err != nil {
			break
		}
	}
	msg := ""
	if err == nil {
		msg, err = m.epCleanup(r.Context(), vals[0], vals[1], vals[2])
	}
	switch {
	case errors.Is(err, errNothingToClean):
		log.Info("endpoint cleanup: nothing to clean up")
	case err != nil:
		log.WithError(err).Warn("endpoint cleanup failed")
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, msg)
}

// epCleanup deletes the endpoints a cleanup request selects and asks
// their hosts to reclaim them; it returns the answer's text line.
func (m *Service) epCleanup(ctx context.Context, tenant, category, id string) (string, error) {
	var match func(state.Endpoint) bool
	var what string
	switch category {
	case "net":
		netID := state.NetworkID(tenant, id)
		ns, err := m.st.Networks.Read(ctx, netID) // not netCache: epCount is needed
		if err != nil {
			return "", fmt.Errorf("read network state %q: %w", netID, err)
		}
		if ns.EpCount == 0 {
			return "", fmt.Errorf("network %q: %w", netID, errNothingToClean)
		}
		match = func(ep state.Endpoint) bool { return ep.NetID == netID }
		what = "Network"
	case "group":
		epgID := state.GroupID(tenant, id)
		gs, err := m.st.EndpointGroups.Read(ctx, epgID)
		if err != nil {
			return "", fmt.Errorf("read group state %q: %w", epgID, err)
		}
		if gs.EpCount == 0 {
			return "", fmt.Errorf("group %q: %w", epgID, errNothingToClean)
		}
		// The group's name, in any tenant (as the original).
		match = func(ep state.Endpoint) bool { return ep.ServiceName == id }
		what = "EPG"
	case "ep":
		match = func(ep state.Endpoint) bool { return strings.Contains(ep.EndpointID, id) }
		what = "Endpoint"
	default:
		return "", fmt.Errorf("unknown cleanup category %q", category)
	}
	eps, err := m.AllEndpoints(ctx)
	if err != nil {
		return "", err
	}
	var selected []state.Endpoint
	for _, ep := range eps {
		if match(ep) {
			selected = append(selected, ep)
		}
	}
	if len(selected) > 0 {
		if err := m.cleanupEndpoints(ctx, selected); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("Received request to cleanup %s with ID: %s\n", what, id), nil
}

// cleanupEndpoints deletes each endpoint (as /plugin/deleteEndpoint does)
// and asks the netplugin of its homing host to reclaim it. It goes on
// after a failure and returns all failures.
func (m *Service) cleanupEndpoints(ctx context.Context, eps []state.Endpoint) error {
	vteps, err := m.vtepsByHost(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, ep := range eps {
		if _, err := m.removeEndpoint(ctx, ep.NetID, ep.ID); err != nil && !errors.Is(err, objdb.ErrNotFound) {
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

// vtepsByHost maps host names to the VTEP address their netplugin
// registered.
func (m *Service) vtepsByHost(ctx context.Context) (map[string]string, error) {
	if m.svc == nil {
		return nil, errors.New("endpoints: no service registry")
	}
	list, err := m.svc.GetService(ctx, agents.ServiceVtep)
	if err != nil {
		return nil, fmt.Errorf("list %s services: %w", agents.ServiceVtep, err)
	}
	out := make(map[string]string, len(list))
	for _, s := range list {
		if s.Hostname != "" {
			out[s.Hostname] = s.HostAddr
		}
	}
	return out, nil
}

// reclaimEndpoint asks the netplugin at vtep, over the agent RPC, to
// remove the endpoint netmaster just deleted from the store.
func (m *Service) reclaimEndpoint(ctx context.Context, vtep, epID string) error {
	rctx, cancel := context.WithTimeout(ctx, reclaimTimeout)
	defer cancel()
	var ok bool
	if err := m.CallAgent(rctx, vtep, ofrpc.NetpluginReclaimEndpoint, ofrpc.ReclaimArgs{EndpointID: epID}, &ok); err != nil {
		return fmt.Errorf("reclaim endpoint %q: %w", epID, err)
	}
	return nil
}
