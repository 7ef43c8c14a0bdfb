// Package problem serves the two kinds of REST client the netmaster has
// (docs/rest-errors.md, "Two kinds of client"):
//
//   - clients written for the original, which read an error body only on
//     HTTP 500 (a 404 is "Page not found!", any other code the bare status
//     line): a refusal reaches them as 500 with the message as the
//     text/plain body, the original's convention;
//   - clients that send "Accept: application/problem+json" (this
//     project's netctl, Go REST client and netplugin): a refusal keeps its
//     4xx status and comes as an RFC 9457 problem details object
//     {"type","title","status","detail"}.
//
// Handlers keep answering refusals with http.Error and the status that says
// whose fault it is; Middleware rewrites each answer for the client that
// asked. A 404 for a path no route serves, answers marked Pass and answers
// that are not plain text pass unchanged.
package problem

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// ContentType is the media type of a problem details object (RFC 9457 §3).
const ContentType = "application/problem+json"

// Accept is the Accept header value this project's clients send: problem
// details for errors, JSON for answers.
const Accept = ContentType + ", application/json"

// Details is an RFC 9457 problem details object. Type is "about:blank"
// (the status says what kind of problem it is), Title the status text,
// Detail the server's one-line message naming the field, key or object at
// fault (docs/rest-errors.md).
type Details struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Error makes Details an error whose text is the server's message.
func (d *Details) Error() string {
	if d.Detail != "" {
		return d.Detail
	}
	return d.Title
}

// New returns the problem details of a refusal with status and message.
func New(status int, detail string) *Details {
	return &Details{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail}
}

// Wants reports whether the request's Accept header lists
// application/problem+json with a quality above zero. Wildcards ("*/*",
// "application/*") do not count: a client that does not name the type is
// served the original's convention.
func Wants(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != ContentType {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}

// Parse decodes a problem details answer: ok is false when the answer is
// not application/problem+json or does not decode into an object with a
// status. A missing status member takes the answer's status.
func Parse(h http.Header, status int, body []byte) (*Details, bool) {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != ContentType {
		return nil, false
	}
	var d Details
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, false
	}
	if d.Status == 0 {
		d.Status = status
	}
	if d.Title == "" {
		d.Title = http.StatusText(d.Status)
	}
	return &d, true
}

// Write answers a refusal as problem details.
func Write(w http.ResponseWriter, d *Details) {
	b, err := json.Marshal(d)
	if err != nil { // a struct of strings and an int always encodes
		b = fmt.Appendf(nil, `{"type":"about:blank","status":%d}`, d.Status)
	}
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Del("Content-Length")
	w.WriteHeader(d.Status)
	_, _ = w.Write(append(b, '\n'))
}

// converted reports whether a status is a refusal the middleware rewrites:
// every 4xx but 401 and 403, which the authentication layer answers and
// the original's client handles itself ("Access denied!").
func converted(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusUnauthorized && status != http.StatusForbidden
}

// maxBody bounds the message kept from a refusal's body.
const maxBody = 64 << 10

type ctxKey struct{}

// state is what one request's handler tells the middleware.
type state struct{ pass bool }

// Pass marks the request's answer to pass the middleware unchanged: the
// 404 "404 page not found" of a path no route serves (which the original's
// client shows as "Page not found!", as it did before), an answer proxied
// from another netmaster (which made it for this client already).
func Pass(r *http.Request) {
	if st, ok := r.Context().Value(ctxKey{}).(*state); ok {
		st.pass = true
	}
}

// NoRouteHandler answers 404 "404 page not found" and marks it Pass: the
// router's handler for paths and methods no route serves.
func NoRouteHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Pass(r)
		http.NotFound(w, r)
	})
}

// Middleware serves each kind of client its convention for the refusals
// next answers with a plain-text 4xx (see the package doc). Everything
// else passes unchanged, streamed as next writes it.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := &state{}
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, st))
		rw := &writer{ResponseWriter: w, st: st, wants: Wants(r)}
		next.ServeHTTP(rw, r)
		rw.finish()
	})
}

// writer holds back a refusal's body until the handler is done.
type writer struct {
	http.ResponseWriter
	st        *state
	wants     bool
	wrote     bool
	capturing bool
	status    int
	body      bytes.Buffer
}

func (w *writer) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if converted(status) && !w.st.pass && isText(w.Header().Get("Content-Type")) {
		w.capturing, w.status = true, status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *writer) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.capturing {
		if room := maxBody - w.body.Len(); room > 0 {
			w.body.Write(p[:min(len(p), room)])
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes through unless a refusal is being held back.
func (w *writer) Flush() {
	if w.capturing {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *writer) finish() {
	if !w.capturing {
		return
	}
	msg := strings.TrimRight(w.body.String(), "\n")
	if w.wants {
		Write(w.ResponseWriter, New(w.status, msg))
		return
	}
	// The original's convention: 500, the message as the body.
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(http.StatusInternalServerError)
	_, _ = w.ResponseWriter.Write(w.body.Bytes())
}

// isText: the handler answered plain text (http.Error) or set no type.
func isText(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/plain"
}
