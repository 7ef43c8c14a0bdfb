// Command pause is the sandbox ("pause") process of the testbed's pod
// sandboxes: it holds the pod's namespaces and waits until it is told to
// stop. The testbed packs it, statically linked, into the image the
// simulated hosts' containerd runs (test/testbed/cri.go), since no image
// registry can be reached.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
}
