#!/usr/bin/env bash
# The whole test suite: installs what it needs, then runs every test.
# Run as root (namespaces, Open vSwitch). CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export PATH=/usr/local/go/bin:$PATH
echo "== gofmt / go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi
go vet ./...
echo "== go test"
go test -count=1 -timeout 25m ./...
