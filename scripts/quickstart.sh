#!/usr/bin/env bash
# The main job: a two-host Contiv cluster on this machine. netmaster runs on
# its embedded etcd; each "host" is a network namespace with its own Open
# vSwitch (userspace datapath) and a netplugin; a container on each host is
# attached to one VXLAN network; they ping each other and exchange TCP (a
# request/response and a 3 MB transfer, checksum compared) and UDP, at the
# containers' default interface settings. Run as root on
# Debian. The cluster keeps running for you to look around;
# `bash scripts/quickstart.sh stop` removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STATE=${QUICKSTART_STATE:-/run/contiv-quickstart}
P=${QUICKSTART_PREFIX:-cqs-} # prefix of every namespace (at most 4 characters)

stop_cluster() {
	if [ -d "$STATE" ]; then
		for pidf in "$STATE"/*.pid "$STATE"/*/*.pid; do
			[ -f "$pidf" ] && kill -9 "$(cat "$pidf")" 2>/dev/null || true
		done
	fi
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$P" || true); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$STATE"
}

if [ "${1:-}" = stop ]; then
	stop_cluster
	echo "quickstart cluster stopped and removed"
	exit 0
fi

[ "${QUICKSTART_SKIP_INSTALL:-}" = 1 ] || bash scripts/install-deps.sh
export PATH=/usr/local/go/bin:$PATH
mkdir -p bin
go build -ldflags "$(bash scripts/version.sh)" -o bin/ ./cmd/netmaster ./cmd/netplugin ./cmd/netctl ./test/tools/netprobe
stop_cluster # a previous run's leftovers
mkdir -p "$STATE"
trap 'echo "quickstart failed; logs are in $STATE (bash scripts/quickstart.sh stop removes everything)" >&2' ERR

