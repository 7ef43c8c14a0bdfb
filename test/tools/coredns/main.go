// Command coredns is the cluster DNS of the testbed cluster (docs/testbed.md,
// "Kubernetes cluster"): CoreDNS from its Go module with only the plugins a
// kubeadm-style Corefile uses (errors, health, ready, kubernetes, forward,
// cache, loop, reload, loadbalance, log), so the cloud DNS providers of the
// full build are left out. scripts/install-deps.sh builds it into
// /usr/local/bin; the testbed packs it into a local image.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// directives is the plugin order CoreDNS's own list gives these plugins
// (core/dnsserver/zdirectives.go): the order a request passes them.
var directives = []string{
	"reload", "ready", "health", "errors", "log", "loadbalance", "cache",
	"kubernetes", "loop", "forward",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
