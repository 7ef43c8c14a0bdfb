// Command netctl is the command-line client of netmaster.
package main

import (
	"os"

	"github.com/contiv/netplugin/netctl"
	"github.com/contiv/netplugin/utils/version"
)

func main() {
	v := version.Get()
	os.Exit(netctl.App(netctl.Options{
		Version:   v.Version,
		GitCommit: v.GitCommit,
		BuildTime: v.BuildTime,
	}).Run(os.Args))
}
