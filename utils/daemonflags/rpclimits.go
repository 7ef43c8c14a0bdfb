package daemonflags

import (
	"fmt"
	"time"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// RPCLimitFlags returns the flags RPCLimitsFromContext reads, each with its
// CONTIV_<BIN>_* environment twin: the bounds of the ofnet RPC server
// (docs/security.md, "RPC limits").
func RPCLimitFlags(bin string) []cli.Flag {
	env := func(s string) string { return "CONTIV_" + bin + "_" + s }
	return []cli.Flag{
		cli.IntFlag{Name: "rpc-max-conns", EnvVar: env("RPC_MAX_CONNS"), Value: ofrpc.DefaultMaxConns, Usage: "ofnet RPC server: open connections at most; one more is closed at once"},
		cli.IntFlag{Name: "rpc-max-message-bytes", EnvVar: env("RPC_MAX_MESSAGE_BYTES"), Value: ofrpc.DefaultMaxMessageBytes, Usage: "ofnet RPC server: largest request; a larger one closes the connection"},
		cli.DurationFlag{Name: "rpc-idle-timeout", EnvVar: env("RPC_IDLE_TIMEOUT"), Value: ofrpc.DefaultIdleTimeout, Usage: "ofnet RPC server: a connection without a complete request for this long is closed"},
	}
}

// RPCLimitsFromContext reads the flags of RPCLimitFlags.
func RPCLimitsFromContext(c *cli.Context) (ofrpc.Limits, error) {
	l := ofrpc.Limits{MaxConns: c.Int("rpc-max-conns"), MaxMessageBytes: c.Int("rpc-max-message-bytes"), IdleTimeout: c.Duration("rpc-idle-timeout")}
	switch {
	case l.MaxConns < 1:
		return l, fmt.Errorf("invalid --rpc-max-conns %d: must be at least 1", l.MaxConns)
	case l.MaxMessageBytes < 4096:
		return l, fmt.Errorf("invalid --rpc-max-message-bytes %d: must be at least 4096", l.MaxMessageBytes)
	case l.IdleTimeout < time.Second:
		return l, fmt.Errorf("invalid --rpc-idle-timeout %v: must be at least 1s", l.IdleTimeout)
	}
	return l, nil
}
