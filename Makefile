# A2A Mesh. `make run` starts the platform on its embedded NATS; `make test`
# runs the whole test suite. Both work on a fresh machine with Go installed.

GO       ?= go
BIN      ?= bin
FUZZTIME ?= 15s
BENCHTIME ?= 2s

.PHONY: run build dist image test-deps test test-nodeloss lint fuzz bench bench-go clean

run: build ## run the whole platform in one process, offering the runtime and adapter beside it at /install.sh; flags in ARGS, e.g. make run ARGS='--http 127.0.0.1:3100' (each flag also has an environment variable: a2a-platform up --help)
	$(BIN)/a2a-platform up $(ARGS)

build: ## build the three binaries into ./bin
	$(GO) build -trimpath -o $(BIN)/ ./cmd/a2a-platform ./cmd/a2a-runtime ./cmd/a2a-adapter

dist: ## build a2a-runtime and a2a-adapter for linux and darwin (amd64, arm64) into ./dist, with SHA256SUMS: serve them with `a2a-platform up --downloads-dir dist`; VERSION=v1.2.0 stamps their version
	VERSION=$(VERSION) GO=$(GO) deploy/dist.sh dist

# The version `make dist` and `make image` stamp (empty: the Go build information).
VERSION ?=
IMAGE   ?= a2a-mesh/platform

image: ## build the platform's container image (deploy/docker/Dockerfile) as $(IMAGE):$(VERSION), with the downloads for /install.sh
	docker build -f deploy/docker/Dockerfile --build-arg VERSION=$(VERSION) -t $(IMAGE):$(or $(VERSION),dev) .

# The real agent host CLIs the adapter's host tests drive, from npm, pinned
# (e2e/hosts/install-clis.sh; reinstalled only when a version changes), and
# helm for the chart tests, built from source at a pinned version
# (deploy/helm/install-helm.sh; rebuilt only when that version changes).
HOSTCLIS ?= $(CURDIR)/.hostclis

test-deps: ## install the real agent host CLIs (and Node 24 to run them) from npm, and helm, into ./.hostclis
	e2e/hosts/install-clis.sh $(HOSTCLIS)
	GO=$(GO) deploy/helm/install-helm.sh $(HOSTCLIS)

test: test-deps ## run every test with the race detector
	A2A_HOST_CLIS=$(HOSTCLIS) $(GO) test -race -count=1 -timeout 30m ./...

test-nodeloss: ## only the cluster tests that kill a node under load (make test runs them too)
	$(GO) test -race -count=1 -timeout 20m -run 'LostMidLoad' ./e2e/cluster

lint: ## gofmt and go vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

fuzz: ## run every fuzz target for FUZZTIME each
	@set -e; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

bench: build ## measure the platform and the runtime end to end (see docs/benchmarks.md)
	$(BIN)/a2a-platform bench
	$(MAKE) bench-go

bench-go: ## Go benchmarks of the hot paths
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem ./...

clean:
	rm -rf $(BIN) dist
