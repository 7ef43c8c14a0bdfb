package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/mux"
)

// serveInspect runs the REST server of spec §6.5 until ctx ends.
func (d *Daemon) serveInspect(ctx context.Context) error {
	r := mux.NewRouter()
	r.HandleFunc("/inspect/driver", d.inspectDriver).Methods(http.MethodGet)
	r.HandleFunc("/svcstats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, map[string]any{}) }).Methods(http.MethodGet)
	r.HandleFunc("/inspect/bgp", d.inspectBgp).Methods(http.MethodGet)
	r.HandleFunc("/inspect/nameserver", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Error fetching nameserver from driver: the embedded name server is not implemented", http.StatusInternalServerError)
	}).Methods(http.MethodGet)
	r.HandleFunc("/debug/reclaimEndpoint/{id}", d.reclaimEndpoint).Methods(http.MethodDelete)

	ln, err := net.Listen("tcp", d.cfg.InspectAddress)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
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

func (d *Daemon) inspectDriver(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"vxlan": d.vx.State(), "vlan": d.vl.State()})
}

func (d *Daemon) reclaimEndpoint(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if err := d.removeLocal(r.Context(), id); err != nil {
		http.Error(w, "Error deleting endpoint: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, nil)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
