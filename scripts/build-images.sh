#!/usr/bin/env bash
# Builds static, stamped netmaster and netplugin binaries and wraps each in
# a FROM scratch image with the local Docker Engine (no registry). Usage:
#   bash scripts/build-images.sh [TAG]
# The version stamped into the binaries (utils/version) and the default
# TAG is the release of packaging/k8s/VERSION, the tag the Kubernetes
# manifests reference, so the images this makes are exactly the ones
# packaging/k8s/contiv.yaml runs (BUILD_VERSION overrides the version).
# Images: contiv/netmaster:TAG, contiv/netplugin:TAG, contiv/cni-install:TAG
# (IMAGE_PREFIX overrides "contiv/"); with IMAGE_ARCHIVE=FILE they are also
# written to FILE with docker save, for `ctr -n k8s.io images import FILE`
# on every node. docs/operations.md, "Packaging"; docs/k8s.md, "Images".
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
version=${BUILD_VERSION:-$(tr -d ' \n' <packaging/k8s/VERSION)}
ldflags=$(BUILD_VERSION=$version bash scripts/version.sh)
tag=${1:-$version}
prefix=${IMAGE_PREFIX:-contiv/}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
images=()
# netplugin's image also holds busybox and packaging/docker/node-iptables,
# which runs the node's iptables for its host NAT rule (Dockerfile.netplugin).
cp /bin/busybox "$ctx/busybox"
install -m 0755 packaging/docker/node-iptables "$ctx/node-iptables"
for bin in netmaster netplugin; do
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$ctx/$bin" "./cmd/$bin"
	dockerfile=packaging/docker/Dockerfile
	if [ "$bin" = netplugin ]; then
		dockerfile=packaging/docker/Dockerfile.netplugin
	fi
	docker build -q -f "$dockerfile" --build-arg BIN="$bin" --build-arg VERSION="$version" \
		-t "$prefix$bin:$tag" "$ctx" >/dev/null
	images+=("$prefix$bin:$tag")
	echo "$prefix$bin:$tag"
done
# The netplugin DaemonSet's init and cleanup containers
# (packaging/k8s/contiv.yaml): contivk8s, contiv-node-cleanup, the
# reference portmap CNI plugin chained after contivk8s for pods' hostPorts
# (installed as contiv-portmap; the version go.mod pins, a tool of the
# module) and the static busybox of Debian's busybox-static.
for bin in contivk8s contiv-node-cleanup; do
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$ctx/$bin" "./cmd/$bin"
done
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ctx/contiv-portmap" \
	github.com/containernetworking/plugins/plugins/meta/portmap
docker build -q -f packaging/docker/Dockerfile.cni-install --build-arg VERSION="$version" \
	-t "${prefix}cni-install:$tag" "$ctx" >/dev/null
images+=("${prefix}cni-install:$tag")
echo "${prefix}cni-install:$tag"
if [ -n "${IMAGE_ARCHIVE:-}" ]; then
	docker save -o "$IMAGE_ARCHIVE" "${images[@]}"
fi
