// Package httpserve runs an HTTP server on a listener for as long as a
// context lives: the one serve-and-shut-down loop of the daemons' unix
// socket APIs (attach, CNI, Docker plugin).
package httpserve

import (
	"context"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout bounds how long a stopping server waits for requests in
// flight before it closes their connections.
const ShutdownTimeout = 10 * time.Second

// Serve runs srv on ln until ctx ends; it closes ln. Requests see ctx as
// their base context (unless srv sets its own), so they are cancelled when
// ctx ends, and are waited for up to ShutdownTimeout. It returns nil after
// a stop by ctx and the server's error if it stops by itself.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	if srv.BaseContext == nil {
		srv.BaseContext = func(net.Listener) context.Context { return ctx }
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-errc
	return nil
}
