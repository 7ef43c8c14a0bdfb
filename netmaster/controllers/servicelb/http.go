package servicelb

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// AddRoutes serves the service LB debug views GET /services and
// GET /service/{id} (docs/rest-api.md §3.8).
func (m *Controller) AddRoutes(r *mux.Router) {
	r.Methods(http.MethodGet).Path("/services").HandlerFunc(m.serveServices)
	r.Methods(http.MethodGet).Path("/service/{id}").HandlerFunc(m.serveService)
}

// serveServices answers every service record ([] when there is none).
func (m *Controller) serveServices(w http.ResponseWriter, r *http.Request) {
	recs, _, err := m.st.ServiceLBs.ReadAll(r.Context())
	if errors.Is(err, objdb.ErrNotFound) {
		recs, err = nil, nil
	}
	if err != nil {
		m.serviceViewError(w, r, err)
		return
	}
	if recs == nil {
		recs = []state.ServiceLB{}
	}
	writeServiceView(w, recs)
}

// serveService answers the one record in an array, or null (status 200)
// for an unknown service, as the original did (Appendix A Q12).
func (m *Controller) serveService(w http.ResponseWriter, r *http.Request) {
	id, err := contivmodel.PathVar(r, "id")
	var rec state.ServiceLB
	if err == nil {
		rec, err = m.st.ServiceLBs.Read(r.Context(), id)
	}
	switch {
	case errors.Is(err, objdb.ErrNotFound) || errors.Is(err, objdb.ErrInvalid) || errors.Is(err, contivmodel.ErrInvalid):
		writeServiceView(w, nil)
	case err != nil:
		m.serviceViewError(w, r, err)
	default:
		writeServiceView(w, []state.ServiceLB{rec})
	}
}

func (m *Controller) serviceViewError(w http.ResponseWriter, r *http.Request, err error) {
	m.log.WithError(err).WithField("path", r.URL.Path).Info("service view failed")
	http.Error(w, contivmodel.Message(apierr.Store("read service states", err)), http.StatusInternalServerError)
}

// writeServiceView writes the JSON without a trailing newline and without
// an explicit Content-Type (the original's answer is sniffed as text).
func writeServiceView(w http.ResponseWriter, recs []state.ServiceLB) {
	b, err := json.Marshal(recs)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(b)
}
