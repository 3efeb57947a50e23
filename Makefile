# enrichq: `make help` lists the targets. Every variable below can be overridden: `make test GO=go1.26.8`.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
GOFMT     ?= gofmt
BIN       ?= bin
PKGS      ?= ./...
# the same build as the Dockerfile's: static, reproducible paths, stripped
CGO_ENABLED ?= 0
LDFLAGS   ?= -s -w
BUILDFLAGS ?= -trimpath
TESTFLAGS ?= -race -count=1 -timeout 20m
SHORTFLAGS ?= -short -count=1 -timeout 10m
FUZZTIME  ?= 30s
COMPOSE_FILE ?= docker-compose.yml

.PHONY: help services services-down build dev test test-short demo bench chaos vet fuzz compose-check helm-check clean clean-data

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  %-14s %s\n", $$1, $$2}'

services: ## make sure Postgres and Redis are reachable (scripts/services.sh up)
	scripts/services.sh up

services-down: ## stop what `make services` started itself
	scripts/services.sh down

build: ## build the production binaries (api, worker, scheduler, enrichq) into bin/, as the Dockerfile does
	@mkdir -p $(BIN)
	CGO_ENABLED=$(CGO_ENABLED) $(GO) build $(BUILDFLAGS) -ldflags='$(LDFLAGS)' -o $(BIN)/ ./cmd/...

dev: build ## also build the dev tools (bench, chaos, demo, fakevendor, fakepdl, fakehunter, fakeplatform) into bin/
	CGO_ENABLED=$(CGO_ENABLED) $(GO) build $(BUILDFLAGS) -ldflags='$(LDFLAGS)' -o $(BIN)/ ./dev/...

test: services ## run all tests with the race detector, against real Postgres and Redis; then the Helm chart's (helm-check)
	$(GO) test $(TESTFLAGS) $(PKGS)
	$(MAKE) --no-print-directory helm-check

test-short: ## the tests without the race detector, -short skipping only the few long ones (money_test, chaos, bench); most still need Postgres and Redis running (make services)
	$(GO) test $(SHORTFLAGS) $(PKGS)

DEMOFLAGS ?= -waterfall
demo: services dev ## three fake vendors (seed, pdl, hunter), one list: the waterfall's credits and matches beside each vendor alone (DEMOFLAGS= runs the one-vendor demo; DEMOFLAGS=-stay keeps it up)
	./$(BIN)/demo -bin $(BIN) $(DEMOFLAGS)

BENCHFLAGS ?=
bench: services dev ## benchmarks with baselines (bin/bench; BENCHFLAGS="-scenario ceiling -repeat 3 -scale 0.1 -profile .data/bench/prof")
	./$(BIN)/bench -bin $(BIN) -out bench.json $(BENCHFLAGS)

CHAOSFLAGS ?=
chaos: services dev ## inject faults into freshly built binaries of bin/; CHAOSFLAGS="-faults sigkill -rows 4000"
	./$(BIN)/chaos -bin $(BIN) $(CHAOSFLAGS)

vet: ## gofmt check and go vet
	@files=$$(find . -name '*.go' -not -path './.data/*' -not -path './bin/*' -not -path './vendor/*' -not -path '*/testdata/*'); \
	bad=$$($(GOFMT) -l $$files); \
	if [ -n "$$bad" ]; then echo "gofmt needed on:"; echo "$$bad"; exit 1; fi
	$(GO) vet $(PKGS)

fuzz: ## run every fuzz target for FUZZTIME (default 30s) each
	@targets=$$($(GO) test -list '^Fuzz' $(PKGS) | awk '/^Fuzz/ {n[++c] = $$1; next} /^ok/ {for (i = 1; i <= c; i++) print $$2 " " n[i]; c = 0; next} {c = 0}'); \
	if [ -z "$$targets" ]; then echo "no fuzz targets found"; exit 0; fi; \
	while read -r pkg name; do \
		echo "== $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
	done <<< "$$targets"

compose-check: ## validate docker-compose.yml (docker compose or docker-compose)
	@if docker compose version >/dev/null 2>&1; then c="docker compose"; \
	elif command -v docker-compose >/dev/null 2>&1; then c=docker-compose; \
	else echo "need docker compose or docker-compose (Debian: apt-get install docker-compose)"; exit 1; fi; \
	$$c -f $(COMPOSE_FILE) config -q && $$c -f $(COMPOSE_FILE) --profile demo config -q && echo "$(COMPOSE_FILE): ok ($$c)"

helm-check: ## lint and render deploy/helm/enrichq with Helm's Go packages (a module of its own, deploy/helm)
	cd deploy/helm && $(GO) test -count=1 ./...

clean: ## remove build and test output (keeps .data)
	rm -rf $(BIN) coverage.out coverage.html *.coverprofile *.test bench.json

clean-data: services-down ## stop our own services and delete .data (local databases)
	rm -rf .data
