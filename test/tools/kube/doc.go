// Package kube holds the Kubernetes node and control-plane commands of the
// testbed cluster (docs/testbed.md, "Kubernetes cluster"), built from the
// k8s.io/kubernetes module of the same release as test/tools/kube-apiserver:
// one thin main per command, built in one `go build` by
// scripts/install-deps.sh into /usr/local/bin.
package kube
