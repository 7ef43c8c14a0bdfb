#!/usr/bin/env bash
# cpuhog.sh: load every CPU with busy loops for a bounded time, then stop.
# Used to run the suite on a loaded machine (docs/testbed.md, "Running
# under load").
#
#   scripts/cpuhog.sh [SECONDS] [WORKERS]
#
# SECONDS defaults to 1800 (30 min, the hog's hard bound is 4 h); WORKERS
# defaults to the number of CPUs. The workers run at normal priority. The
# hog stops itself after SECONDS, and on SIGINT/SIGTERM/EXIT kills exactly
# the workers it started.
set -euo pipefail

secs=${1:-1800}
workers=${2:-$(nproc)}
if ! [[ $secs =~ ^[0-9]+$ && $workers =~ ^[0-9]+$ ]] || ((secs < 1 || secs > 14400 || workers < 1 || workers > 64)); then
	echo "usage: $0 [SECONDS 1..14400] [WORKERS 1..64]" >&2
	exit 2
fi

pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 0' INT TERM

end=$((SECONDS + secs))
for ((i = 0; i < workers; i++)); do
	# Each worker checks the deadline itself, so it ends even if this
	# script is killed with SIGKILL.
	bash -c 'end=$(( $(date +%s) + '"$secs"' )); while (( $(date +%s) < end )); do for ((j = 0; j < 200000; j++)); do :; done; done' &
	pids+=($!)
done
echo "cpuhog: ${workers} workers for ${secs}s (pids ${pids[*]})" >&2
while ((SECONDS < end)); do
	sleep 1
done
