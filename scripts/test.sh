#!/usr/bin/env bash
# The whole test suite: installs what it needs, then runs every test.
# Run as root (namespaces, Open vSwitch). CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
# The kubelet cluster's commands and the upstream e2e.test (test/k8s only)
# take many minutes of CPU on a fresh machine: they build in the background
# while the other packages' tests run, and test/k8s runs once they are there.
INSTALL_DEPS_KUBE_CLUSTER=no bash scripts/install-deps.sh
export PATH=/usr/local/go/bin:$PATH
kube_log=$(mktemp /tmp/contiv-test-kube-deps.XXXXXX)
{ bash scripts/install-deps.sh && BUILD_ONLY=1 bash scripts/k8s-e2e.sh; } >"$kube_log" 2>&1 &
kube_deps=$!
echo "== gofmt / go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi
go vet ./...
echo "== go test"
rc=0
go test -count=1 -timeout 25m $(go list ./... | grep -v '/test/k8s$') || rc=$?
echo "== building the kubelet cluster's commands (test/k8s)"
if ! wait "$kube_deps"; then
	cat "$kube_log"; echo "install-deps (kubelet cluster) failed"; exit 1
fi
tail -2 "$kube_log"; rm -f "$kube_log"
go test -count=1 -timeout 25m ./test/k8s || rc=$?
exit "$rc"
