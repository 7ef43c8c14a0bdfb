#!/usr/bin/env bash
# Installs everything the daemons and the tests need on a fresh Debian
# machine, as root. Idempotent: what is already there is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

GO_VERSION=1.26.8
CONSUL_BIN=/usr/local/bin/consul
KUBE_APISERVER_BIN=/usr/local/bin/kube-apiserver

log() { printf '[install-deps] %s\n' "$*"; }

# quiet <command...>: runs a command with its output kept in a log file,
# shown only when it fails (no "go: downloading" or apt chatter otherwise).
quiet() {
	local out rc=0
	out=$(mktemp /tmp/contiv-install-deps.XXXXXX)
	"$@" >"$out" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		echo "[install-deps] failed ($rc): $*" >&2
		tail -n 50 "$out" >&2
	fi
	rm -f "$out"
	return "$rc"
}

# This script never stops, disables or reconfigures a service of the
# machine (an etcd on 2379, bird, Prometheus, ...): the quickstart and the
# tests run their own instances in network namespaces. While it installs
# packages, a policy-rc.d that refuses every action keeps the packages'
# maintainer scripts from starting new services or restarting running ones
# (also on dependency upgrades). A policy-rc.d already on the machine is
# the owner's and is left as it is.
POLICY_RC=/usr/sbin/policy-rc.d
POLICY_MARK="# contiv install-deps: temporary"
apt_install() { # apt_install <package...>
	local ours=
	if [ ! -e "$POLICY_RC" ]; then
		printf '#!/bin/sh\n%s\nexit 101\n' "$POLICY_MARK" >"$POLICY_RC"
		chmod 755 "$POLICY_RC"
		ours=1
		trap 'grep -qF "$POLICY_MARK" "$POLICY_RC" 2>/dev/null && rm -f "$POLICY_RC"' EXIT
	fi
	local rc=0
	quiet apt-get update -q || rc=$?
	[ "$rc" != 0 ] || DEBIAN_FRONTEND=noninteractive quiet apt-get install -y -q --no-install-recommends "$@" || rc=$?
	[ -z "$ours" ] || rm -f "$POLICY_RC"
	return "$rc"
}

# What to install: "main" is what the quickstart (the main job) needs;
# "test" (the default) adds everything the test suite uses.
mode=${1:-test}
case "$mode" in
main | test) ;;
*) echo "usage: $0 [main|test]" >&2; exit 2 ;;
esac

# Debian packages. The main job: Open vSwitch for the dataplane, iproute2,
# ping and ethtool for namespaces, busybox-static (the image of the
# per-host engines), fuse-overlayfs (their storage driver). The tests add:
# etcd for the external-store tests, prometheus (server and promtool) for
# the metrics tests, iperf3 for the netprofile bandwidth test and the
# throughput benchmark, the reference CNI plugins (/usr/lib/cni) for the
# CNI ADD benchmark, dig (bind9-dnsutils bird2) for the DNS interception tests,
# bird2 as the testbed's BGP top-of-rack router; containerd and runc as the
# CRI runtime of the simulated hosts (test/testbed/cri.go).
pkgs=(openvswitch-switch iproute2 iputils-ping ethtool iptables ca-certificates curl unzip git make busybox-static fuse-overlayfs)
if [ "$mode" = test ]; then
	pkgs+=(etcd-server etcd-client iperf3 prometheus containernetworking-plugins bind9-dnsutils bird2)
	# A machine whose Docker Engine brought its own containerd keeps it.
	command -v containerd >/dev/null 2>&1 || pkgs+=(containerd)
	command -v runc >/dev/null 2>&1 || pkgs+=(runc)
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	log "apt-get install ${missing[*]}"
	apt_install "${missing[@]}"
fi
# A system etcd, Prometheus or bird (running before, or enabled by the
# packages above for the next boot) is left alone: the tests and the
# quickstart run theirs in network namespaces or on free loopback ports and
# sockets, so nothing here needs 2379, 9090 or bird's socket of the host.

