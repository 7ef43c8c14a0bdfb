#!/usr/bin/env bash
# The main job: netmaster on its embedded etcd (nothing else to install by
# hand), driven with netctl and the agents' /plugin API. Run as root on
# Debian. It stops by itself; set KEEP=1 to leave netmaster running
# (Ctrl-C stops it). netplugin (the dataplane) is not built yet.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export PATH=/usr/local/go/bin:$PATH

mkdir -p bin
go build -o bin/ ./cmd/netmaster ./cmd/netctl
DATA=$(mktemp -d /tmp/contiv-quickstart.XXXXXX)
LISTEN=127.0.0.1:9999
export NETMASTER=http://$LISTEN

echo "==> starting netmaster (embedded etcd on http://127.0.0.1:2379, data in $DATA, log in $DATA/netmaster.log)"
bin/netmaster --mode test --netmode vxlan --fwdmode routing \
	--embedded-etcd-dir "$DATA/etcd" \
	--external-address "$LISTEN" --internal-address "$LISTEN" >"$DATA/netmaster.log" 2>&1 &
NM=$!
stop() {
	kill "$NM" 2>/dev/null && wait "$NM" 2>/dev/null || true
	rm -rf "$DATA"
}
trap stop EXIT
for _ in $(seq 1 100); do
	curl -fs "$NETMASTER/info" >/dev/null 2>&1 && break
	kill -0 "$NM" 2>/dev/null || { cat "$DATA/netmaster.log"; exit 1; }
	sleep 0.2
done
curl -fs "$NETMASTER/info"; echo

run() { echo "\$ $*"; "$@"; }
run bin/netctl tenant create blue
run bin/netctl net create -t blue -e vxlan -s 198.18.1.0/24 -g 198.18.1.254 web
run bin/netctl group create -t blue web frontend
run bin/netctl net ls -a
run bin/netctl group ls -a

echo "==> two containers ask for endpoints, as netplugin does (POST /plugin/createEndpoint)"
for c in c1 c2; do
	curl -fs -H 'Content-Type: application/json' "$NETMASTER/plugin/createEndpoint" -d \
		"{\"TenantName\":\"blue\",\"NetworkName\":\"web\",\"ServiceName\":\"frontend\",\"EndpointID\":\"$c\",\"EPCommonName\":\"$c\",\"ConfigEP\":{\"Container\":\"$c\",\"Host\":\"node1\",\"ServiceName\":\"frontend\"}}"
done
run bin/netctl net inspect -t blue web

if [ "${KEEP:-}" = 1 ]; then
	echo "==> netmaster keeps running: try 'NETMASTER=$NETMASTER bin/netctl net ls -a'; Ctrl-C stops it"
	wait "$NM"
else
	echo "==> done; stopping netmaster (KEEP=1 leaves it running)"
fi
