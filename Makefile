# flops: build, test, lint, protobuf and local networks. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

BUILDDIR ?= $(CURDIR)/build
TOOLS    := $(BUILDDIR)/tools
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X github.com/cosmos/cosmos-sdk/version.Name=flops \
            -X github.com/cosmos/cosmos-sdk/version.AppName=flopsd \
            -X github.com/cosmos/cosmos-sdk/version.Version=$(VERSION) \
            -X github.com/cosmos/cosmos-sdk/version.Commit=$(COMMIT) \
            -X github.com/flopsnet/flops/worker/daemon.Version=$(VERSION)
GOFLAGS_BUILD := -trimpath -ldflags '$(LDFLAGS)'
# Every go command here builds with -trimpath, the tests and vet too: the build cache keys
# a package by it, so without it `make test` compiled every dependency a second time next
# to `make build`'s. A cold `make test` then needed 9.1 GB of disk at its peak (5.4 GB of
# build cache, 3.7 GB of go test's work directory) and 19.5 min; with it 4.9 GB, and
# 13m40s in a fresh clone. A CI run on a machine low on disk failed at its links ("no
# space left on device").
export GOFLAGS += -trimpath
# Hand-written Go files (generated protobuf code is left out of gofmt and vet checks).
GOFILES = $(shell git ls-files --cached --others --exclude-standard '*.go' | grep -v -e '\.pb\.go$$' -e '\.pb\.gw\.go$$')

.PHONY: help build ts-build web demo demo-multi install test test-long ibc-relay test-unit test-e2e sim sim-long load load-worker bench lint proto-gen proto-lint proto-check localnet localnet-multi localnet-stop clean fuzz

help: ## this list
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'

build: ## build flopsd, flops-worker and flops-demo into build/, and the GPU solver where nvcc is found
	go build $(GOFLAGS_BUILD) -o $(BUILDDIR)/flopsd ./cmd/flopsd
	go build $(GOFLAGS_BUILD) -o $(BUILDDIR)/flops-worker ./cmd/flops-worker
	go build $(GOFLAGS_BUILD) -o $(BUILDDIR)/flops-demo ./cmd/flops-demo
	@$(MAKE) --no-print-directory gpu-solver-if-cuda

# The CUDA PoCP solver (tools/gpu-solver), which flops-worker finds next to itself
# (pocp.solver: auto). Built only where the CUDA toolkit's nvcc is.
NVCC ?= nvcc
.PHONY: gpu-solver gpu-solver-if-cuda
gpu-solver: ## the CUDA PoCP solver into build/flops-gpu-solver (needs the CUDA toolkit's nvcc)
	$(MAKE) -C tools/gpu-solver gpu-solver NVCC=$(NVCC)
	mkdir -p $(BUILDDIR) && cp tools/gpu-solver/gpu-solver $(BUILDDIR)/flops-gpu-solver

gpu-solver-if-cuda:
	@if command -v $(NVCC) >/dev/null 2>&1; then $(MAKE) --no-print-directory gpu-solver; \
	else echo "nvcc not found: the GPU solver is not built (flops-worker answers PoCP and runs BUILTIN gemm on the CPU; make gpu-solver with the CUDA toolkit)"; fi

TSDIR = clients/ts

$(TSDIR)/node_modules/.package-lock.json: $(TSDIR)/package-lock.json
	cd $(TSDIR) && npm ci --no-audit --no-fund

ts-build: $(TSDIR)/node_modules/.package-lock.json ## build the TypeScript client (clients/ts) and its tests into clients/ts/dist
	cd $(TSDIR) && npm run build

WEBDIR = web

$(WEBDIR)/node_modules/.package-lock.json: $(WEBDIR)/package-lock.json
	cd $(WEBDIR) && npm ci --no-audit --no-fund

web: ts-build $(WEBDIR)/node_modules/.package-lock.json ## build the dashboard (web/: Vite, Lit, the TS client) into web/dist; the demo serves it
	cd $(WEBDIR) && npm run build

