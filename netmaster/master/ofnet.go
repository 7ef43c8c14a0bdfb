package master

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// DefaultOfnetClearDelay is how long a host may stay away before its
// endpoints are withdrawn (docs/daemons.md §9, host GC delay).
const DefaultOfnetClearDelay = 24 * time.Hour

// ofnetRetry is the pause before binding the ofnet port again, re-listing
// after a failed store watch, and the first AddNode retry.
const ofnetRetry = time.Second

// startOfnet runs this term's ofnet master (docs/daemons.md §5.2, §5.3; leader
// only, §10 row 15): it listens on OfnetIP:OfnetPort, tells every
// netplugin agent about itself, and pushes the policy rules of
// state/policyRule. Everything stops with ctx; close waits for it.
func (m *master) startOfnet(ctx context.Context, router *mux.Router) {
	if m.cfg.OfnetIP == "" {
		return
	}
	ocfg := ofmaster.Config{LocalIP: m.cfg.OfnetIP, Logger: m.log}
	if m.cfg.RPCTLS != nil {
		// The term's pool, closed when the term's ofnet master is done.
		ocfg.Pool = ofrpc.NewPool(ofrpc.WithTLS(m.cfg.RPCTLS.Client))
	}
	om := ofmaster.New(ocfg)
	m.ofnet = om
	router.Methods(http.MethodGet).Path("/debug/ofnet").HandlerFunc(m.serveOfnetDebug)
	m.ofnetWG.Add(1)
	go func() {
		defer m.ofnetWG.Done()
		m.runOfnet(ctx, om)
		if ocfg.Pool != nil {
			ocfg.Pool.Close()
		}
	}()
}

// runOfnet binds the port (retrying while it is taken, e.g. by the previous
// term of this process still closing), then serves and follows agents and
// rules until ctx ends.
func (m *master) runOfnet(ctx context.Context, om *ofmaster.Master) {
	addr := net.JoinHostPort(m.cfg.OfnetIP, strconv.Itoa(m.cfg.OfnetPort))
	var ln net.Listener
	for {
		var err error
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		m.log.WithError(err).WithField("addr", addr).Error("ofnet master: listen failed; retrying")
		if !sleepCtx(ctx, ofnetRetry) {
			return
		}
	}
	if m.cfg.RPCTLS != nil {
		ln = tls.NewListener(ln, m.cfg.RPCTLS.Server)
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		if err := om.Serve(ctx, ln); err != nil && ctx.Err() == nil {
			m.log.WithError(err).Error("ofnet master stopped serving")
		}
	}()
	go func() {
		defer wg.Done()
		newAgentFollower(m, om).run(ctx)
	}()
	go func() {
		defer wg.Done()
		m.followRules(ctx, om)
	}()
	wg.Wait()
}

// serveOfnetDebug is GET /debug/ofnet: the ofnet master's tables.
func (m *master) serveOfnetDebug(w http.ResponseWriter, r *http.Request) {
	b, err := json.Marshal(m.ofnet.State())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// sleepCtx waits d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
