package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
)

// bgpCtl is the Bgp controller (docs/rest-api.md §2.12, docs/daemons.md §4.13):
// each object is mirrored to state/bgp/<hostname>, which the netplugin of
// that host watches.
type bgpCtl struct{ m *Objects }

// checkBgp applies the create/update refusals.
func checkBgp(tx *contivmodel.Tx, b *contivmodel.Bgp) error {
	if b.Hostname == "" {
		return contivmodel.Invalidf("Invalid host name")
	}
	if isACI(tx) {
		return contivmodel.Errorf("not supported in ACI fabric mode")
	}
	for _, f := range []struct{ name, v string }{{"as", b.As}, {"neighbor-as", b.NeighborAs}} {
		if !validAS(f.v) {
			return contivmodel.Invalidf("Invalid %s %q: want an AS number 1-4294967294", f.name, f.v)
		}
	}
	return nil
}

// validAS accepts a decimal 4-byte AS number other than the reserved 0 and
// 4294967295 (docs/compat.md: the original stored any text).
func validAS(s string) bool {
	n, err := strconv.ParseUint(s, 10, 32)
	return err == nil && n != 0 && n != 4294967295
}

// writeBgp writes the per-host state of b, restoring the previous value if
// the transaction aborts.
func (c bgpCtl) writeBgp(ctx context.Context, tx *contivmodel.Tx, b *contivmodel.Bgp) error {
	m := c.m
	undo, err := m.eps.Snapshot(ctx, m.st.Bgp.Key(b.Hostname))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	_, err = m.st.Bgp.Write(ctx, state.Bgp{
		Common:     state.Common{ID: b.Hostname},
		Hostname:   b.Hostname,
		RouterIP:   b.Routerip,
		As:         b.As,
		NeighborAs: b.NeighborAs,
		Neighbor:   b.Neighbor,
	})
	return err
}

// Create writes the host's BGP state.
func (c bgpCtl) Create(ctx context.Context, tx *contivmodel.Tx, b *contivmodel.Bgp) error {
	if err := checkBgp(tx, b); err != nil {
		return err
	}
	return c.writeBgp(ctx, tx, b)
}

// Update rewrites the host's BGP state and replaces the stored fields.
func (c bgpCtl) Update(ctx context.Context, tx *contivmodel.Tx, stored, req *contivmodel.Bgp) error {
	if err := checkBgp(tx, req); err != nil {
		return err
	}
	if err := c.writeBgp(ctx, tx, req); err != nil {
		return err
	}
	stored.Hostname, stored.Routerip = req.Hostname, req.Routerip
	stored.As, stored.NeighborAs, stored.Neighbor = req.As, req.NeighborAs, req.Neighbor
	return nil
}

// Delete removes the host's BGP state, which must exist.
func (c bgpCtl) Delete(ctx context.Context, tx *contivmodel.Tx, b *contivmodel.Bgp) error {
	m := c.m
	if _, err := m.st.Bgp.Read(ctx, b.Hostname); err != nil {
		return err
	}
	undo, err := m.eps.Snapshot(ctx, m.st.Bgp.Key(b.Hostname))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	return m.st.Bgp.Clear(ctx, b.Hostname)
}

// bgpAgentAddr finds the netplugin registered for hostname, falling back
// to the local host.
func (c bgpCtl) bgpAgentAddr(ctx context.Context, hostname string) string {
	kvs, err := c.m.kv.List(ctx, objdb.ServicePrefix("netplugin"))
	if err != nil {
		c.m.log.WithError(err).Warn("list netplugin services")
	}
	for _, kv := range kvs {
		var info objdb.ServiceInfo
		if json.Unmarshal(kv.Value, &info) == nil && info.Hostname == hostname && info.HostAddr != "" {
			return info.HostAddr
		}
	}
	return "localhost"
}

// Bounds of the agent's Netplugin.Bgp call.
const (
	bgpInspectTimeout = 10 * time.Second
	maxBgpInspect     = 8 << 20
)

// bgpInspect is the part of the agent's /inspect/bgp answer used here.
type bgpInspect struct {
	Peers []struct {
		State struct {
			SessionState any
			AdminState   any
		}
	}
	Dsts []string
}

// Oper fetches the live BGP state from the host's agent.
func (c bgpCtl) Oper(ctx context.Context, _ *contivmodel.Tx, b *contivmodel.Bgp) (any, error) {
	addr := c.bgpAgentAddr(ctx, b.Hostname)
	cctx, cancel := context.WithTimeout(ctx, bgpInspectTimeout)
	defer cancel()
	var ans ofrpc.HTTPAnswer
	if err := c.m.eps.CallAgent(cctx, addr, ofrpc.NetpluginBgp, struct{}{}, &ans); err != nil {
		return nil, fmt.Errorf("fetch bgp state of %s: %w", b.Hostname, err)
	}
	body := ans.Body
	if len(body) > maxBgpInspect {
		return nil, contivmodel.Errorf("bgp state of %s: the agent's answer exceeds %d bytes", b.Hostname, maxBgpInspect)
	}
	// The agent's errors reach the client verbatim (docs/rest-api.md §2.12).
	switch ans.Status {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, contivmodel.Errorf("page not found")
	case http.StatusForbidden:
		return nil, contivmodel.Errorf("access denied")
	case http.StatusInternalServerError:
		return nil, &contivmodel.Error{Msg: strings.TrimSpace(string(body))}
	default:
		return nil, &contivmodel.Error{Msg: fmt.Sprintf("%d %s", ans.Status, http.StatusText(ans.Status))}
	}
	var in bgpInspect
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, contivmodel.Errorf("decode bgp inspect of %s: %w", b.Hostname, err)
	}
	op := &contivmodel.BgpOper{Routes: in.Dsts, NumRoutes: len(in.Dsts)}
	if len(in.Peers) > 0 {
		op.NeighborStatus = operString(in.Peers[0].State.SessionState)
		op.AdminStatus = operString(in.Peers[0].State.AdminState)
	}
	return op, nil
}

// operString renders a JSON scalar (string or number) as text.
func operString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}
