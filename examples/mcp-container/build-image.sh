#!/usr/bin/env bash
# Builds gavel/mcp-everything:dev: the official MCP reference server
# @modelcontextprotocol/server-everything on gavel's base image, copied with its dependencies
# from the directory test/harness/mcp-conformance.sh installs from the npm registry (the
# version it pins, cached; the conformance test runs the same copy). Run by `make images`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
installed="$("$repo/test/harness/mcp-conformance.sh")"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
node "$repo/src/agent/copy-deps.mjs" "$installed" "$ctx" pkg:@modelcontextprotocol/server-everything >/dev/null
cp "$repo/examples/mcp-container/Dockerfile" "$repo/examples/mcp-container/run.sh" "$ctx/"
docker build -q ${HARNESS_LABEL:+--label "$HARNESS_LABEL"} ${BASE_IMAGE:+--build-arg BASE_IMAGE="$BASE_IMAGE"} -t gavel/mcp-everything:dev "$ctx" >/dev/null
