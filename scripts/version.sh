#!/usr/bin/env bash
# Prints the -ldflags that stamp version, commit and build time into
# utils/version (docs/operations.md). Used by the Makefile,
# scripts/quickstart.sh and the test bed's builder:
#   go build -ldflags "$(bash scripts/version.sh)" ./cmd/...
# BUILD_VERSION overrides the version (default: git describe of HEAD).
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=github.com/contiv/netplugin/utils/version
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if ! git diff --quiet HEAD -- 2>/dev/null; then
	commit="$commit-dirty"
fi
version=${BUILD_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo unknown)}
built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "-X $pkg.Version=$version -X $pkg.GitCommit=$commit -X $pkg.BuildTime=$built"
