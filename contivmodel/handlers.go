package contivmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/contiv/netplugin/utils/problem"
)

// MaxBodyBytes is the default bound on a request body (WithMaxBodyBytes).
const MaxBodyBytes = 4 << 20

// maxKeyLen bounds a key taken from a URL.
const maxKeyLen = 1024

// NewRouter returns a gorilla/mux router serving the model routes of every
// registered kind (docs/rest-api.md §1.2, §1.3):
//
//	GET              /api/v1/<plural>/             list
//	GET              /api/v1/<plural>/{key}/       get
//	POST, PUT        /api/v1/<plural>/{key}/       create or update
//	DELETE           /api/v1/<plural>/{key}/       delete
//	GET              /api/v1/inspect/<plural>/{key}/  inspect
//
// Paths match the URL path as sent, still percent-encoded, and are never
// cleaned or redirected (docs/rest-errors.md): "//", "/./" or "/../" make
// a path that matches no route (404), and the {key} segment is decoded and
// checked by the handler, so an encoded "/" or a "." or ".." key is a 400
// refusal instead of a redirect to another object. Route variables of the
// routes the netmaster adds are therefore still encoded: read them with
// PathVar. An unknown path or an unregistered method is 404 "404 page not
// found". The netmaster adds its other routes (/version, /info, …) to the
// returned router, and the /plugin/* routes with HandlePlugin.
func NewRouter(r *Registry) *mux.Router {
	router := mux.NewRouter()
	router.SkipClean(true)
	router.UseEncodedPath()
	router.NotFoundHandler = problem.NoRouteHandler()
	router.MethodNotAllowedHandler = problem.NoRouteHandler()
	r.AddRoutes(router)
	return router
}

// PathVar returns the decoded route variable name of req, checked as a
// key (CheckKey).
func PathVar(req *http.Request, name string) (string, error) {
	return CheckKey(mux.Vars(req)[name])
}

// CheckKey decodes a percent-encoded URL path segment and checks that it
// can name an object: not empty, not "." or "..", no "/", valid UTF-8, no
// control characters, at most 1024 bytes. Refusals are ErrInvalid errors
// naming the key.
func CheckKey(raw string) (string, error) {
	key, err := url.PathUnescape(raw)
	if err != nil {
		return "", Invalidf("invalid key %q in URL: bad percent-encoding", raw)
	}
	switch {
	case key == "":
		return "", Invalidf("empty key in URL")
	case len(key) > maxKeyLen:
		return "", Invalidf("key in URL is longer than %d bytes", maxKeyLen)
	case !utf8.ValidString(key):
		return "", Invalidf("key %q in URL is not valid UTF-8", key)
	case key == "." || key == "..":
		return "", Invalidf("invalid key %q in URL: a relative path element", key)
	case strings.Contains(key, "/"):
		return "", Invalidf("invalid key %q in URL: contains \"/\"", key)
	case strings.IndexFunc(key, unicode.IsControl) >= 0:
		return "", Invalidf("invalid key %q in URL: contains a control character", key)
	}
	return key, nil
}

