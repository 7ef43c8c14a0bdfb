// Package tracer answers netplugin's packet traces (docs/operations.md,
// "Packet trace"): ovs-vswitchd traces a packet from a local endpoint, and
// the hops are named by the pipeline's tables and the datapath's cookies.
package tracer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/contiv/netplugin/api/trace"
	"github.com/contiv/netplugin/netplugin/attachsvc"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/ofnet/pipeline"
	"github.com/contiv/netplugin/ofnet/unixctl"
)

// Datapath is what a trace reads of a bridge's agent.
type Datapath interface {
	DescribeCookie(cookie uint64) (category, object string)
	MACOf(ip net.IP) (net.HardwareAddr, bool)
}

// Locals finds a local endpoint (*attachsvc.Service).
type Locals interface {
	Find(key string) (le attachsvc.Local, n int)
}

// Ports names an OpenFlow port (*ovsdriver.Driver).
type Ports interface {
	PortByOFPort(bridge string, ofport uint32) (ovsdriver.PortInfo, bool)
}

// Config is what the tracer reads.
type Config struct {
	Host     string // this host's label
	Routing  bool   // the cluster's forwarding mode is routing
	Locals   Locals
	Datapath func(bridge string) Datapath
	Ports    Ports
	Unixctl  string // ovs-vswitchd's control socket ("": next to OVSDB)
	OVSDB    string // the OVSDB socket
}

// Tracer answers traces.
type Tracer struct{ cfg Config }

// New makes the tracer of cfg.
func New(cfg Config) *Tracer { return &Tracer{cfg: cfg} }

// traceTimeout bounds one ofproto/trace call.
const traceTimeout = 10 * time.Second

// errNoEndpoint: the trace's endpoint is not attached here.
var errNoEndpoint = errors.New("no such endpoint on this host")

// ServeHTTP answers GET /inspect/trace?endpoint=&dst=&proto=&port=
// (docs/operations.md, "Packet trace"): 400 for bad input, 404 for an
// endpoint not on this host, 200 with a trace.Result.
func (t *Tracer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req, err := trace.ParseRequest(q.Get("endpoint"), q.Get("dst"), q.Get("proto"), q.Get("port"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res, err := t.Trace(r.Context(), req)
	switch {
	case errors.Is(err, errNoEndpoint):
		http.Error(w, fmt.Sprintf("trace: endpoint %q: %v", req.Endpoint, err), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, "trace: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// findLocal finds a local endpoint by id, container id, or a part of
// either that only one endpoint has.
func (t *Tracer) findLocal(key string) (attachsvc.Local, error) {
	le, n := t.cfg.Locals.Find(key)
	switch n {
	case 0:
		return le, errNoEndpoint
	case 1:
		return le, nil
	}
	return le, fmt.Errorf("%q matches %d endpoints on this host; give more of the id", key, n)
}

// Trace asks ovs-vswitchd to trace req's packet from its endpoint.
func (t *Tracer) Trace(ctx context.Context, req trace.Request) (trace.Result, error) {
	le, err := t.findLocal(req.Endpoint)
	if err != nil {
		return trace.Result{}, err
	}
	src, err := netip.ParseAddr(le.EP.IPAddress)
	if err != nil {
		return trace.Result{}, fmt.Errorf("endpoint %s has no IPv4 address", le.EP.ID)
	}
	a := t.cfg.Datapath(le.Bridge)
	dstMAC, known := a.MACOf(net.IP(req.Dst.AsSlice()))
	if t.cfg.Routing && le.Bridge == ovsdriver.VxlanBridge {
		dstMAC = agent.RouterMAC()
	} else if !known {
		dstMAC = agent.RouterMAC()
	}
	sock, err := t.vswitchdSocket()
	if err != nil {
		return trace.Result{}, err
	}
	flow := req.FlowSpec(le.Port.OFPort, le.EP.MacAddress, dstMAC.String(), src)
	tctx, cancel := context.WithTimeout(ctx, traceTimeout)
	defer cancel()
	text, err := unixctl.Call(tctx, sock, "ofproto/trace", le.Bridge, flow)
	if err != nil {
		return trace.Result{}, fmt.Errorf("ofproto/trace %s %s: %w", le.Bridge, flow, err)
	}
	p, err := trace.Parse(text)
	if err != nil {
		return trace.Result{}, err
	}
	for i := range p.Hops {
		h := &p.Hops[i]
		if h.Bridge != le.Bridge {
			continue
		}
		h.TableName = pipeline.TableID(h.Table).String()
		if c, err := strconv.ParseUint(strings.TrimPrefix(h.Cookie, "0x"), 16, 64); err == nil && c != 0 {
			if cat, obj := a.DescribeCookie(c); obj != "" {
				h.Object = cat + " " + obj
			} else {
				h.Object = cat
			}
		}
	}
	res := trace.Result{Endpoint: le.EP.ID, Host: t.cfg.Host, Bridge: le.Bridge, InPort: le.Port.OFPort,
		Packet: req.Packet(src), KnownDestination: known}
	if out := p.Output(le.Bridge); out != 0 {
		res.OutPort = out
		if pi, ok := t.cfg.Ports.PortByOFPort(le.Bridge, out); ok {
			res.OutPortName, res.RemoteIP = pi.Name, pi.RemoteIP
			res.Tunnel = pi.Type == "vxlan"
		}
	}
	res.Decide(p)
	return res, nil
}

// vswitchdSocket is ovs-vswitchd's control socket: --ovs-unixctl, or
// found next to the OVSDB socket.
func (t *Tracer) vswitchdSocket() (string, error) {
	if t.cfg.Unixctl != "" {
		return t.cfg.Unixctl, nil
	}
	db := strings.TrimPrefix(t.cfg.OVSDB, "unix:")
	if strings.HasPrefix(db, "tcp:") {
		return "", errors.New("OVSDB is reached over TCP: give ovs-vswitchd's control socket with --ovs-unixctl")
	}
	return unixctl.VswitchdSocket(filepath.Dir(db))
}
