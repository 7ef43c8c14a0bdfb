package contivmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"

	"github.com/gorilla/mux"
)

// MaxBodyBytes bounds a create/update request body.
const MaxBodyBytes = 4 << 20

// NewRouter returns a gorilla/mux router serving the model routes of every
// registered kind (spec rest-api.md §1.2, §1.3):
//
//	GET              /api/v1/<plural>/             list
//	GET              /api/v1/<plural>/{key}/       get
//	POST, PUT        /api/v1/<plural>/{key}/       create or update
//	DELETE           /api/v1/<plural>/{key}/       delete
//	GET              /api/v1/inspect/<plural>/{key}/  inspect
//
// Paths match the decoded URL path exactly (trailing slash mandatory, no
// redirect); a non-canonical path is answered 301 to its cleaned form; an
// unknown path or an unregistered method is 404 "404 page not found". The
// netmaster adds its other routes (/version, /info, …) to the returned
// router, and the /plugin/* routes with HandlePlugin.
func NewRouter(r *Registry) *mux.Router {
	router := mux.NewRouter()
	router.NotFoundHandler = http.NotFoundHandler()
	router.MethodNotAllowedHandler = http.NotFoundHandler()
	r.AddRoutes(router)
	return router
}

// HandlePlugin registers a /plugin/* route: POST only, and only when the
// request's Content-Type is exactly "application/json" (anything else is
// 404, spec §1.3, §3.0).
func HandlePlugin(router *mux.Router, path string, h http.Handler) *mux.Route {
	return router.Handle(path, h).Methods(http.MethodPost).Headers("Content-Type", "application/json")
}

// AddRoutes adds the model routes of every registered kind to router.
func (r *Registry) AddRoutes(router *mux.Router) {
	r.mu.RLock()
	entries := append([]entry(nil), r.entries...)
	r.mu.RUnlock()
	for _, e := range entries {
		s := e.schema()
		if !s.inspectOnly {
			list := "/api/v1/" + s.plural + "/"
			item := list + "{key}/"
			router.Handle(list, r.serve("list", s.name, func(*http.Request, string) (any, error) {
				return r.listRaw(s.name), nil
			})).Methods(http.MethodGet)
			router.Handle(item, r.serve("get", s.name, func(_ *http.Request, key string) (any, error) {
				raw, ok := r.cached(s.name, key)
				if !ok {
					return nil, NotFound(s.name)
				}
				return json.RawMessage(raw), nil
			})).Methods(http.MethodGet)
			router.Handle(item, r.serve("upsert", s.name, func(req *http.Request, key string) (any, error) {
				return e.httpUpsert(req.Context(), key, req.Body)
			})).Methods(http.MethodPost, http.MethodPut)
			router.Handle(item, r.serve("delete", s.name, func(req *http.Request, key string) (any, error) {
				if err := e.httpDelete(req.Context(), key); err != nil {
					return nil, err
				}
				return key, nil
			})).Methods(http.MethodDelete)
		}
		router.Handle("/api/v1/inspect/"+s.plural+"/{key}/", r.serve("inspect", s.name, func(req *http.Request, key string) (any, error) {
			return e.httpInspect(req.Context(), key)
		})).Methods(http.MethodGet)
	}
}

// serve adapts an operation to HTTP: success is 200 application/json with
// the JSON value and "\n"; failure is 500 text/plain with the error's
// client message and "\n" (spec §1.6, §1.7).
func (r *Registry) serve(op, typ string, fn func(req *http.Request, key string) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		key := mux.Vars(req)["key"]
		req.Body = http.MaxBytesReader(w, req.Body, MaxBodyBytes)
		log := r.log.WithFields(map[string]any{"op": op, "type": typ, "key": key})
		v, err := fn(req, key)
		var buf bytes.Buffer
		if err == nil {
			if err = json.NewEncoder(&buf).Encode(v); err != nil {
				err = fmt.Errorf("encode answer: %w", err)
			}
		}
		if err != nil {
			log.WithError(err).Info("model request refused")
			http.Error(w, Message(err), http.StatusInternalServerError)
			return
		}
		log.Debug("model request served")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if _, err := w.Write(buf.Bytes()); err != nil {
			log.WithError(err).Debug("write answer")
		}
	})
}

func (c *collection[T]) httpUpsert(ctx context.Context, key string, body io.Reader) (any, error) {
	obj := c.newObj()
	if err := json.NewDecoder(body).Decode(obj); err != nil {
		return nil, fmt.Errorf("decode %s %q: %w", c.s.name, key,
			&Error{Msg: err.Error(), Err: fmt.Errorf("%w: %w", ErrInvalid, err)})
	}
	v := reflect.ValueOf(obj).Elem()
	c.s.setKey(v, key)
	c.s.clearLinks(v)
	return c.upsert(ctx, obj)
}

func (c *collection[T]) httpDelete(ctx context.Context, key string) error {
	return c.r.Update(ctx, func(ctx context.Context, tx *Tx) error {
		return c.removeIn(ctx, tx, key)
	})
}

// inspectAnswer is {"Config":…,"Oper":…}; a nil member is left out.
type inspectAnswer[T any] struct {
	Config *T  `json:"Config,omitempty"`
	Oper   any `json:"Oper,omitempty"`
}

func (c *collection[T]) httpInspect(ctx context.Context, key string) (any, error) {
	if c.s.inspectOnly {
		obj := c.newObj()
		c.s.setKey(reflect.ValueOf(obj).Elem(), key)
		oper, err := c.oper(ctx, obj)
		if err != nil {
			return nil, err
		}
		return inspectAnswer[T]{Oper: oper}, nil
	}
	obj, err := c.get(c.r.view(), key)
	if err != nil {
		return nil, err
	}
	if !c.s.hasOper {
		return inspectAnswer[T]{Config: obj}, nil
	}
	oper, err := c.oper(ctx, obj)
	if err != nil {
		return nil, err
	}
	return inspectAnswer[T]{Config: obj, Oper: oper}, nil
}

// oper runs the Oper callback on a read-only view; empty state is {}.
func (c *collection[T]) oper(ctx context.Context, obj *T) (any, error) {
	key := c.s.key(reflect.ValueOf(obj).Elem())
	if c.cb == nil {
		return nil, fmt.Errorf("inspect %s %q: %w", c.s.name, key, noController())
	}
	var oper any
	err := c.r.View(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		oper, err = c.cb.Oper(ctx, tx, obj)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("inspect %s %q: %w", c.s.name, key, err)
	}
	if oper == nil || isNilValue(oper) {
		oper = struct{}{}
	}
	return oper, nil
}
