#!/usr/bin/env bash
# Builds static, stamped netmaster and netplugin binaries and wraps each in
# a FROM scratch image with the local Docker Engine (no registry). Usage:
#   bash scripts/build-images.sh [TAG]     (default TAG: the version)
# Images: contiv/netmaster:TAG, contiv/netplugin:TAG, contiv/cni-install:TAG. IMAGE_PREFIX
# overrides "contiv/". docs/operations.md, "Packaging".
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
ldflags=$(bash scripts/version.sh)
version=$(sed -n 's/.*version\.Version=\([^ ]*\).*/\1/p' <<<"$ldflags")
tag=${1:-$version}
prefix=${IMAGE_PREFIX:-contiv/}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
for bin in netmaster netplugin; do
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$ctx/$bin" "./cmd/$bin"
	docker build -q -f packaging/docker/Dockerfile --build-arg BIN="$bin" --build-arg VERSION="$version" \
		-t "$prefix$bin:$tag" "$ctx" >/dev/null
	echo "$prefix$bin:$tag"
done
# The netplugin DaemonSet's init container (packaging/k8s/contiv.yaml):
# contivk8s and the static busybox of Debian's busybox-static.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$ctx/contivk8s" ./cmd/contivk8s
cp /bin/busybox "$ctx/busybox"
docker build -q -f packaging/docker/Dockerfile.cni-install --build-arg VERSION="$version" \
	-t "${prefix}cni-install:$tag" "$ctx" >/dev/null
echo "${prefix}cni-install:$tag"
