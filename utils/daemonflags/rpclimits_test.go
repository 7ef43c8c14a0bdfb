package daemonflags_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/utils/daemonflags"
)

func limitsContext(t *testing.T, args ...string) *cli.Context {
	t.Helper()
	set := flag.NewFlagSet("t", flag.ContinueOnError)
	for _, f := range daemonflags.RPCLimitFlags("TEST") {
		f.Apply(set)
	}
	if err := set.Parse(args); err != nil {
		t.Fatal(err)
	}
	return cli.NewContext(cli.NewApp(), set, nil)
}

func TestRPCLimitsFlags(t *testing.T) {
	l, err := daemonflags.RPCLimitsFromContext(limitsContext(t))
	if err != nil || l.MaxConns != ofrpc.DefaultMaxConns || l.MaxMessageBytes != ofrpc.DefaultMaxMessageBytes || l.IdleTimeout != ofrpc.DefaultIdleTimeout {
		t.Fatalf("defaults: %+v, %v", l, err)
	}
	l, err = daemonflags.RPCLimitsFromContext(limitsContext(t, "--rpc-max-conns=8", "--rpc-max-message-bytes=65536", "--rpc-idle-timeout=30s"))
	if err != nil || l.MaxConns != 8 || l.MaxMessageBytes != 65536 || l.IdleTimeout != 30*time.Second {
		t.Fatalf("set: %+v, %v", l, err)
	}
	for _, args := range [][]string{{"--rpc-max-conns=0"}, {"--rpc-max-message-bytes=100"}, {"--rpc-idle-timeout=10ms"}} {
		if _, err := daemonflags.RPCLimitsFromContext(limitsContext(t, args...)); err == nil || !strings.Contains(err.Error(), "invalid --rpc-") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
