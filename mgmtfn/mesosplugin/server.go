package mesosplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
)

// Config is what a Server needs.
type Config struct {
	Attacher attach.Attacher
	Checker  k8splugin.Checker
	// StateDir holds the attachment records (apart from the Kubernetes
	// CNI server's).
	StateDir string
	Log      logrus.FieldLogger
}

// Server serves the Mesos CNI API over the Kubernetes CNI server's work.
type Server struct {
	core *k8splugin.Server
	log  logrus.FieldLogger
}

// New returns a server; it touches nothing until it serves a request.
// Containers are placed by the request's labels only (Mesos has no API
// server to ask), and a repeated ADD answers the recorded result.
func New(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	core, err := k8splugin.New(k8splugin.Config{Attacher: cfg.Attacher, Checker: cfg.Checker,
		Labels: k8splugin.RequestLabels{}, StateDir: cfg.StateDir, RepeatAdd: true, Log: cfg.Log})
	if err != nil {
		return nil, fmt.Errorf("mesosplugin: %w", err)
	}
	return &Server{core: core, log: cfg.Log}, nil
}

// Serve runs the API on the unix socket (directory 0700, socket 0600, a
// stale socket replaced, a live one refused) until ctx ends.
func (s *Server) Serve(ctx context.Context, socket string) error {
	return k8splugin.ServeSocket(ctx, "Mesos CNI", socket, s)
}

// ServeListener runs the API on ln until ctx ends; it closes ln.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener) error {
	return k8splugin.ServeListener(ctx, "Mesos CNI", ln, s)
}

// ServeHTTP routes POST /MesosNwIntfAdd and /MesosNwIntfDel.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	add := false
	switch r.URL.Path {
	case PathAdd:
		add = true
	case PathDel:
	default:
		writeJSON(w, http.StatusServiceUnavailable, NewErrorReply(0, "no such route: "+r.URL.Path, ""))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, NewErrorReply(0, "method "+r.Method+" not allowed; use POST", ""))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, NewErrorReply(0, "content type "+ct+" is not application/json", ""))
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, cniapi.MaxBodyBytes)
	_, p, err := DecodeRequest(r.Body, add)
	if err != nil {
		status := http.StatusBadRequest
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		s.log.WithError(err).Warn("Mesos CNI: invalid request")
		writeJSON(w, status, NewErrorReply(cniapi.CodeFor(err), "Invalid request", err.Error()))
		return
	}
	if add {
		rsp, f := s.core.Add(r.Context(), p)
		if f != nil {
			writeJSON(w, f.Status, NewErrorReply(f.Code, f.Msg, f.Err.Error()))
			return
		}
		writeJSON(w, http.StatusOK, ReplyFor(rsp))
		return
	}
	if _, f := s.core.Del(r.Context(), p); f != nil {
		writeJSON(w, f.Status, NewErrorReply(f.Code, f.Msg, f.Err.Error()))
		return
	}
	w.WriteHeader(http.StatusOK)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"cniVersion":"0.2.0","code":999,"msg":"Contiv: encode answer"}`)
	}
	_, _ = w.Write(append(b, '\n'))
}
