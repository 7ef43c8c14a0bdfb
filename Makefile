# Day-to-day targets. The README's two commands are the supported entry points;
# these are shortcuts for developers who have run scripts/install-deps.sh once.
GO ?= go
BIN := bin
# Version, commit and build time stamped into every binary (utils/version).
LDFLAGS = $(shell bash scripts/version.sh)

.PHONY: build test bench lint deps

build:
	$(GO) build ./...
	@mkdir -p $(BIN)
	@for d in cmd/*/ ; do [ ! -d "$$d" ] || $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./$$d || exit 1; done
	@# the portmap CNI plugin chained after contivk8s (docs/k8s.md, "Host ports")
	@CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/contiv-portmap github.com/containernetworking/plugins/plugins/meta/portmap

test:
	bash scripts/test.sh

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...

deps:
	bash scripts/install-deps.sh
