# gavel's interface: every target a developer or CI needs. `make demo` and `make test`
# do all set-up themselves (packages, Kubernetes binaries, images) and reuse the cache
# kept outside the repository ($(GAVEL_CACHE)).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export GAVEL_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gavel
HARNESS := test/harness
VITEST := node_modules/.bin/vitest run

.PHONY: all deps build install lint typecheck eslint fmt fmt-check verify test test-setup test-checks test-unit test-integration test-e2e promtool jaeger \
        demo soak bench bench-scale kwok images base-image k8s-binaries docker-up cluster-up cluster-down clean

all: build

deps: ## system packages and npm modules
	$(HARNESS)/install-deps.sh

build: deps ## compile TypeScript to dist/src (the images run it), bundle the CLI into dist/cli (bin/gavel runs it) and build gavel-launch, the pods' static stream launcher
	node_modules/.bin/tsc -p tsconfig.build.json
	node src/cli/bundle.mjs
	mkdir -p dist/bin && cc -static -Os -s -Wall -Wextra -Werror -o dist/bin/gavel-launch src/launcher/gavel-launch.c

PREFIX ?= $(HOME)/.local
install: ## gavel and the kubectl plugin (`kubectl gavel`) on PATH: links in $(PREFIX)/bin (after make build)
	@test -f dist/cli/main.js || { echo "run 'make build' first" >&2; exit 1; }
	mkdir -p $(PREFIX)/bin
	for b in gavel kubectl-gavel kubectl_complete-gavel; do ln -sfn $(CURDIR)/bin/$$b $(PREFIX)/bin/$$b; done
	@echo "installed gavel and kubectl-gavel in $(PREFIX)/bin; completion: source <(gavel completion bash)"

typecheck: deps
	node_modules/.bin/tsc -p tsconfig.json --noEmit

eslint: deps
	node_modules/.bin/eslint --max-warnings 0 .

lint: typecheck eslint fmt-check ## tsc and eslint with type information, gavel's import-floor and file-length rules (ADR 0050), and the format (prettier --check)

# FMT_FILES narrows them, e.g. FMT_FILES=src/engine/phases.ts. --cache (node_modules/.cache)
# skips files unchanged since their last check.
FMT_FILES ?= "src/**/*.ts" "judges/**/*.ts" "bench/**/*.ts" "test/**/*.ts" "lint/**/*.{mjs,ts}"
fmt: deps ## format TypeScript with prettier (.prettierrc.json)
	node_modules/.bin/prettier --write --cache --log-level warn $(FMT_FILES)

fmt-check: deps ## fail, naming them, on files that are not as make fmt writes them
	node_modules/.bin/prettier --check --cache --log-level warn $(FMT_FILES) || { echo "make fmt formats them (.prettierrc.json)" >&2; exit 1; }

verify: build k8s-binaries ## generated files have not drifted from their sources (the chart's with helm)
	$(HARNESS)/verify.sh

test-unit: deps ## pure logic, no servers
	$(VITEST) --project unit

k8s-binaries: deps ## kube-apiserver & co. and helm, built from the Go module proxy
	$(HARNESS)/build-k8s.sh

docker-up: deps
	$(HARNESS)/docker-up.sh

base-image: docker-up ## Debian bookworm + Node 20, built locally
	$(HARNESS)/base-image.sh

images: base-image build ## every image gavel ships, FROM the base image
	$(HARNESS)/images.sh

test-controller: deps k8s-binaries ## the Execution reconciler on real etcd + kube-apiserver with in-memory workloads (seconds)
	$(VITEST) --project controller

test-integration: build k8s-binaries images jaeger kwok ## real etcd + kube-apiserver, NATS, Docker, Jaeger; kwok for the scale harness
	$(VITEST) --project integration

cluster-up: k8s-binaries images ## single-node cluster: control plane + kubelet on containerd
	$(HARNESS)/cluster.sh up

cluster-down:
	$(HARNESS)/cluster.sh down

jaeger: ## Jaeger all-in-one (the OTLP receiver the traces test reads back), built from the Go module proxy
	$(HARNESS)/build-jaeger.sh

promtool: ## promtool (Prometheus' exposition linter), built from the Go module proxy
	$(HARNESS)/build-promtool.sh

