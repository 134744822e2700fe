#!/usr/bin/env bash
# `make demo`: gavel's main job end to end in local mode (Docker + NATS, state in memory).
source "$(dirname "$0")/lib.sh"
cd "$REPO_DIR"
echo "gavel demo: environment"
echo "  docker:      $(docker version --format '{{.Server.Version}}')"
echo "  nats-server: $(nats-server --version)"
echo "  images:      $(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^gavel/' | grep -v rootfs | tr '\n' ' ')"
echo
echo "The outer loop (gavel run) is not built yet; this demo will run examples/ once it is."
