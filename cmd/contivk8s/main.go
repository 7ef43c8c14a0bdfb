// Command contivk8s is Contiv's Kubernetes CNI plugin (docs/daemons.md
// §8.3), installed as /opt/cni/bin/contivk8s. The runtime runs it with
// CNI_COMMAND set; "contivk8s -version" prints the build.
package main

import (
	"fmt"
	"os"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniplugin"
)

// Build-time values, set with -ldflags "-X main.version=...".
var (
	version   = "devbuild"
	gitCommit = "unknown"
	buildTime = "unknown"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "-version" || os.Args[1] == "--version") {
		fmt.Printf("Version: %s\nGitCommit: %s\nBuildTime: %s\n", version, gitCommit, buildTime)
		return
	}
	cniplugin.Main("Contiv CNI plugin contivk8s " + version)
}
