// Command netctl is the command-line client of netmaster.
package main

import (
	"os"

	"github.com/contiv/netplugin/netctl"
)

// Set at build time with -ldflags "-X main.version=...".
var (
	version   string
	gitCommit string
	buildTime string
)

func main() {
	os.Exit(netctl.App(netctl.Options{
		Version:   version,
		GitCommit: gitCommit,
		BuildTime: buildTime,
	}).Run(os.Args))
}