demo: build $(if $(shell command -v npm),web) ## the whole market on one machine: a chain, two providers, jobs run and paid (Ctrl-C stops it)
	$(BUILDDIR)/flops-demo $(DEMO_FLAGS)

demo-multi: build $(if $(shell command -v npm),web) ## the demo on 4 validators
	$(BUILDDIR)/flops-demo -validators 4 $(DEMO_FLAGS)

install: ## install flopsd and flops-worker into GOBIN, and the GPU solver next to them where nvcc is found
	go install $(GOFLAGS_BUILD) ./cmd/flopsd ./cmd/flops-worker
	@if command -v $(NVCC) >/dev/null 2>&1; then $(MAKE) --no-print-directory gpu-solver && \
	  bin=$$(go env GOBIN); bin=$${bin:-$$(go env GOPATH)/bin}; cp $(BUILDDIR)/flops-gpu-solver "$$bin/flops-gpu-solver" && echo "installed $$bin/flops-gpu-solver"; \
	else echo "nvcc not found: the GPU solver is not installed (flops-worker answers PoCP and runs BUILTIN gemm on the CPU)"; fi

# The tests are a test build (-tags flopscheat: a worker that can be told to cheat, for the
# tests of the chain's verification); the production config's refusal is checked without it.
TEST_TAGS ?= -tags flopscheat
# Test binaries are linked without DWARF (-w), which no test reads: a panic's or a failed
# test's stack still names files and lines (the pcln table), and the binaries built for
# people to run (make build) keep theirs. A link of app's test binary took 15.5-16.9 s here
# instead of 23.7-25.2 (18.5-20.0 CPU-s instead of 27.4-30.6), and a change low in the
# tree relinks some 40 of them. make load, load-worker and bench keep the default link: the
# figures in the README and the issues' notes were measured with it.
TEST_LDFLAGS ?= -ldflags=-w
# Packages tested at once (go test -p; its default is the CPU count). The end-to-end and
# load packages spend most of their minutes waiting for blocks, so one more than the
# CPUs keeps both cores busy while they wait.
TEST_P ?= $(shell echo $$(( $$(nproc) + 1 )))

test: build ts-build web ## every test but the long runs: unit, keeper, app, end-to-end, the TypeScript client and the dashboard in Chromium (about 6.5-10 min warm, see README)
	cd $(TSDIR) && node --test dist/test/vectors.test.js dist/test/spec.test.js dist/test/results.test.js dist/test/outputs.test.js
	go test -count=1 -timeout 30m -p $(TEST_P) $(TEST_TAGS) $(TEST_LDFLAGS) ./...
	go test -count=1 $(TEST_LDFLAGS) -run 'TestCheatOnlyInTestBuilds' ./worker/config/

test-long: build ## the long runs: the crash matrix (a validator killed mid-run, then all four, restarted; a worker killed mid-task and the only validator killed under it; the demo on 4 validators with one killed; DPS over a real IBC relayer) (about 8 min)
	FLOPS_LONG_TESTS=1 go test -count=1 -timeout 30m $(TEST_TAGS) $(TEST_LDFLAGS) -run 'TestDemoFourValidatorsOneKilled|TestCrashValidatorsRestart|TestDemoWorkerAndChainCrash' ./tests/e2e/
	FLOPS_LONG_TESTS=1 go test -count=1 $(TEST_LDFLAGS) -run 'TestCUDASource' ./tools/gpu-solver/check/
	scripts/ibc-relay.sh

ibc-relay: build ## DPS to a second localnet and back over a real IBC relayer (ts-relayer), every balance checked (about 2.5 min; part of make test-long)
	scripts/ibc-relay.sh

SIM_TESTS = 'TestFullAppSimulation|TestAppImportExport|TestAppSimulationAfterImport|TestAppStateDeterminism'
SEEDS ?= 50
BLOCKS ?= 500

sim: ## the app simulations at CI size (seed 1, 25 blocks x 30 ops; part of make test; about 1 min with the build)
	go test -count=1 $(TEST_TAGS) $(TEST_LDFLAGS) -run $(SIM_TESTS) ./app/

