#!/usr/bin/env bash
# Installs everything the daemons and the tests need on a fresh Debian
# machine, as root. Idempotent: what is already there is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

GO_VERSION=1.26.8
CONSUL_BIN=/usr/local/bin/consul

log() { printf '[install-deps] %s\n' "$*"; }

# Debian packages: etcd for the external-store tests, Open vSwitch for the
# dataplane, iproute2, ping and ethtool for namespaces and traffic tests,
# bird2 as the testbed's BGP top-of-rack router.
pkgs=(etcd-server etcd-client openvswitch-switch iproute2 iputils-ping ethtool iptables bird2 ca-certificates curl unzip git make)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	log "apt-get install ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Debian etcd package may start a system etcd on 2379; the tests and
# the quickstart bring their own, so keep the system one out of the way.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
	systemctl stop etcd || true
	systemctl disable etcd >/dev/null 2>&1 || true
fi
# Likewise a system bird: the testbed runs its own in a namespace.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet bird 2>/dev/null; then
	systemctl stop bird || true
	systemctl disable bird >/dev/null 2>&1 || true
fi

# A Docker Engine for the docker-mode tests (netmaster creates docker
# networks through it). Machines that already run one keep theirs; else
# Debian's docker.io is installed and dockerd started in the background.
docker_up() { curl -fsS --max-time 2 --unix-socket /var/run/docker.sock http://docker/_ping >/dev/null 2>&1; }
if ! docker_up; then
	if ! command -v dockerd >/dev/null 2>&1; then
		log "apt-get install docker.io"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >/dev/null
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

# A real consul agent for the consul backend tests (no Debian package):
# built once from its Go module, see test/tools/consul.
want="consul-tool $(sha256sum test/tools/consul/go.sum | cut -c1-16)"
if [ ! -x "$CONSUL_BIN" ] || [ "$(cat "$CONSUL_BIN.stamp" 2>/dev/null)" != "$want" ]; then
	log "building the consul test agent (first time: a few minutes)"
	(cd test/tools/consul && go build -o "$CONSUL_BIN.tmp" .)
	mv "$CONSUL_BIN.tmp" "$CONSUL_BIN"
	echo "$want" >"$CONSUL_BIN.stamp"
fi
log "ok: $(go version | cut -d' ' -f3), $(etcd --version 2>/dev/null | head -1), ovs $(ovs-vswitchd --version | head -1 | awk '{print $NF}'), consul at $CONSUL_BIN, docker engine at /var/run/docker.sock"
