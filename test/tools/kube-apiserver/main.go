// Command kube-apiserver is the Kubernetes API server built from its Go
// module for the tests (docs/k8s.md, "Test components"): the Kubernetes
// mode of netplugin watches a real API server, not a fake one.
// scripts/install-deps.sh builds it once into /usr/local/bin.
package main

import (
	"os"

	_ "time/tzdata" // the server loads time zones on minimal machines

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
