// Command contivk8s is Contiv's Kubernetes CNI plugin (docs/daemons.md
// §8.3), installed as /opt/cni/bin/contivk8s. The runtime runs it with
// CNI_COMMAND set; "contivk8s -version" prints the build stamped into
// utils/version by scripts/version.sh, like the daemons' --version.
package main

import "github.com/contiv/netplugin/mgmtfn/k8splugin/cniplugin"

func main() {
	cniplugin.RunBinary("Contiv CNI plugin contivk8s", cniplugin.Main)
}
