// Command kube-controller-manager is the Kubernetes controller manager of
// the testbed cluster (docs/testbed.md, "Kubernetes cluster").
package main

import (
	"os"

	_ "time/tzdata" // cron jobs load time zones on minimal machines

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
