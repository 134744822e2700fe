#!/usr/bin/env bash
# Builds gavel/example-mcp-tools:dev: gavel/agent:dev (make images) plus the official MCP
# filesystem server, copied with its dependencies from this checkout's node_modules (the
# version package-lock.json pins; no registry is reached during the build), and the
# scripted turns. Run from anywhere after `make images`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
node "$repo/src/agent/copy-deps.mjs" "$repo" "$ctx" pkg:@modelcontextprotocol/server-filesystem >/dev/null
cp "$repo/examples/mcp-tools/Dockerfile" "$repo/examples/mcp-tools/script.yaml" "$ctx/"
docker build -q ${HARNESS_LABEL:+--label "$HARNESS_LABEL"} -t gavel/example-mcp-tools:dev "$ctx" >/dev/null
