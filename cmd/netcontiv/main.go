// Command netcontiv is Contiv's Mesos CNI plugin (docs/mesos.md,
// docs/daemons.md §8.5), installed in Mesos' --network_cni_plugins_dir.
// Mesos runs it with CNI_COMMAND set; "netcontiv -version" prints the
// build stamped into utils/version by scripts/version.sh.
package main

import (
	"fmt"
	"os"

	"github.com/contiv/netplugin/mgmtfn/mesosplugin/netcontiv"
	"github.com/contiv/netplugin/utils/version"
)

func main() {
	v := version.Get()
	if len(os.Args) == 2 && (os.Args[1] == "-version" || os.Args[1] == "--version") {
		fmt.Print(v.Lines())
		return
	}
	about := "Contiv Mesos CNI plugin netcontiv"
	if v.Version != "" {
		about += " " + v.Version
	}
	netcontiv.Main(about)
}
