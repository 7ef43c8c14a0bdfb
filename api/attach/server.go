package attach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/utils/httpserve"
)

// ErrSocketInUse: another server answers on the socket path.
var ErrSocketInUse = errors.New("attach: socket in use by a live server")

// Listen opens the unix socket: its directory is created with mode 0700 if
// missing, a stale socket left by a dead server is removed (a live one is
// ErrSocketInUse), and the socket is made 0600. Closing the listener
// removes the socket file.
func Listen(socketPath string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(socketPath), 0o700); err != nil {
		return nil, fmt.Errorf("create socket directory of %q: %w", socketPath, err)
	}
	if fi, err := os.Lstat(socketPath); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listen on %q: the path exists and is not a socket", socketPath)
		}
		if c, err := net.DialTimeout("unix", socketPath, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %q: %w", socketPath, ErrSocketInUse)
		}
		if err := os.Remove(socketPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket %q: %w", socketPath, err)
		}
	}
	ln, err := net.Listen("unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("listen on %q: %w", socketPath, err)
	}
	if err := os.Chmod(socketPath, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict socket %q: %w", socketPath, err)
	}
	return ln, nil
}

// Serve runs the API on socketPath (see Listen) until ctx ends, then stops
// the server and removes the socket. It returns nil after a stop by ctx.
func Serve(ctx context.Context, socketPath string, a Attacher, log logrus.FieldLogger) error {
	ln, err := Listen(socketPath)
	if err != nil {
		return err
	}
	return ServeListener(ctx, ln, a, log)
}

// ServeListener runs the API on ln until ctx ends; it closes ln. Requests
// in flight see their context cancelled when ctx ends and are waited for
// up to httpserve.ShutdownTimeout.
func ServeListener(ctx context.Context, ln net.Listener, a Attacher, log logrus.FieldLogger) error {
	srv := &http.Server{Handler: NewHandler(a, log), ReadHeaderTimeout: 10 * time.Second}
	if err := httpserve.Serve(ctx, srv, ln); err != nil {
		return fmt.Errorf("serve attach API on %s: %w", ln.Addr(), err)
	}
	return nil
}
