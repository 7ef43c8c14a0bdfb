package daemon

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
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/ofnet/pipeline"
	"github.com/contiv/netplugin/ofnet/unixctl"
)

// traceTimeout bounds one ofproto/trace call.
const traceTimeout = 10 * time.Second

// errNoEndpoint: the trace's endpoint is not attached here.
var errNoEndpoint = errors.New("no such endpoint on this host")

// serveTrace answers GET /inspect/trace?endpoint=&dst=&proto=&port=
// (docs/operations.md, "Packet trace"): 400 for bad input, 404 for an
// endpoint not on this host, 200 with a trace.Result.
func (d *Daemon) serveTrace(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req, err := trace.ParseRequest(q.Get("endpoint"), q.Get("dst"), q.Get("proto"), q.Get("port"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res, err := d.trace(r.Context(), req)
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
func (d *Daemon) findLocal(key string) (*localEndpoint, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if le, ok := d.locals[key]; ok {
		return le, nil
	}
	var found []*localEndpoint
	for id, le := range d.locals {
		if le.ep.ContainerID == key {
			return le, nil
		}
		if strings.Contains(id, key) {
			found = append(found, le)
		}
	}
	switch len(found) {
	case 0:
		return nil, errNoEndpoint
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%q matches %d endpoints on this host; give more of the id", key, len(found))
}

// trace asks ovs-vswitchd to trace req's packet from its endpoint.
func (d *Daemon) trace(ctx context.Context, req trace.Request) (trace.Result, error) {
	le, err := d.findLocal(req.Endpoint)
	if err != nil {
		return trace.Result{}, err
	}
	src, err := netip.ParseAddr(le.ep.IPAddress)
	if err != nil {
		return trace.Result{}, fmt.Errorf("endpoint %s has no IPv4 address", le.ep.ID)
	}
	a := d.vx
	if le.bridge == ovsdriver.VlanBridge {
		a = d.vl
	}
	dstMAC, known := a.MACOf(net.IP(req.Dst.AsSlice()))
	if d.glob.FwdMode == "routing" && le.bridge == ovsdriver.VxlanBridge {
		dstMAC = agent.RouterMAC()
	} else if !known {
		dstMAC = agent.RouterMAC()
	}
	sock, err := d.vswitchdSocket()
	if err != nil {
		return trace.Result{}, err
	}
	flow := req.FlowSpec(le.port.OFPort, le.ep.MacAddress, dstMAC.String(), src)
	tctx, cancel := context.WithTimeout(ctx, traceTimeout)
	defer cancel()
	text, err := unixctl.Call(tctx, sock, "ofproto/trace", le.bridge, flow)
	if err != nil {
		return trace.Result{}, fmt.Errorf("ofproto/trace %s %s: %w", le.bridge, flow, err)
	}
	p, err := trace.Parse(text)
	if err != nil {
		return trace.Result{}, err
	}
	for i := range p.Hops {
		h := &p.Hops[i]
		if h.Bridge != le.bridge {
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
	res := trace.Result{Endpoint: le.ep.ID, Host: d.cfg.HostLabel, Bridge: le.bridge, InPort: le.port.OFPort,
		Packet: req.Packet(src), KnownDestination: known}
	if out := p.Output(le.bridge); out != 0 {
		res.OutPort = out
		if pi, ok := d.drv.PortByOFPort(le.bridge, out); ok {
			res.OutPortName, res.RemoteIP = pi.Name, pi.RemoteIP
			res.Tunnel = pi.Type == "vxlan"
		}
	}
	res.Decide(p)
	return res, nil
}

// vswitchdSocket is ovs-vswitchd's control socket: --ovs-unixctl, or
// found next to the OVSDB socket.
func (d *Daemon) vswitchdSocket() (string, error) {
	if d.cfg.OVSUnixctl != "" {
		return d.cfg.OVSUnixctl, nil
	}
	db := strings.TrimPrefix(d.cfg.OVSDBSocket, "unix:")
	if strings.HasPrefix(db, "tcp:") {
		return "", errors.New("OVSDB is reached over TCP: give ovs-vswitchd's control socket with --ovs-unixctl")
	}
	return unixctl.VswitchdSocket(filepath.Dir(db))
}