test-e2e: cluster-up promtool jaeger ## the chart on the single-node cluster, real pods (*.exclusive.test.ts last, one at a time)
	$(VITEST) --project e2e --project e2e-exclusive

# What make test runs before the controller, integration and e2e tiers: only what they need,
# side by side where nothing orders it (three jobs on two cores; image builds and the
# cluster's start mostly wait), each target's output printed together when it ends.
test-setup: verify build k8s-binaries images jaeger cluster-up promtool kwok

# The checks no tier needs (tsc, eslint, prettier, the unit tier). make test runs them niced,
# beside its set-up and tiers, after the build (a unit test runs the built gavel-launch): they
# take the CPU the tiers leave idle (ADR 0077). Never a target that writes dist/ or the images.
test-checks: lint test-unit

# The checks' exit code and output wait for the tiers: printed after them, and make test fails
# when either failed. A clock line says when the checks ended. Both sub-makes take deps and the
# build as done (-o: build is phony, and would compile again).
test: ## everything CI runs (the clock lines say where a run's time went)
	@date -u '+[make test] %T set-up starts'
	$(MAKE) --no-print-directory deps build
	@checks_log="$$(mktemp)"; \
	( nice -n 10 $(MAKE) --no-print-directory -j2 --output-sync=target -o deps -o build test-checks >"$$checks_log" 2>&1 && rc=0 || rc=$$?; \
	  date -u "+[make test] %T the checks (lint, unit tier) ended: exit $$rc"; exit $$rc ) & checks=$$!; \
	date -u '+[make test] %T built; the checks start beside the rest (niced)'; \
	tiers=0; \
	{ $(MAKE) --no-print-directory -j3 --output-sync=target -o deps -o build test-setup && \
	  date -u '+[make test] %T set-up done; the controller, integration and e2e tiers start' && \
	  $(VITEST) --project controller --project integration --project e2e --project e2e-exclusive; } || tiers=$$?; \
	date -u '+[make test] %T tiers done: exit '"$$tiers"; \
	checks_rc=0; wait $$checks || checks_rc=$$?; \
	echo "--- the checks' output (make test-checks: lint, unit tier), exit $$checks_rc"; cat "$$checks_log"; rm -f "$$checks_log"; \
	date -u '+[make test] %T done'; \
	[ "$$tiers" -eq 0 ] && [ "$$checks_rc" -eq 0 ]

# SOAK_FAULT: controller (SIGKILLed), nats (the single server restarted) or nats-cluster (one of 3 servers SIGKILLed);
# SOAK_EXECUTIONS and SOAK_KILLS (10, and 20 controller kills or 3 NATS faults here; 3 and 3 in make test);
# SOAK_SEED repeats a run's fault moments (docs/soak.md).
soak: cluster-up ## the soak with faults on real pods: Executions at once, the controller or NATS struck at seeded random moments, each ending as in an undisturbed run
	SOAK_EXECUTIONS=$${SOAK_EXECUTIONS:-10} SOAK_KILLS=$${SOAK_KILLS:-$$(case "$${SOAK_FAULT:-controller}" in controller) echo 20;; *) echo 3;; esac)} \
	  $(VITEST) --project e2e-exclusive test/e2e/soak.exclusive.test.ts

kwok: ## kwok (simulated nodes and pods for the scale bench), built from the Go module proxy
	$(HARNESS)/build-kwok.sh

demo: build images ## gavel's main job, end to end
	$(HARNESS)/demo.sh

bench: build images k8s-binaries jaeger kwok ## benchmarks, reported as ratios against a same-run baseline (gate-cluster brings the cluster up; tracing sends to Jaeger; scale runs on kwok nodes)
	node dist/bench/run.js

# GAVEL_BENCH_SCALE=100,500 (the default) sets the scales; GAVEL_BENCH_SCALE_MULTI_JUDGE and GAVEL_BENCH_SCALE_TOOLS (default 100 each) the variants'; docs/scale.md.
bench-scale: build k8s-binaries kwok ## the scale bench alone: Executions at once on kwok's simulated nodes, a control plane of its own
	GAVEL_BENCH=scale node dist/bench/run.js bench-scale-results.json

clean:
	rm -rf dist
