#!/usr/bin/env bash
# Builds every image gavel ships, FROM the locally built base image: the worker runtime
# (gavel/agent), the controller (gavel/controller), NATS (gavel/nats), the judges
# (judges/build-images.sh), the language runtimes (runtime-images.sh), the workers of
# examples/kubernetes, examples/guarded-tools, examples/mcp-tools and examples/mcp-python-worker, and the benchmarks' pods (gavel/bench). Each is tagged :dev and :<package.json version>, the tag
# the chart installs by default. Needs `make build` first.
source "$(dirname "$0")/lib.sh"
cd "$REPO_DIR"
"$HARNESS_DIR/base-image.sh"
[ -d dist ] || { log "dist/ missing: run make build first"; exit 1; }

if [ -f src/agent/Dockerfile ]; then
  log "building gavel/agent:dev"
  docker build -q --label "$HARNESS_LABEL" --build-arg BASE_IMAGE="$BASE_IMAGE" -f src/agent/Dockerfile -t gavel/agent:dev . >/dev/null
fi
# The benchmarks' pods (bench/gate-cluster.ts): the worker image plus dist/bench.
log "building gavel/bench:dev"
docker build -q --label "$HARNESS_LABEL" -f bench/Dockerfile -t gavel/bench:dev dist/bench >/dev/null
if [ -f deploy/controller.Dockerfile ]; then
  log "building gavel/controller:dev"
  docker build -q --label "$HARNESS_LABEL" --build-arg BASE_IMAGE="$BASE_IMAGE" -f deploy/controller.Dockerfile -t gavel/controller:dev . >/dev/null
fi
# The chart's NATS: the nats-server binary build-nats.sh keeps in the cache, on the base image.
"$HARNESS_DIR/build-nats.sh"
log "building gavel/nats:dev (nats-server $NATS_VERSION)"
nats_ctx="$(mktemp -d)"
cp "$NATS_BIN/nats-server" "$nats_ctx/"
docker build -q --label "$HARNESS_LABEL" --build-arg BASE_IMAGE="$BASE_IMAGE" -f deploy/nats.Dockerfile -t gavel/nats:dev "$nats_ctx" >/dev/null
rm -rf "$nats_ctx"
if [ -x judges/build-images.sh ]; then
  BASE_IMAGE="$BASE_IMAGE" judges/build-images.sh
fi
"$HARNESS_DIR/runtime-images.sh"
log "building gavel/example-k8s-worker:dev"
docker build -q --label "$HARNESS_LABEL" --build-arg BASE_IMAGE="$BASE_IMAGE" -t gavel/example-k8s-worker:dev examples/kubernetes/worker >/dev/null
# The scripted worker of examples/guarded-tools (make demo in local mode; the e2e tier on the cluster).
log "building gavel/example-guarded-tools:dev"
docker build -q --label "$HARNESS_LABEL" -t gavel/example-guarded-tools:dev examples/guarded-tools >/dev/null
# The worker of examples/mcp-tools: gavel/agent plus the official MCP filesystem server (ADR 0051).
log "building gavel/example-mcp-tools:dev"
HARNESS_LABEL="$HARNESS_LABEL" examples/mcp-tools/build-image.sh
# A worker gavel did not write (Python on the official MCP client from PyPI) and its pod's MCP
# endpoint image with mcp-server-git (ADR 0061); after runtime-images.sh, whose python rootfs they start from.
log "building gavel/example-mcp-python:dev, gavel/example-mcp-python-endpoint:dev"
HARNESS_LABEL="$HARNESS_LABEL" examples/mcp-python-worker/build-image.sh
# An MCP server image beside the worker (ADR 0066): the official server-everything, Streamable HTTP.
log "building gavel/mcp-everything:dev"
HARNESS_LABEL="$HARNESS_LABEL" BASE_IMAGE="$BASE_IMAGE" examples/mcp-container/build-image.sh

version="$(node -p 'require("./package.json").version')"
for image in agent controller nats rule-judge command-judge llm-judge example-k8s-worker bench; do
  docker image inspect "gavel/$image:dev" >/dev/null 2>&1 && docker tag "gavel/$image:dev" "gavel/$image:$version"
done
prune_superseded
docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^gavel/' | grep -v rootfs | sed 's/^/[harness]   /' >&2