inns() { ip netns exec "$1" "${@:2}"; }
wait_for() { # wait_for <what> <tries of 0.2 s> <command...>
	local what=$1 n=$2
	shift 2
	for _ in $(seq 1 "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
	echo "timed out waiting for $what" >&2
	return 1
}
veth_into() { # veth_into <bridge in fabric> <ns> <name in ns>
	local out="q${2#"$P"}$3" # fabric side, e.g. qh0eth1
	ip link add "$out" type veth peer name "$3" netns "$2"
	ip link set "$out" netns "${P}fab"
	inns "${P}fab" ip link set "$out" master "$1" up
	inns "$2" ip link set "$3" up
	# Underlay links stand for physical NICs, which complete checksums in
	# hardware; a veth does not, so the kernel does it. (Containers are left
	# at their defaults: netplugin takes care of their links.)
	inns "$2" ethtool -K "$3" tx off >/dev/null 2>&1 || true
}

echo "==> fabric: one namespace with an IP underlay bridge (198.18.0.0/24) and a VLAN trunk bridge"
ip netns add "${P}fab"
inns "${P}fab" ip link set lo up
inns "${P}fab" ip link add underlay type bridge
inns "${P}fab" ip link add vlanfab type bridge
inns "${P}fab" ip link set underlay up
inns "${P}fab" ip link set vlanfab up

MASTER=198.18.0.1
echo "==> netmaster in namespace ${P}m at $MASTER:9999, embedded etcd on http://$MASTER:2379"
ip netns add "${P}m"
inns "${P}m" ip link set lo up
veth_into underlay "${P}m" eth1
inns "${P}m" ip addr add $MASTER/24 dev eth1
mkdir -p "$STATE/m"
inns "${P}m" "$ROOT/bin/netmaster" --mode test --netmode vlan --fwdmode bridge \
	--etcd-endpoints "http://$MASTER:2379" --embedded-etcd-dir "$STATE/m/etcd" \
	--external-address "$MASTER:9999" --internal-address "$MASTER:9999" >"$STATE/m/netmaster.log" 2>&1 &
echo $! >"$STATE/m/netmaster.pid"
NETCTL=(inns "${P}m" "$ROOT/bin/netctl" --netmaster "http://$MASTER:9999")
wait_for netmaster 150 "${NETCTL[@]}" tenant ls

for i in 0 1; do
	H=${P}h$i IP=198.18.0.1$i D=$STATE/h$i
	echo "==> host $H: own ovsdb-server + ovs-vswitchd, underlay $IP on br-phy, netplugin"
	mkdir -p "$D"
	ip netns add "$H"
	inns "$H" ip link set lo up
	veth_into underlay "$H" eth1
	veth_into vlanfab "$H" eth2
	export OVS_RUNDIR=$D OVS_DBDIR=$D OVS_LOGDIR=$D OVS_SYSCONFDIR=$D
	ovsdb-tool create "$D/conf.db" /usr/share/openvswitch/vswitch.ovsschema
	inns "$H" ovsdb-server "$D/conf.db" --remote="punix:$D/db.sock" --pidfile="$D/ovsdb-server.pid" \
		--unixctl="$D/ovsdb-server.ctl" --log-file="$D/ovsdb-server.log" --detach
	inns "$H" ovs-vsctl --db="unix:$D/db.sock" --no-wait init
	inns "$H" ovs-vswitchd "unix:$D/db.sock" --pidfile="$D/ovs-vswitchd.pid" \
		--unixctl="$D/ovs-vswitchd.ctl" --log-file="$D/ovs-vswitchd.log" --detach
	inns "$H" ovs-vsctl --db="unix:$D/db.sock" add-br br-phy -- set bridge br-phy datapath_type=netdev -- add-port br-phy eth1
	inns "$H" ip addr add "$IP/24" dev br-phy
	inns "$H" ip link set br-phy up
	inns "$H" "$ROOT/bin/netplugin" --mode test --netmode vlan --fwdmode bridge --host "$H" \
		--vtep-ip "$IP" --ctrl-ip "$IP" --vlan-uplinks eth2 --etcd-endpoints "http://$MASTER:2379" \
		--ovsdb-socket "$D/db.sock" --ovs-datapath netdev --attach-socket "$D/attach.sock" >"$D/netplugin.log" 2>&1 &
	echo $! >"$D/netplugin.pid"
done
unset OVS_RUNDIR OVS_DBDIR OVS_LOGDIR OVS_SYSCONFDIR
for i in 0 1; do wait_for "netplugin on ${P}h$i" 300 test -S "$STATE/h$i/attach.sock"; done

run() { echo "\$ netctl $*"; "${NETCTL[@]}" "$@"; }
run net create --encap vxlan --subnet 198.19.1.0/24 --gateway 198.19.1.254 demo-net
run net ls

declare -a CIP
for i in 0 1; do
	C=${P}c$i
	echo "==> container $C on host ${P}h$i: attach to demo-net through netplugin's attach API"
	ip netns add "$C"
	inns "$C" ip link set lo up
	OUT=$(curl -fsS --unix-socket "$STATE/h$i/attach.sock" -H 'Content-Type: application/json' http://netplugin/attach \
		-d "{\"tenant\":\"default\",\"network\":\"demo-net\",\"containerID\":\"c$i\",\"name\":\"c$i\",\"netns\":\"/var/run/netns/$C\"}")
	echo "    $OUT"
	CIP[i]=$(echo "$OUT" | sed -n 's/.*"ipAddress":"\([0-9.]*\)\/.*/\1/p')
	inns "$C" ip -br addr show eth0
done

echo "==> ${P}c0 (host ${P}h0) pings ${P}c1 (host ${P}h1) over VXLAN"
wait_for "the first reply" 50 inns "${P}c0" ping -c 1 -W 1 "${CIP[1]}"
inns "${P}c0" ping -c 3 "${CIP[1]}"

echo "==> ${P}c1 runs a TCP and UDP echo on port 7000; ${P}c0 sends a request, 3 MB and a datagram"
inns "${P}c1" "$ROOT/bin/netprobe" serve -tcp :7000 -udp :7000 -lifetime 24h >"$STATE/c1-netprobe.log" 2>&1 &
echo $! >"$STATE/c1-netprobe.pid"
wait_for "the echo in ${P}c1" 50 grep -q ready "$STATE/c1-netprobe.log"
inns "${P}c0" "$ROOT/bin/netprobe" tcp -addr "${CIP[1]}:7000" -bytes 64
inns "${P}c0" "$ROOT/bin/netprobe" tcp -addr "${CIP[1]}:7000" -bytes 3145728
inns "${P}c0" "$ROOT/bin/netprobe" udp -addr "${CIP[1]}:7000"

cat <<EOT

The cluster keeps running. Look around:
  ip netns exec ${P}m bin/netctl --netmaster http://$MASTER:9999 net inspect demo-net
  ip netns exec ${P}m curl -s http://$MASTER:9999/debug/ofnet
  ip netns exec ${P}h0 curl -s http://$(echo 198.18.0.10):9090/inspect/driver
  ovs-ofctl -O OpenFlow13 dump-flows unix:$STATE/h0/contivVxlanBridge.mgmt
  ip netns exec ${P}c0 ping ${CIP[1]}
  ip netns exec ${P}c0 bin/netprobe tcp -addr ${CIP[1]}:7000 -bytes 10000000
Logs: $STATE/m/netmaster.log, $STATE/h*/netplugin.log
Stop and remove everything:  bash scripts/quickstart.sh stop
EOT
