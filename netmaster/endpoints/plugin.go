package endpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/contiv/netplugin/api/pluginapi"
	"github.com/contiv/netplugin/contivmodel"
)

// addPluginRoutes serves the five /plugin/* calls of the agents, each
// through pluginHandler:
//   - allocAddress (alloc.go): hand out an address without an endpoint;
//   - releaseAddress (release.go): give such an address back, refusing owned ones;
//   - createEndpoint (create.go): allocate addresses and write an endpoint;
//   - deleteEndpoint (delete.go): remove an endpoint and free what it held;
//   - updateEndpoint (update.go): record a container's start or death.
func (m *Service) addPluginRoutes(r *mux.Router, reg *contivmodel.Registry) {
	contivmodel.HandlePlugin(r, pluginapi.PathAllocAddress, pluginHandler(m, reg, m.allocAddress))
	contivmodel.HandlePlugin(r, pluginapi.PathReleaseAddress, pluginHandler(m, reg, m.releaseAddress))
	contivmodel.HandlePlugin(r, pluginapi.PathCreateEndpoint, pluginHandler(m, reg, m.createEndpoint))
	contivmodel.HandlePlugin(r, pluginapi.PathDeleteEndpoint, pluginHandler(m, reg, m.deleteEndpoint))
	contivmodel.HandlePlugin(r, pluginapi.PathUpdateEndpoint, pluginHandler(m, reg, m.updateEndpoint))
}

// pluginHandler decodes the request (case-insensitive member names), runs
// fn and answers 200 JSON + "\n", or text/plain with the message and the
// status of the registry's classification (docs/rest-errors.md).
func pluginHandler[Req, Resp any](m *Service, reg *contivmodel.Registry, fn func(ctx context.Context, req *Req) (Resp, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Req
		body, err := contivmodel.ReadBody(w, r, reg.MaxBodyBytes())
		if err == nil {
			if uerr := json.Unmarshal(body, &req); uerr != nil {
				err = &contivmodel.Error{Msg: "decode request: " + uerr.Error(), Err: fmt.Errorf("%w: %w", contivmodel.ErrInvalid, uerr)}
			}
		}
		var out bytes.Buffer
		if err == nil {
			var resp Resp
			if resp, err = fn(r.Context(), &req); err == nil {
				err = json.NewEncoder(&out).Encode(resp)
			}
		}
		if err != nil {
			status := reg.Status(err)
			m.log.WithError(err).WithFields(map[string]any{"path": r.URL.Path, "status": status}).Info("plugin request failed")
			http.Error(w, pluginMessage(err), status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out.Bytes())
	})
}

// pluginMessage is the text of a failed request's answer.
func pluginMessage(err error) string {
	return contivmodel.Message(err)
}
