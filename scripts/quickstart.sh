#!/usr/bin/env bash
# The main job: a two-host Contiv cluster with Docker on this machine.
# netmaster runs on its embedded etcd in docker mode; each "host" is a
# network namespace with its own Open vSwitch (userspace datapath), a
# netplugin serving the Docker network and IPAM driver, and its own Docker
# Engine. A network made with netctl shows up on both engines; one
# `docker run --network` container on each host; they ping each other,
# fetch a web page and exchange TCP (a request/response and a 3 MB
# transfer, checksum compared) and UDP, at the containers' default
# interface settings. Run as root on Debian. The cluster keeps running for
# you to look around; `bash scripts/quickstart.sh stop` removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# Descriptors inherited from the caller (a lock taken with flock(1), say)
# are closed, so the daemons started below, which outlive this script, do
# not hold them for as long as the cluster runs.
for fd in $(ls /proc/$$/fd); do
	case $fd in 0 | 1 | 2 | 255) ;; *) eval "exec $fd>&-" ;; esac
done
STATE=${QUICKSTART_STATE:-/run/contiv-quickstart}
P=${QUICKSTART_PREFIX:-cqs-} # prefix of every namespace (at most 4 characters)

stop_cluster() {
	for sock in "$STATE"/h*/docker/docker.sock; do
		[ -S "$sock" ] || continue
		ids=$(timeout 20 docker -H "unix://$sock" ps -aq 2>/dev/null || true)
		[ -z "$ids" ] || timeout 60 docker -H "unix://$sock" rm -f $ids >/dev/null 2>&1 || true
	done
	for pidf in "$STATE"/h*/dockerd.pid; do
		[ -f "$pidf" ] || continue
		kill "$(cat "$pidf")" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$(cat "$pidf")" 2>/dev/null || break; sleep 0.2; done
	done
	# What the engines leave: container processes (in cgroups named after
	# their host) and the cgroups themselves.
	for cg in /sys/fs/cgroup/*/"$P"h*; do
		[ -d "$cg" ] || continue
		find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null || true
	done
	sleep 0.2
	for cg in /sys/fs/cgroup/*/"$P"h*; do
		[ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
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

[ "${QUICKSTART_SKIP_INSTALL:-}" = 1 ] || bash scripts/install-deps.sh main
export PATH=/usr/local/go/bin:$PATH
mkdir -p bin
# One line for the build; the compiler's and module downloads' output goes
# to bin/build.log, shown only when the build fails.
echo "==> building bin/netmaster, bin/netplugin, bin/netctl, bin/contiv-certs, bin/netprobe (log: bin/build.log)"
if ! go build -ldflags "$(bash scripts/version.sh)" -o bin/ ./cmd/netmaster ./cmd/netplugin ./cmd/netctl ./cmd/contiv-certs ./test/tools/netprobe >bin/build.log 2>&1; then
	tail -n 40 bin/build.log >&2
	echo "quickstart: the build failed (bin/build.log)" >&2
	exit 1
fi
stop_cluster # a previous run's leftovers
mkdir -p "$STATE"
trap 'echo "quickstart failed; logs are in $STATE (bash scripts/quickstart.sh stop removes everything)" >&2' ERR

inns() { ip netns exec "$1" "${@:2}"; }
dk() { local h=$1; shift; docker -H "unix://$STATE/$h/docker/docker.sock" "$@"; } # dk h0 ps
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
# The store serves TLS and asks every client for a certificate of its CA
# (docs/security.md, "The store").
bash scripts/store-pki.sh "$STATE/store-pki" $MASTER
SP=$STATE/store-pki
STORE_ARGS=(--etcd-endpoints "https://$MASTER:2379" --etcd-cacert "$SP/ca.pem" --etcd-cert "$SP/client.pem" --etcd-key "$SP/client-key.pem")
echo "==> netmaster in namespace ${P}m at $MASTER:9999, embedded etcd on https://$MASTER:2379 (client certificates required)"
ip netns add "${P}m"
inns "${P}m" ip link set lo up
veth_into underlay "${P}m" eth1
inns "${P}m" ip addr add $MASTER/24 dev eth1
mkdir -p "$STATE/m"
# The ofnet RPC between netmaster and the agents is mutual TLS with role
# certificates (docs/security.md): a CA, netmaster's master certificate,
# and one agent certificate per host, made here by contiv-certs.
PKI=$STATE/pki
"$ROOT/bin/contiv-certs" ca --dir "$PKI" >/dev/null
"$ROOT/bin/contiv-certs" master --dir "$PKI" --ip "$MASTER" >/dev/null
# Started with `ip netns exec` itself, not the inns function: in the
# background a function runs in a subshell, and $! would be that shell's
# pid, not the daemon's (ip netns exec execs the daemon in place).
ip netns exec "${P}m" "$ROOT/bin/netmaster" --mode docker --netmode vlan --fwdmode bridge \
	--name netplugin --docker-socket "$STATE/h0/docker/docker.sock" \
	"${STORE_ARGS[@]}" --embedded-etcd-dir "$STATE/m/etcd" \
	--embedded-etcd-cert-file "$SP/server.pem" --embedded-etcd-key-file "$SP/server-key.pem" --embedded-etcd-client-ca-file "$SP/ca.pem" \
	--external-address "$MASTER:9999" --internal-address "$MASTER:9999" \
	--rpc-tls-cert-file "$PKI/master.pem" --rpc-tls-key-file "$PKI/master-key.pem" --rpc-tls-ca-file "$PKI/ca.pem" \
	>"$STATE/m/netmaster.log" 2>&1 &
echo $! >"$STATE/m/netmaster.pid"
NETCTL=(inns "${P}m" "$ROOT/bin/netctl" --netmaster "http://$MASTER:9999")
wait_for netmaster 150 "${NETCTL[@]}" tenant ls

for i in 0 1; do
	H=${P}h$i IP=198.18.0.1$i D=$STATE/h$i
	echo "==> host $H: own ovsdb-server + ovs-vswitchd, underlay $IP on br-phy, netplugin, Docker Engine"
	mkdir -p "$D"
	ip netns add "$H"
	inns "$H" ip link set lo up
	veth_into underlay "$H" eth1
	veth_into vlanfab "$H" eth2
	export OVS_RUNDIR=$D OVS_DBDIR=$D OVS_LOGDIR=$D OVS_SYSCONFDIR=$D
	ovsdb-tool create "$D/conf.db" /usr/share/openvswitch/vswitch.ovsschema
	inns "$H" ovsdb-server "$D/conf.db" --remote="punix:$D/db.sock" --pidfile="$D/ovsdb-server.pid" \
		--unixctl="$D/ovsdb-server.ctl" --log-file="$D/ovsdb-server.log" -vconsole:off --detach 2>>"$D/ovsdb-server.log"
	inns "$H" ovs-vsctl --db="unix:$D/db.sock" --no-wait init
	inns "$H" ovs-vswitchd "unix:$D/db.sock" --pidfile="$D/ovs-vswitchd.pid" \
		--unixctl="$D/ovs-vswitchd.ctl" --log-file="$D/ovs-vswitchd.log" -vconsole:off --detach 2>>"$D/ovs-vswitchd.log"
	inns "$H" ovs-vsctl --db="unix:$D/db.sock" add-br br-phy -- set bridge br-phy datapath_type=netdev -- add-port br-phy eth1
	inns "$H" ip addr add "$IP/24" dev br-phy
	inns "$H" ip link set br-phy up
	"$ROOT/bin/contiv-certs" agent --dir "$PKI" --host "$H" --ip "$IP" >/dev/null
	ip netns exec "$H" "$ROOT/bin/netplugin" --mode docker --netmode vlan --fwdmode bridge --host "$H" \
		--vtep-ip "$IP" --ctrl-ip "$IP" --vlan-uplinks eth2 "${STORE_ARGS[@]}" \
		--ovsdb-socket "$D/db.sock" --ovs-datapath netdev --attach-socket "$D/attach.sock" \
		--mesos-socket "$D/mesos.sock" --mesos-state-dir "$D/mesos" \
		--name netplugin --docker-plugin-dir "$D/plugins" --docker-socket "$D/docker/docker.sock" \
		--rpc-tls-cert-file "$PKI/agent-$H.pem" --rpc-tls-key-file "$PKI/agent-$H-key.pem" --rpc-tls-ca-file "$PKI/ca.pem" \
		>"$D/netplugin.log" 2>&1 &
	echo $! >"$D/netplugin.pid"
	# The engine runs in the host's namespace (it moves the link netplugin
	# hands over into the container) and sees the host's plugin folder as
	# /run/docker/plugins; own data root, no iptables, no default bridge.
	mkdir -p "$D/plugins" "$D/docker" /run/docker/plugins
	echo '{}' >"$D/docker/daemon.json"
	nsenter --net="/var/run/netns/$H" unshare -m --propagation private sh -c "mount --bind $D/plugins /run/docker/plugins && \
		exec dockerd --config-file $D/docker/daemon.json --data-root $D/docker/data --exec-root $D/docker/exec \
		-H unix://$D/docker/docker.sock --pidfile $D/docker/docker.pid --iptables=false --ip6tables=false \
		--bridge=none --storage-driver=fuse-overlayfs --cgroup-parent /$H" >"$D/dockerd.log" 2>&1 &
	echo $! >"$D/dockerd.pid"
done
unset OVS_RUNDIR OVS_DBDIR OVS_LOGDIR OVS_SYSCONFDIR
for i in 0 1; do wait_for "netplugin on ${P}h$i" 300 test -S "$STATE/h$i/plugins/netplugin.sock"; done
echo "==> busybox image (from Debian's busybox-static) into both engines"
mkdir -p "$STATE/busybox/bin"
cp "$(command -v busybox)" "$STATE/busybox/bin/busybox"
chroot "$STATE/busybox" /bin/busybox --install -s /bin
for i in 0 1; do
	wait_for "the engine on ${P}h$i" 300 dk h$i version
	tar -C "$STATE/busybox" -c . | dk h$i import - busybox >/dev/null
done

run() { echo "\$ netctl $*"; "${NETCTL[@]}" "$@"; }
drun() { local h=$1; shift; echo "[${P}$h] \$ docker $*"; dk "$h" "$@"; }
run net create --encap vxlan --subnet 198.19.1.0/24 --gateway 198.19.1.254 demo-net
run net ls
for i in 0 1; do
	wait_for "demo-net on the engine of ${P}h$i" 150 sh -c "docker -H unix://$STATE/h$i/docker/docker.sock network ls | grep -q demo-net"
	drun h$i network ls --filter driver=netplugin
done

echo "==> one container on each host: docker run --network demo-net"
drun h1 run -d --name web --network demo-net busybox sh -c 'mkdir -p /www && echo "hello from web on ${HOSTNAME}" >/www/index.html && exec httpd -f -p 80 -h /www'
drun h0 run -d --name client --network demo-net busybox sleep 86400
WEB=$(dk h1 inspect -f '{{(index .NetworkSettings.Networks "demo-net").IPAddress}}' web)
CLIENT=$(dk h0 inspect -f '{{(index .NetworkSettings.Networks "demo-net").IPAddress}}' client)
echo "    web ${WEB} on ${P}h1, client ${CLIENT} on ${P}h0 (contiv's addresses: docker network inspect demo-net)"
drun h0 network inspect demo-net -f '{{range .Containers}}{{.Name}} {{.IPv4Address}} {{.MacAddress}}{{end}}'
NS_CLIENT=/proc/$(dk h0 inspect -f '{{.State.Pid}}' client)/ns/net
NS_WEB=/proc/$(dk h1 inspect -f '{{.State.Pid}}' web)/ns/net

echo "==> client (host ${P}h0) pings web (host ${P}h1) over VXLAN"
wait_for "the first reply" 50 nsenter --net="$NS_CLIENT" ping -c 1 -W 1 "$WEB"
nsenter --net="$NS_CLIENT" ping -c 3 "$WEB"

echo "==> client fetches web's page"
drun h0 exec client wget -q -O - "http://$WEB/"

echo "==> web also runs a TCP and UDP echo on port 7000; client sends a request, 3 MB and a datagram"
nsenter --net="$NS_WEB" "$ROOT/bin/netprobe" serve -tcp :7000 -udp :7000 -lifetime 24h >"$STATE/web-netprobe.log" 2>&1 &
echo $! >"$STATE/web-netprobe.pid"
wait_for "the echo in web" 50 grep -q ready "$STATE/web-netprobe.log"
nsenter --net="$NS_CLIENT" "$ROOT/bin/netprobe" tcp -addr "$WEB:7000" -bytes 64
nsenter --net="$NS_CLIENT" "$ROOT/bin/netprobe" tcp -addr "$WEB:7000" -bytes 3145728
nsenter --net="$NS_CLIENT" "$ROOT/bin/netprobe" udp -addr "$WEB:7000"

cat <<EOT

The cluster keeps running. Look around:
  docker -H unix://$STATE/h0/docker/docker.sock ps
  docker -H unix://$STATE/h0/docker/docker.sock exec client ping $WEB
  docker -H unix://$STATE/h1/docker/docker.sock network inspect demo-net
  docker -H unix://$STATE/h0/docker/docker.sock run --rm --network demo-net busybox wget -q -O - http://$WEB/
  ip netns exec ${P}m bin/netctl --netmaster http://$MASTER:9999 net inspect demo-net
  ip netns exec ${P}m bin/netctl --netmaster http://$MASTER:9999 endpoint inspect client
  ip netns exec ${P}h0 curl -s http://127.0.0.1:9090/inspect/driver
Logs: $STATE/m/netmaster.log, $STATE/h*/netplugin.log, $STATE/h*/dockerd.log, $STATE/h*/ovs-vswitchd.log
Stop and remove everything:  bash scripts/quickstart.sh stop
EOT
