package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// netpluginRPCTimeout bounds one call of the Netplugin RPC service.
const netpluginRPCTimeout = 20 * time.Second

// maxRPCAnswer caps an answer of the Netplugin RPC service.
const maxRPCAnswer = 4 << 20

// netpluginRPC is the "Netplugin" RPC service (ofrpc.ServiceNetplugin):
// netmaster's reclaim, trace and BGP questions, over the agent RPC's
// mutual TLS instead of the inspect server (docs/security.md). ctx is the
// daemon's run.
type netpluginRPC struct {
	d   *Daemon
	ctx context.Context
}

func (s *netpluginRPC) callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, netpluginRPCTimeout)
}

// ReclaimEndpoint removes a local endpoint that is no longer in the store.
func (s *netpluginRPC) ReclaimEndpoint(args ofrpc.ReclaimArgs, reply *bool) error {
	ctx, cancel := s.callCtx()
	defer cancel()
	*reply = true
	return s.d.reclaim(ctx, args.EndpointID)
}

// Trace answers a packet trace question (as GET /inspect/trace).
func (s *netpluginRPC) Trace(args ofrpc.TraceArgs, reply *ofrpc.HTTPAnswer) error {
	q, err := url.ParseQuery(args.Query)
	if err != nil {
		return fmt.Errorf("trace query: %w", err)
	}
	return s.serve(s.d.tracer(), "/inspect/trace?"+q.Encode(), reply)
}

// Bgp answers the BGP state (as GET /inspect/bgp).
func (s *netpluginRPC) Bgp(_ struct{}, reply *ofrpc.HTTPAnswer) error {
	return s.serve(http.HandlerFunc(s.d.inspectBgp), "/inspect/bgp", reply)
}

// serve runs an inspect handler in process and copies its answer.
func (s *netpluginRPC) serve(h http.Handler, target string, reply *ofrpc.HTTPAnswer) error {
	ctx, cancel := s.callCtx()
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Body.Len() > maxRPCAnswer {
		return fmt.Errorf("answer of %s exceeds %d bytes", target, maxRPCAnswer)
	}
	*reply = ofrpc.HTTPAnswer{Status: rec.Code, ContentType: rec.Header().Get("Content-Type"), Body: rec.Body.Bytes()}
	return nil
}

// errStillStored refuses the reclaim of an endpoint the store still holds.
var errStillStored = errors.New("the endpoint is still in the store")

// reclaim removes local endpoint epID once the store no longer holds it
// (netmaster deletes it first): a reclaim never detaches a live endpoint.
func (d *Daemon) reclaim(ctx context.Context, epID string) error {
	if epID == "" {
		return errors.New("reclaim: no endpoint id")
	}
	_, err := d.st.Endpoints.Read(ctx, epID)
	switch {
	case err == nil:
		return fmt.Errorf("reclaim endpoint %q: %w", epID, errStillStored)
	case !errors.Is(err, objdb.ErrNotFound):
		return fmt.Errorf("reclaim endpoint %q: read the store: %w", epID, err)
	}
	if err := d.removeLocal(ctx, epID); err != nil {
		return fmt.Errorf("reclaim endpoint %q: %w", epID, err)
	}
	return nil
}