# A Docker Engine for the docker-mode tests (netmaster creates docker
# networks through it). Machines that already run one keep theirs; else
# Debian's docker.io is installed and dockerd started in the background.
docker_up() { curl -fsS --max-time 2 --unix-socket /var/run/docker.sock http://docker/_ping >/dev/null 2>&1; }
if ! docker_up; then
	if ! command -v dockerd >/dev/null 2>&1; then
		log "apt-get install docker.io"
		apt_install docker.io
	fi
	if ! docker_up; then
		log "starting dockerd"
		if command -v systemctl >/dev/null 2>&1 && systemctl start docker 2>/dev/null; then :; else
			nohup dockerd >/var/log/contiv-dockerd.log 2>&1 &
		fi
		for _ in $(seq 1 60); do
			docker_up && break
			sleep 1
		done
	fi
fi

# Go toolchain: the one on the machine, else the official toolchain module
# from the Go module proxy.
export PATH=/usr/local/go/bin:$PATH
if ! command -v go >/dev/null 2>&1; then
	log "installing Go $GO_VERSION from the module proxy"
	tmp=$(mktemp -d)
	curl -fsSL -o "$tmp/go.zip" "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go${GO_VERSION}.linux-amd64.zip"
	unzip -q "$tmp/go.zip" -d "$tmp"
	rm -rf /usr/local/go
	mv "$tmp/golang.org/toolchain@v0.0.1-go${GO_VERSION}.linux-amd64" /usr/local/go
	chmod -R a+rX /usr/local/go
	chmod +x /usr/local/go/bin/* /usr/local/go/pkg/tool/*/* 2>/dev/null || true
	rm -rf "$tmp"
fi

# The test-only servers built from Go modules (no Debian packages): a real
# consul agent for the consul backend tests (test/tools/consul) and the
# Kubernetes API server for the kubernetes-mode tests
# (test/tools/kube-apiserver, several minutes of CPU the first time). Each
# is built once and rebuilt only when its go.sum changes (the stamp file).
# The main job does not need them (mode main, or INSTALL_DEPS_NO_TEST_SERVERS=1).
build_tool() { # build_tool <dir under test/tools> <binary>
	local want
	want="$1-tool $(sha256sum "test/tools/$1/go.sum" | cut -c1-16)"
	if [ ! -x "$2" ] || [ "$(cat "$2.stamp" 2>/dev/null)" != "$want" ]; then
		log "building $2 from test/tools/$1 (first time: a few minutes)"
		(cd "test/tools/$1" && quiet go build -ldflags='-s -w' -o "$2.tmp" .)
		mv "$2.tmp" "$2"
		echo "$want" >"$2.stamp"
	fi
}
# The rest of the testbed's Kubernetes cluster (test/testbed/kubecluster.go,
# docs/testbed.md "Kubernetes cluster"): kube-controller-manager,
# kube-scheduler, kubelet, kubectl and kube-proxy of the API server's release
# from test/tools/kube, one `go build` for all five (they share most
# packages, and the API server's build left them in the Go build cache), and
# CoreDNS from its Go module (test/tools/coredns). Rebuilt only when a
# binary is missing or its module's go.sum changed.
KUBE_CMDS=(kube-controller-manager kube-scheduler kubelet kubectl kube-proxy)
# The release the commands report (kubelet's node status, kubectl version):
# a module build has no git tree to stamp it from.
kube_version_ldflags() {
	local v
	v=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' test/tools/kube/go.mod)
	printf -- '-X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=%s -X k8s.io/component-base/version.gitMinor=%s' \
		"$v" "$(echo "${v#v}" | cut -d. -f1)" "$(echo "$v" | cut -d. -f2)"
}
build_kube_cmds() {
	local want missing= c tmp ldflags
	want="kube-tool $(sha256sum test/tools/kube/go.sum | cut -c1-16)"
	for c in "${KUBE_CMDS[@]}"; do
		if [ ! -x "/usr/local/bin/$c" ] || [ "$(cat "/usr/local/bin/$c.stamp" 2>/dev/null)" != "$want" ]; then
			missing=1
		fi
	done
	[ -n "$missing" ] || return 0
	log "building ${KUBE_CMDS[*]} from test/tools/kube (first time: several minutes)"
	tmp=$(mktemp -d /tmp/contiv-kube-build.XXXXXX)
	ldflags="-s -w $(kube_version_ldflags)"
	(cd test/tools/kube && quiet go build -ldflags="$ldflags" -o "$tmp/" $(printf './%s ' "${KUBE_CMDS[@]}"))
	for c in "${KUBE_CMDS[@]}"; do
		mv "$tmp/$c" "/usr/local/bin/$c"
		echo "$want" >"/usr/local/bin/$c.stamp"
	done
	rm -rf "$tmp"
}
if [ "$mode" = main ] || [ "${INSTALL_DEPS_NO_TEST_SERVERS:-${INSTALL_DEPS_NO_CONSUL:-}}" = 1 ]; then
	CONSUL_BIN="(not built)"
	KUBE_APISERVER_BIN="(not built)"
else
	build_tool consul "$CONSUL_BIN"
	build_tool kube-apiserver "$KUBE_APISERVER_BIN"
	# The kubelet cluster's commands are needed by test/k8s only:
	# scripts/test.sh skips them in its first run (INSTALL_DEPS_KUBE_CLUSTER=no)
	# and builds them in a second run while the other packages' tests run.
	if [ "${INSTALL_DEPS_KUBE_CLUSTER:-yes}" != no ]; then
		build_kube_cmds
		# CoreDNS runs in a pod: built static.
		CGO_ENABLED=0 build_tool coredns /usr/local/bin/coredns
	fi
fi
# cnitool for the CNI end-to-end tests (TestKubernetesCNI): the version of
# the CNI library in go.mod, from the Go module proxy, into /usr/local/bin.
CNI_VERSION=$(awk '$1 == "github.com/containernetworking/cni" {print $2}' go.mod)
if [ "$mode" = test ] && { [ "$(cat /usr/local/bin/cnitool.stamp 2>/dev/null)" != "$CNI_VERSION" ] || [ ! -x /usr/local/bin/cnitool ]; }; then
	log "installing cnitool $CNI_VERSION"
	GOBIN=/usr/local/bin quiet go install "github.com/containernetworking/cni/cnitool@$CNI_VERSION"
	echo "$CNI_VERSION" >/usr/local/bin/cnitool.stamp
fi
# crictl drives the simulated hosts' containerd as a kubelet would
# (TestCRI, TestKubernetesCRI, the CNI ADD benchmark): from the Go module
# proxy, into /usr/local/bin.
CRICTL_VERSION=v1.34.0
if [ "$mode" = test ] && { [ "$(cat /usr/local/bin/crictl.stamp 2>/dev/null)" != "$CRICTL_VERSION" ] || [ ! -x /usr/local/bin/crictl ]; }; then
	log "installing crictl $CRICTL_VERSION"
	GOBIN=/usr/local/bin quiet go install "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
	echo "$CRICTL_VERSION" >/usr/local/bin/crictl.stamp
fi
log "ok ($mode): $(go version | cut -d' ' -f3), $(etcd --version 2>/dev/null | head -1 || true), ovs $(ovs-vswitchd --version | head -1 | awk '{print $NF}'), consul at $CONSUL_BIN, kube-apiserver at $KUBE_APISERVER_BIN (with ${KUBE_CMDS[*]} coredns), docker engine at /var/run/docker.sock"
