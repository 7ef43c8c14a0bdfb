package daemon

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/netplugin/tracer"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/utils/health"
	"github.com/contiv/netplugin/utils/httpmetrics"
	"github.com/contiv/netplugin/utils/profiles"
)

// serveInspect runs the REST server of docs/daemons.md §6.5 until ctx ends.
func (d *Daemon) serveInspect(ctx context.Context) error {
	r := mux.NewRouter()
	r.HandleFunc("/inspect/driver", d.inspectDriver).Methods(http.MethodGet)
	r.HandleFunc("/svcstats", d.serveSvcStats).Methods(http.MethodGet)
	r.HandleFunc("/inspect/bgp", d.inspectBgp).Methods(http.MethodGet)
	r.HandleFunc("/inspect/nameserver", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, d.names.Inspect())
	}).Methods(http.MethodGet)
	r.HandleFunc("/debug/reclaimEndpoint/{id}", d.reclaimEndpoint).Methods(http.MethodDelete)
	r.Handle("/inspect/trace", d.tracer()).Methods(http.MethodGet)
	d.addOpsRoutes(r)
	r.Use(httpmetrics.MuxRoute)

	ln, err := net.Listen("tcp", d.cfg.InspectAddress)
	if err != nil {
		return err
	}
	if d.cfg.InspectTLS != nil {
		ln = tls.NewListener(ln, d.cfg.InspectTLS)
	}
	if d.cfg.InsecureInspect {
		d.log.Warnf("INSECURE: --insecure-inspect: the inspect server on %s answers anyone who reaches it, including /debug/reclaimEndpoint (docs/security.md)", d.cfg.InspectAddress)
	}
	var h http.Handler = r
	if d.cfg.InspectToken != "" {
		h = requireToken(d.cfg.InspectToken, r)
	}
	srv := &http.Server{Handler: httpmetrics.New(d.cfg.registerer()).Wrap(h), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err = srv.Serve(ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// requireToken admits requests carrying "Authorization: Bearer <token>".
func requireToken(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="netplugin"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tracer answers /inspect/trace (netplugin/tracer).
func (d *Daemon) tracer() *tracer.Tracer {
	return tracer.New(tracer.Config{Host: d.cfg.HostLabel, Routing: d.glob.FwdMode == "routing", Locals: d.eps,
		Datapath: func(bridge string) tracer.Datapath {
			if bridge == ovsdriver.VlanBridge {
				return d.vl
			}
			return d.vx
		},
		Ports: d.drv, Unixctl: d.cfg.OVSUnixctl, OVSDB: d.cfg.OVSDBSocket})
}

func (d *Daemon) inspectDriver(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"vxlan": d.vx.State(), "vlan": d.vl.State()})
}

func (d *Daemon) serveSvcStats(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	stats, err := d.svc.Stats(ctx)
	if err != nil {
		http.Error(w, "Error fetching stats from driver: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, stats)
}

func (d *Daemon) reclaimEndpoint(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if err := d.reclaim(r.Context(), id); err != nil {
		http.Error(w, "Error deleting endpoint: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, nil)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// addOpsRoutes adds /healthz, /readyz and /metrics (docs/operations.md).
func (d *Daemon) addOpsRoutes(r *mux.Router) {
	r.Handle("/healthz", health.Alive())
	r.Handle("/readyz", health.Handler("readyz", 0,
		health.Check{Name: "store", Fn: d.checkStore},
		health.Check{Name: "leader", Fn: d.checkLeader},
		health.Check{Name: "ovs", Fn: d.checkOVS}))
	if d.cfg.Metrics != nil {
		r.Handle("/metrics", promhttp.HandlerFor(d.cfg.Metrics, promhttp.HandlerOpts{Registry: d.cfg.Metrics}))
	}
	r.PathPrefix(profiles.Prefix).Handler(profiles.Handler())
}

// checkStore: the store answers a read (a missing key is an answer).
func (d *Daemon) checkStore(ctx context.Context) error {
	if _, err := d.store.Get(ctx, "health"); err != nil && !errors.Is(err, objdb.ErrNotFound) {
		return fmt.Errorf("read from the store: %w", err)
	}
	return nil
}

// checkLeader: a netmaster leader has registered its ofnet master.
func (d *Daemon) checkLeader(ctx context.Context) error {
	list, err := d.store.GetService(ctx, "netmaster.rpc")
	if err != nil {
		return fmt.Errorf("look up the netmaster leader: %w", err)
	}
	if len(list) == 0 {
		return errors.New("no netmaster leader registered (service netmaster.rpc)")
	}
	return nil
}

// checkOVS: every bridge's switch is connected to its agent.
func (d *Daemon) checkOVS(context.Context) error {
	var down []string
	for _, a := range d.agents() {
		if s := a.Stats(); !s.Connected {
			down = append(down, s.Bridge)
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("OpenFlow switch not connected on bridge %s", strings.Join(down, ", "))
	}
	return nil
}
