package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
)

// traceTimeout bounds the relay of one packet trace to a netplugin.
const traceTimeout = 20 * time.Second

// maxTraceAnswer caps a netplugin's trace answer.
const maxTraceAnswer = 4 << 20

// addTraceRoute adds GET /trace?endpoint=&dst=&proto=&port= (docs/
// operations.md, "Packet trace"): netmaster finds the endpoint's host and
// relays the question to that host's netplugin, whose answer it returns.
func (m *Service) addTraceRoute(r *mux.Router) {
	r.Methods(http.MethodGet).Path("/trace").HandlerFunc(m.serveTrace)
}

func (m *Service) serveTrace(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := strings.TrimSpace(q.Get("endpoint"))
	if key == "" {
		http.Error(w, "trace: endpoint is required", http.StatusBadRequest)
		return
	}
	ep, err := m.findEndpoint(r, key)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, objdb.ErrNotFound) {
			code = http.StatusNotFound
		}
		http.Error(w, "trace: "+err.Error(), code)
		return
	}
	vteps, err := m.vtepsByHost(r.Context())
	if err != nil {
		http.Error(w, "trace: "+err.Error(), http.StatusInternalServerError)
		return
	}
	addr, ok := vteps[ep.HomingHost]
	if !ok {
		http.Error(w, fmt.Sprintf("trace: endpoint %s lives on host %q, whose netplugin is not registered", ep.ID, ep.HomingHost), http.StatusServiceUnavailable)
		return
	}
	q.Set("endpoint", ep.ID)
	ctx, cancel := context.WithTimeout(r.Context(), traceTimeout)
	defer cancel()
	var ans ofrpc.HTTPAnswer
	if err := m.CallAgent(ctx, addr, ofrpc.NetpluginTrace, ofrpc.TraceArgs{Query: q.Encode()}, &ans); err != nil {
		http.Error(w, fmt.Sprintf("trace: ask the netplugin of host %s: %v", ep.HomingHost, err), http.StatusBadGateway)
		return
	}
	if len(ans.Body) > maxTraceAnswer {
		http.Error(w, fmt.Sprintf("trace: the answer of host %s exceeds %d bytes", ep.HomingHost, maxTraceAnswer), http.StatusBadGateway)
		return
	}
	if ans.ContentType != "" {
		w.Header().Set("Content-Type", ans.ContentType)
	}
	if ans.Status == 0 {
		ans.Status = http.StatusOK
	}
	w.WriteHeader(ans.Status)
	_, _ = w.Write(ans.Body)
}

// findEndpoint reads the endpoint with id key, else the one whose
// container id is key, else the only one whose id contains key.
func (m *Service) findEndpoint(r *http.Request, key string) (state.Endpoint, error) {
	if ep, err := m.st.Endpoints.Read(r.Context(), key); err == nil {
		return ep, nil
	} else if !errors.Is(err, objdb.ErrNotFound) {
		return state.Endpoint{}, fmt.Errorf("read endpoint %q: %w", key, err)
	}
	eps, _, err := m.st.Endpoints.ReadAll(r.Context())
	if err != nil {
		return state.Endpoint{}, fmt.Errorf("list endpoints: %w", err)
	}
	var found []state.Endpoint
	for _, ep := range eps {
		if ep.ContainerID == key {
			return ep, nil
		}
		if strings.Contains(ep.ID, key) {
			found = append(found, ep)
		}
	}
	switch len(found) {
	case 0:
		return state.Endpoint{}, fmt.Errorf("no endpoint %q: %w", url.PathEscape(key), objdb.ErrNotFound)
	case 1:
		return found[0], nil
	}
	return state.Endpoint{}, fmt.Errorf("%q matches %d endpoints; give more of the id", key, len(found))
}
