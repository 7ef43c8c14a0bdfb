// Command netplugin is the Contiv per-host agent (docs/daemons.md §6).
package main

import (
	"fmt"
	"os"

	"github.com/contiv/netplugin/netplugin/cli"
	"github.com/contiv/netplugin/netplugin/daemon"
	"github.com/contiv/netplugin/utils/daemonflags"
)

func main() {
	if err := cli.App(daemon.Run).Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "netplugin:", err)
		os.Exit(daemonflags.ExitInvalid)
	}
}
