package dockplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/contiv/netplugin/utils/httpserve"
)

// verb is one call: decode into a fresh request, run, answer.
type verb struct {
	path string
	ipam bool // answers errors with the IPAM protocol's "Error" too
	run  func(ctx context.Context, body *http.Request) (any, error)
}

// call makes a verb of a typed handler: the body is decoded into a new Req
// and validated before fn sees it.
func call[Req any, PReq interface {
	*Req
	validator
}, Resp any](fn func(ctx context.Context, req PReq) (Resp, error)) func(context.Context, *http.Request) (any, error) {
	return func(ctx context.Context, r *http.Request) (any, error) {
		req := PReq(new(Req))
		if err := decode(r.Body, req); err != nil {
			return nil, err
		}
		return fn(ctx, req)
	}
}

// fixed answers v whatever the body holds.
func fixed(v any) func(context.Context, *http.Request) (any, error) {
	return func(context.Context, *http.Request) (any, error) { return v, nil }
}

type empty struct{}

func (p *Plugin) verbs() []verb {
	return []verb{
		{path: "/Plugin.Activate", run: fixed(ActivateResponse{Implements: []string{"NetworkDriver", "IpamDriver"}})},
		{path: "/Plugin.Deactivate", run: fixed(empty{})},
		{path: "/NetworkDriver.GetCapabilities", run: fixed(NetworkCapabilities{Scope: p.cfg.Scope, ConnectivityScope: p.cfg.Scope})},
		{path: "/NetworkDriver.CreateNetwork", run: call(p.createNetwork)},
		{path: "/NetworkDriver.DeleteNetwork", run: call(p.deleteNetwork)},
		{path: "/NetworkDriver.AllocateNetwork", run: call(p.allocateNetwork)},
		{path: "/NetworkDriver.FreeNetwork", run: call(p.freeNetwork)},
		{path: "/NetworkDriver.CreateEndpoint", run: call(p.createEndpoint)},
		{path: "/NetworkDriver.DeleteEndpoint", run: call(p.deleteEndpoint)},
		{path: "/NetworkDriver.EndpointOperInfo", run: call(p.endpointOperInfo)},
		{path: "/NetworkDriver.Join", run: call(p.join)},
		{path: "/NetworkDriver.Leave", run: call(p.nothing)},
		{path: "/NetworkDriver.ProgramExternalConnectivity", run: call(p.nothing)},
		{path: "/NetworkDriver.RevokeExternalConnectivity", run: call(p.nothing)},
		{path: "/NetworkDriver.DiscoverNew", run: call(p.discover)},
		{path: "/NetworkDriver.DiscoverDelete", run: call(p.discover)},
		{path: "/IpamDriver.GetCapabilities", ipam: true, run: fixed(IpamCapabilities{})},
		{path: "/IpamDriver.GetDefaultAddressSpaces", ipam: true, run: fixed(AddressSpaces{})},
		{path: "/IpamDriver.RequestPool", ipam: true, run: call(p.requestPool)},
		{path: "/IpamDriver.ReleasePool", ipam: true, run: call(p.releasePool)},
		{path: "/IpamDriver.RequestAddress", ipam: true, run: call(p.requestAddress)},
		{path: "/IpamDriver.ReleaseAddress", ipam: true, run: call(p.releaseAddress)},
	}
}

// Handler routes POST of every call (docs/docker.md). A refused call is
// answered with a non-200 status and {"Err": message} ({"Err","Error"}
// for IPAM calls): 400 for a malformed body or member, 413 for a body over
// MaxBodyBytes, 404 for an unknown call or a network or endpoint the
// plugin does not know, 405 for another method, 500 when the work failed.
func (p *Plugin) Handler() http.Handler {
	r := mux.NewRouter()
	for _, v := range p.verbs() {
		r.Methods(http.MethodPost).Path(v.path).Handler(p.serve(v))
	}
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, strings.HasPrefix(r.URL.Path, "/IpamDriver."), "no such call: "+r.URL.Path)
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, strings.HasPrefix(r.URL.Path, "/IpamDriver."), "method "+r.Method+" not allowed; use POST")
	})
	return r
}

func (p *Plugin) serve(v verb) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		resp, err := v.run(r.Context(), r)
		if err != nil {
			code := http.StatusInternalServerError
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				code = http.StatusRequestEntityTooLarge
				err = fmt.Errorf("request body larger than %d bytes", MaxBodyBytes)
			case errors.Is(err, ErrBadRequest):
				code = http.StatusBadRequest
			case errors.Is(err, ErrNotFound):
				code = http.StatusNotFound
			}
			p.log.WithError(err).WithField("status", code).Warn(v.path + " refused")
			writeError(w, code, v.ipam, v.path+": "+err.Error())
			return
		}
		p.log.Debug(v.path)
		writeJSON(w, http.StatusOK, resp)
	})
}

func writeError(w http.ResponseWriter, code int, ipam bool, msg string) {
	body := errorBody{Err: msg}
	if ipam {
		body.Error = msg
	}
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"Err":"encode answer"}`)
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// serveHTTP runs h on ln until ctx ends; keep-alives are off (each engine
// call is one connection). Requests in flight see their context cancelled
// when ctx ends and are waited for up to httpserve.ShutdownTimeout.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	srv.SetKeepAlivesEnabled(false)
	return httpserve.Serve(ctx, srv, ln)
}