SIM_ARGS ?= -Params=testdata/sim-carried-gov.json

sim-long: ## the app simulations over SEEDS seeds x BLOCKS blocks x 200 ops (defaults 50 x 500: hours), governance carried (app/sim.go govSim; SIM_ARGS= leaves it out)
	SIM_SEEDS=$(SEEDS) go test -count=1 -v -timeout 0 $(TEST_TAGS) $(TEST_LDFLAGS) -run $(SIM_TESTS) ./app/ -NumBlocks=$(BLOCKS) -BlockSize=200 $(SIM_ARGS)

FUZZTIME ?= 60s

fuzz: ## fuzz every flops Msg through the app's tx path (decode, ante, deliver) for FUZZTIME (default 60s; .ci/run runs 45s); what fails lands in tests/integration/testdata/fuzz
	go test $(TEST_TAGS) $(TEST_LDFLAGS) -run '^$$' -fuzz '^FuzzFlopsMsg$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./tests/integration/

test-unit: ## unit, keeper and app tests only (no networks)
	go test -count=1 -short $(TEST_TAGS) $(TEST_LDFLAGS) ./...

test-e2e: build ## end-to-end tests only
	go test -count=1 -timeout 30m $(TEST_TAGS) $(TEST_LDFLAGS) ./tests/e2e/...

load: ## the large load run (tests/load, FLOPS_LOAD=1), twice: 8 senders of 500 txs each, then 12,000 senders of one tx each (many accounts, phases of 7-9 blocks); bank sends, a pool, every submit-job assigned, rates as ratios to bank sends and the blocks from inclusion to assignment (~5 min)
	FLOPS_LOAD=1 go test -count=1 -timeout 30m -run TestPoolThroughputVsBankSend -v ./tests/load/
	FLOPS_LOAD=1 FLOPS_LOAD_SENDERS=12000 FLOPS_LOAD_TXS=12000 go test -count=1 -timeout 30m -run TestPoolThroughputVsBankSend -v ./tests/load/

load-worker: build ## make load at 1 s blocks with a real flops-worker (8 mock GPUs) on a node of its own: its take-up of the tasks it is given during the flood, and its CPU per task (~2.5 min)
	FLOPS_LOAD=1 FLOPS_LOAD_BLOCK_MS=1000 FLOPS_LOAD_WORKER=$(CURDIR)/build/flops-worker go test -count=1 -timeout 30m -run TestPoolThroughputVsBankSend -v ./tests/load/

bench: ## benchmarks (figures in the issues' closing notes; ~6 min)
	go test -run '^$$' -bench . -benchtime 3x ./x/...
	go test -run '^$$' -bench . -benchtime 100x ./tests/integration/

# golangci-lint's govet runs every analyzer go vet runs (.golangci.yml), so go vet is not
# run on its own as well: that was the same analysis twice.
lint: ## gofmt and golangci-lint: go vet's analyzers and the others (generated code excluded)
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	cd tools/lint && GOBIN=$(TOOLS) go install tool
	$(TOOLS)/golangci-lint run ./...

proto-gen: ## regenerate the Go code and the TypeScript client's from proto/ (offline)
	scripts/protocgen.sh

proto-lint: ## buf lint
	scripts/protocgen.sh lint

proto-check: proto-gen ## fail if generated code differs from the committed code (Go and the TypeScript client)
	@git diff --exit-code -- x internal api clients/ts || { echo "generated code is stale: run make proto-gen and commit"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- x internal api clients/ts); \
	  if [ -n "$$untracked" ]; then echo "untracked generated files:"; echo "$$untracked"; exit 1; fi

localnet: build ## single-validator chain on 127.0.0.1 (Ctrl-C stops it)
	scripts/localnet.sh

localnet-multi: build ## 4 validators on 127.0.0.1
	scripts/localnet.sh --validators 4

localnet-stop: ## stop a detached localnet
	scripts/localnet.sh stop

clean: ## remove build outputs and local networks
	-scripts/localnet.sh stop
	rm -rf $(BUILDDIR) .localnet .demo .ibc-relay third_party