// ReadBody reads a request body of at most limit bytes. A body that is
// too large (413), does not arrive within the server's read timeout (408),
// ends before its Content-Length or is not valid UTF-8 (400) is refused
// with an error saying so; nothing of it is processed.
func ReadBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	tooLargeErr := &Error{Msg: fmt.Sprintf("request body exceeds %d bytes", limit), Err: ErrTooLarge}
	if req.ContentLength > limit {
		// Refused before reading it; the connection is not reused.
		w.Header().Set("Connection", "close")
		return nil, tooLargeErr
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, limit))
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case err == nil:
	case errors.As(err, &tooLarge):
		return nil, tooLargeErr
	case errors.As(err, &netErr) && netErr.Timeout():
		return nil, &Error{Msg: fmt.Sprintf("request body not received in time: %d bytes read", len(body)),
			Err: fmt.Errorf("%w: %w", ErrTimeout, err)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, Invalidf("request body ends after %d of its %d bytes (Content-Length)", len(body), req.ContentLength)
	default:
		return nil, &Error{Msg: "read request body: " + err.Error(), Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	if !utf8.Valid(body) {
		return nil, Invalidf("request body is not valid UTF-8 (byte %d)", invalidUTF8At(body))
	}
	if at, esc := loneSurrogate(body); at >= 0 {
		return nil, Invalidf("request body has an unpaired UTF-16 surrogate %s (byte %d)", esc, at)
	}
	return body, nil
}

// loneSurrogate finds a \uD800-\uDFFF escape that is not half of a
// surrogate pair (JSON decoding would silently make it U+FFFD); it returns
// its offset and text, or -1.
func loneSurrogate(b []byte) (int, string) {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range b[i+2 : i+6] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	for i := 0; i < len(b); {
		if b[i] != '\\' {
			i++
			continue
		}
		r, ok := hex4(i)
		if !ok {
			i += 2 // another escape, or a malformed one the decoder reports
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 12
				continue
			}
			return i, string(b[i : i+6])
		case r >= 0xDC00 && r <= 0xDFFF:
			return i, string(b[i : i+6])
		}
		i += 6
	}
	return -1, ""
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// HandlePlugin registers a /plugin/* route: POST only, and only when the
// request's Content-Type is exactly "application/json" (anything else is
// 404, docs/rest-api.md §1.3, §3.0).
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
			router.Handle(list, r.serve("list", s.name, func(http.ResponseWriter, *http.Request, string) (any, error) {
				return r.listRaw(s.name), nil
			})).Methods(http.MethodGet)
			router.Handle(item, r.serve("get", s.name, func(_ http.ResponseWriter, _ *http.Request, key string) (any, error) {
				raw, ok := r.cached(s.name, key)
				if !ok {
					return nil, NotFound(s.name)
				}
				return json.RawMessage(raw), nil
			})).Methods(http.MethodGet)
			router.Handle(item, r.serve("upsert", s.name, func(w http.ResponseWriter, req *http.Request, key string) (any, error) {
				body, err := ReadBody(w, req, r.maxBody)
				if err != nil {
					return nil, err
				}
				return e.httpUpsert(req.Context(), key, body)
			})).Methods(http.MethodPost, http.MethodPut)
			router.Handle(item, r.serve("delete", s.name, func(w http.ResponseWriter, req *http.Request, key string) (any, error) {
				if _, ok := r.cached(s.name, key); !ok {
					// Not 404: the original's Go client takes a DELETE
					// 404 as success (docs/rest-errors.md).
					return nil, &Error{Msg: s.name + " not found", Err: ErrConflict}
				}
				if err := e.httpDelete(req.Context(), key); err != nil {
					return nil, err
				}
				return key, nil
			})).Methods(http.MethodDelete)
		}
		router.Handle("/api/v1/inspect/"+s.plural+"/{key}/", r.serve("inspect", s.name, func(w http.ResponseWriter, req *http.Request, key string) (any, error) {
			return e.httpInspect(req.Context(), key)
		})).Methods(http.MethodGet)
	}
}

// serve adapts an operation to HTTP: success is 200 application/json with
// the JSON value and "\n"; failure is text/plain with the error's client
// message and "\n", with the status of Registry.Status (docs/rest-api.md §1.6, §1.7,
// docs/rest-errors.md). The key is decoded and checked first (CheckKey),
// and the body (read by the upsert only) is read whole, bounded and
// checked (ReadBody) before anything is decoded.
func (r *Registry) serve(op, typ string, fn func(w http.ResponseWriter, req *http.Request, key string) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, hasKey := mux.Vars(req)["key"]
		log := r.log.WithFields(map[string]any{"op": op, "type": typ, "key": raw})
		var key string
		var err error
		if hasKey {
			key, err = CheckKey(raw)
		}
		var v any
		if err == nil {
			v, err = fn(w, req, key)
		}
		var buf bytes.Buffer
		if err == nil {
			if err = json.NewEncoder(&buf).Encode(v); err != nil {
				err = fmt.Errorf("encode answer: %w", err)
			}
		}
		if err != nil {
			status := r.Status(err)
			log.WithError(err).WithField("status", status).Info("model request refused")
			http.Error(w, Message(err), status)
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

func (c *collection[T]) httpUpsert(ctx context.Context, key string, body []byte) (any, error) {
	obj := c.newObj()
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(obj); err != nil {
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
