// Command contivk8s is Contiv's Kubernetes CNI plugin (docs/daemons.md
// §8.3), installed as /opt/cni/bin/contivk8s. The runtime runs it with
// CNI_COMMAND set; "contivk8s -version" prints the build stamped into
// utils/version by scripts/version.sh, like the daemons' --version.
package main

import (
	"fmt"
	"os"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniplugin"
	"github.com/contiv/netplugin/utils/version"
)

func main() {
	v := version.Get()
	if len(os.Args) == 2 && (os.Args[1] == "-version" || os.Args[1] == "--version") {
		fmt.Print(v.Lines())
		return
	}
	about := "Contiv CNI plugin contivk8s"
	if v.Version != "" {
		about += " " + v.Version
	}
	cniplugin.Main(about)
}
