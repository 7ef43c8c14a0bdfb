// Package unixctl speaks Open vSwitch's unixctl protocol: JSON-RPC 1.0
// requests and replies over the daemon's control socket (the one
// ovs-appctl talks to), so netplugin can ask ovs-vswitchd for
// "ofproto/trace" without running ovs-appctl (docs/operations.md, "Packet
// trace").
//
// A request is {"id":N,"method":M,"params":[strings]}; the reply is
// {"id":N,"result":TEXT,"error":null} or {"id":N,"result":null,"error":TEXT}.
package unixctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// maxReply bounds the size of one reply (traces of big pipelines are a
// few tens of KiB).
const maxReply = 4 << 20

// ErrCommand is a command ovs-vswitchd refused; its text follows.
var ErrCommand = errors.New("unixctl: command failed")

type request struct {
	ID     int      `json:"id"`
	Method string   `json:"method"`
	Params []string `json:"params"`
}

type reply struct {
	ID     int              `json:"id"`
	Result *json.RawMessage `json:"result"`
	Error  *json.RawMessage `json:"error"`
}

// Call sends one command to the control socket at path and returns the
// reply text. The connection lives for this call only.
func Call(ctx context.Context, path, method string, params ...string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return "", fmt.Errorf("unixctl: connect to %s: %w", path, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if params == nil {
		params = []string{}
	}
	if err := json.NewEncoder(conn).Encode(request{ID: 0, Method: method, Params: params}); err != nil {
		return "", fmt.Errorf("unixctl: send %s to %s: %w", method, path, ctxErr(ctx, err))
	}
	text, err := readReply(io.LimitReader(conn, maxReply))
	if err != nil {
		return "", fmt.Errorf("unixctl: %s on %s: %w", method, path, ctxErr(ctx, err))
	}
	return text, nil
}

// readReply decodes one reply and returns its result text, or an error
// wrapping ErrCommand with the error text.
func readReply(r io.Reader) (string, error) {
	var rep reply
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return "", fmt.Errorf("read reply: %w", err)
	}
	str := func(m *json.RawMessage) (string, bool) {
		if m == nil || string(*m) == "null" {
			return "", false
		}
		var s string
		if err := json.Unmarshal(*m, &s); err != nil {
			return string(*m), true
		}
		return s, true
	}
	if e, ok := str(rep.Error); ok {
		return "", fmt.Errorf("%w: %s", ErrCommand, strings.TrimSpace(e))
	}
	res, ok := str(rep.Result)
	if !ok {
		return "", errors.New("reply has neither result nor error")
	}
	return res, nil
}

func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// VswitchdSocket finds ovs-vswitchd's control socket in dir (the OVS run
// directory): "ovs-vswitchd.ctl" when it exists (a daemon started with
// --unixctl there), else "ovs-vswitchd.<pid>.ctl" with the pid of
// "ovs-vswitchd.pid" (the default).
func VswitchdSocket(dir string) (string, error) {
	p := filepath.Join(dir, "ovs-vswitchd.ctl")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "ovs-vswitchd.pid"))
	if err != nil {
		return "", fmt.Errorf("unixctl: find ovs-vswitchd's control socket in %s: %w", dir, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return "", fmt.Errorf("unixctl: bad pidfile %s: %q", filepath.Join(dir, "ovs-vswitchd.pid"), b)
	}
	return filepath.Join(dir, fmt.Sprintf("ovs-vswitchd.%d.ctl", pid)), nil
}
