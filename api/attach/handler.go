package attach

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/sirupsen/logrus"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 1 << 20

// Routes of the API.
const (
	PathAttach = "/attach"
	PathDetach = "/detach"
)

// Attacher does the work. An error wrapping ErrInvalidRequest is answered
// 400, any other 500; Detach of an endpoint already gone should succeed.
type Attacher interface {
	Attach(ctx context.Context, req Request) (Result, error)
	Detach(ctx context.Context, req DetachRequest) error
}

// errorBody is every non-200 answer.
type errorBody struct {
	Error string `json:"error"`
}

// NewHandler serves POST /attach and POST /detach with JSON bodies (at
// most MaxBodyBytes). Requests are decoded and validated before a reaches
// them: bad JSON or an invalid field → 400 {"error":...}; a failing
// Attacher → 500 {"error":...}; another method → 405; another path → 404.
func NewHandler(a Attacher, log logrus.FieldLogger) http.Handler {
	if log == nil {
		log = logrus.StandardLogger()
	}
	return &handler{a: a, log: log}
}

type handler struct {
	a   Attacher
	log logrus.FieldLogger
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != PathAttach && r.URL.Path != PathDetach {
		writeJSON(w, http.StatusNotFound, errorBody{"no such route: " + r.URL.Path})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{"method " + r.Method + " not allowed; use POST"})
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, errorBody{"content type " + ct + " is not application/json"})
			return
		}
	}
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if r.URL.Path == PathAttach {
		h.attach(w, r, body)
	} else {
		h.detach(w, r, body)
	}
}

func (h *handler) attach(w http.ResponseWriter, r *http.Request, body io.Reader) {
	req, err := DecodeRequest(body)
	if err != nil {
		h.fail(w, "attach", logrus.Fields{}, err)
		return
	}
	fields := logrus.Fields{"tenant": req.Tenant, "network": req.Network, "container": req.ContainerID}
	res, err := h.a.Attach(r.Context(), req)
	if err != nil {
		h.fail(w, "attach", fields, err)
		return
	}
	h.log.WithFields(fields).WithField("endpoint", res.EndpointID).Info("attach done")
	writeJSON(w, http.StatusOK, res)
}

func (h *handler) detach(w http.ResponseWriter, r *http.Request, body io.Reader) {
	req, err := DecodeDetachRequest(body)
	if err != nil {
		h.fail(w, "detach", logrus.Fields{}, err)
		return
	}
	fields := logrus.Fields{"tenant": req.Tenant, "network": req.Network, "container": req.ContainerID}
	if err := h.a.Detach(r.Context(), req); err != nil {
		h.fail(w, "detach", fields, err)
		return
	}
	h.log.WithFields(fields).Info("detach done")
	writeJSON(w, http.StatusOK, struct{}{})
}

// fail answers err with the status its kind calls for.
func (h *handler) fail(w http.ResponseWriter, op string, fields logrus.Fields, err error) {
	code := http.StatusInternalServerError
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		code = http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrInvalidRequest):
		code = http.StatusBadRequest
	}
	h.log.WithFields(fields).WithError(err).WithField("status", code).Warn(op + " failed")
	writeJSON(w, code, errorBody{err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encode answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
