#!/usr/bin/env bash
# Builds every image gavel ships, FROM the locally built base image: the worker runtime
# (gavel/agent), the controller (gavel/controller) and the judges (judges/build-images.sh). Needs `make build` first.
source "$(dirname "$0")/lib.sh"
cd "$REPO_DIR"
"$HARNESS_DIR/base-image.sh"
[ -d dist ] || { log "dist/ missing: run make build first"; exit 1; }

if [ -f src/agent/Dockerfile ]; then
  log "building gavel/agent:dev"
  docker build -q --build-arg BASE_IMAGE="$BASE_IMAGE" -f src/agent/Dockerfile -t gavel/agent:dev . >/dev/null
fi
if [ -f deploy/controller.Dockerfile ]; then
  log "building gavel/controller:dev"
  docker build -q --build-arg BASE_IMAGE="$BASE_IMAGE" -f deploy/controller.Dockerfile -t gavel/controller:dev . >/dev/null
fi
if [ -x judges/build-images.sh ]; then
  BASE_IMAGE="$BASE_IMAGE" judges/build-images.sh
fi
docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^gavel/' | grep -v rootfs | sed 's/^/[harness]   /' >&2
