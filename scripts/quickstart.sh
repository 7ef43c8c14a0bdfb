#!/usr/bin/env bash
# The main job. Today: the store-layer demo on an embedded etcd (netmaster
# and netplugin are not built yet). Run as root on Debian; stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export PATH=/usr/local/go/bin:$PATH
go run ./test/demo/store
