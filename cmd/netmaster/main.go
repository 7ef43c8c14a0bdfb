// Command netmaster is the Contiv network control plane (docs/daemons.md §4).
package main

import (
	"fmt"
	"os"

	"github.com/contiv/netplugin/netmaster/cmdline"
	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/utils/daemonflags"
)

func main() {
	// Errors carrying an exit code (validation: 22) exit inside Run; any
	// other error is a flag-parsing error, also a validation error.
	if err := cmdline.App(master.NewLeader).Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "netmaster:", err)
		os.Exit(daemonflags.ExitInvalid)
	}
}
