#!/usr/bin/env bash
# Checks that the installer and the quickstart leave the machine's own
# services alone (issue 25; docs/compat.md U1). It starts stand-ins for a
# user's services — an etcd serving 127.0.0.1:2379 with a key in it (a
# plain listener when etcd is not installed) and a bird with its own
# config — and puts shims for systemctl, service, invoke-rc.d and
# deb-systemd-invoke first on PATH that claim etcd, bird and prometheus
# are running system services and record every call. Then it runs the
# installer or the quickstart and fails if any service was stopped,
# disabled, masked or restarted, if a stand-in died or lost its data, or
# if /usr/sbin/policy-rc.d changed.
#
# Usage, as root:  bash test/quickstart/check-host-services.sh [mode]
#   installer      scripts/install-deps.sh main (seconds when installed)
#   installer-test scripts/install-deps.sh (what the tests need)
#   quickstart     scripts/quickstart.sh, then its stop (the default);
#                  also prints how many lines the quickstart printed
# Next to other tests on the machine, take the test lock:
#   flock /tmp/contiv-nettest.lock bash test/quickstart/check-host-services.sh
# (scripts/quickstart.sh closes inherited descriptors, so the daemons it
# leaves running do not keep the lock.)
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-quickstart}
case "$mode" in installer | installer-test | quickstart) ;; *)
	echo "usage: $0 [installer|installer-test|quickstart]" >&2
	exit 2
	;;
esac
work=$(mktemp -d /tmp/contiv-hostsvc.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "check-host-services: FAIL: $*" >&2
	exit 1
}
say() { echo "check-host-services: $*"; }
listening() { ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }

# The user's etcd on 2379 (or whatever already listens there: then that
# one is the user's, and only its listening is checked).
etcd_pid= key_url=http://127.0.0.1:2379
if listening 2379; then
	say "something already listens on 2379; checking it keeps listening"
elif command -v etcd >/dev/null 2>&1; then
	etcd --name user --data-dir "$work/etcd" --listen-client-urls "$key_url" --advertise-client-urls "$key_url" \
		--listen-peer-urls http://127.0.0.1:12380 --initial-advertise-peer-urls http://127.0.0.1:12380 \
		--initial-cluster user=http://127.0.0.1:12380 >"$work/etcd.log" 2>&1 &
	etcd_pid=$!
	pids+=("$etcd_pid")
	for _ in $(seq 1 100); do curl -fsS "$key_url/health" >/dev/null 2>&1 && break; sleep 0.1; done
	# PUT user-key = user-value through etcd's JSON gateway (base64).
	curl -fsS "$key_url/v3/kv/put" -d '{"key":"dXNlci1rZXk=","value":"dXNlci12YWx1ZQ=="}' >/dev/null ||
		fail "the stand-in etcd does not take a key (log: $(tail -3 "$work/etcd.log"))"
else
	python3 -m http.server 2379 --bind 127.0.0.1 >"$work/listener.log" 2>&1 &
	etcd_pid=$!
	pids+=("$etcd_pid")
	for _ in $(seq 1 50); do listening 2379 && break; sleep 0.1; done
fi
listening 2379 || fail "no listener on 2379 to watch"

# The user's bird, own config and control socket.
bird_pid=
if command -v bird >/dev/null 2>&1; then
	printf 'router id 198.18.255.1;\nprotocol device {}\n' >"$work/bird.conf"
	bird -f -c "$work/bird.conf" -s "$work/bird.ctl" >"$work/bird.log" 2>&1 &
	bird_pid=$!
	pids+=("$bird_pid")
	for _ in $(seq 1 50); do [ -S "$work/bird.ctl" ] && break; sleep 0.1; done
	[ -S "$work/bird.ctl" ] || fail "the stand-in bird did not start: $(cat "$work/bird.log")"
fi

# Shims that pretend etcd, bird and prometheus are active system services
# and record every call; anything else goes to the real command, if any.
mkdir -p "$work/shim"
for cmd in systemctl service invoke-rc.d deb-systemd-invoke; do
	cat >"$work/shim/$cmd" <<SHIM
#!/bin/sh
echo "$cmd \$*" >>"$work/calls"
case "$cmd \$*" in
"systemctl is-active"*etcd* | "systemctl is-active"*bird* | "systemctl is-active"*prometheus* | \\
"systemctl is-enabled"*etcd* | "systemctl is-enabled"*bird* | "systemctl is-enabled"*prometheus*) exit 0 ;;
esac
PATH=\$(echo "\$PATH" | sed "s|$work/shim:||")
command -v $cmd >/dev/null 2>&1 || exit 1
exec $cmd "\$@"
SHIM
	chmod +x "$work/shim/$cmd"
done
touch "$work/calls"
policy_before=$(sha256sum /usr/sbin/policy-rc.d 2>/dev/null || echo absent)

case "$mode" in
installer) PATH="$work/shim:$PATH" bash scripts/install-deps.sh main ;;
installer-test) PATH="$work/shim:$PATH" bash scripts/install-deps.sh ;;
quickstart)
	PATH="$work/shim:$PATH" bash scripts/quickstart.sh 2>&1 | tee "$work/quickstart.out"
	[ "${PIPESTATUS[0]}" = 0 ] || fail "the quickstart failed"
	say "the quickstart printed $(wc -l <"$work/quickstart.out") lines"
	PATH="$work/shim:$PATH" bash scripts/quickstart.sh stop >/dev/null
	;;
esac

# The verdict.
if grep -Eq '(^| )(stop|disable|mask|restart|try-restart|reload|reload-or-restart|kill)( |$)' "$work/calls"; then
	fail "a service was touched: $(grep -E '(^| )(stop|disable|mask|restart|try-restart|reload|reload-or-restart|kill)( |$)' "$work/calls" | tr '\n' ';')"
fi
[ -z "$etcd_pid" ] || kill -0 "$etcd_pid" 2>/dev/null || fail "the etcd on 2379 died"
listening 2379 || fail "nothing listens on 2379 any more"
if [ -n "$etcd_pid" ] && [ -d "$work/etcd" ]; then
	curl -fsS "$key_url/v3/kv/range" -d '{"key":"dXNlci1rZXk="}' | grep -q dXNlci12YWx1ZQ== ||
		fail "the etcd on 2379 lost its key"
fi
if [ -n "$bird_pid" ]; then
	kill -0 "$bird_pid" 2>/dev/null || fail "bird died"
	birdc -s "$work/bird.ctl" show status 2>/dev/null | grep -q "Daemon is up and running" || fail "bird does not answer"
fi
[ "$(sha256sum /usr/sbin/policy-rc.d 2>/dev/null || echo absent)" = "$policy_before" ] || fail "/usr/sbin/policy-rc.d changed"
say "ok ($mode): etcd on 2379${bird_pid:+, bird} untouched; service calls: $(sort -u "$work/calls" | tr '\n' ';')"
