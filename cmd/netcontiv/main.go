// Command netcontiv is Contiv's Mesos CNI plugin (docs/mesos.md,
// docs/daemons.md §8.5), installed in Mesos' --network_cni_plugins_dir.
// Mesos runs it with CNI_COMMAND set; "netcontiv -version" prints the
// build stamped into utils/version by scripts/version.sh.
package main

import (
	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniplugin"
	"github.com/contiv/netplugin/mgmtfn/mesosplugin/netcontiv"
)

func main() {
	cniplugin.RunBinary("Contiv Mesos CNI plugin netcontiv", netcontiv.Main)
}
