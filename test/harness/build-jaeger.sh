#!/usr/bin/env bash
# Builds Jaeger (v1 all-in-one: an OTLP receiver, an in-memory store and the query HTTP API in
# one process) at the pinned version from the Go module proxy into the cache: the traces
# tests send gavel's spans to it and read the trace tree back (test/harness/jaeger.ts).
# Built through the wrapper module in jaeger/ (Jaeger's go.mod has a replace directive).
source "$(dirname "$0")/lib.sh"

[ -x "$JAEGER_BIN/jaeger-all-in-one" ] && exit 0
grep -q "github.com/jaegertracing/jaeger $JAEGER_VERSION" "$HARNESS_DIR/jaeger/go.mod" ||
  { log "jaeger/go.mod does not pin $JAEGER_VERSION"; exit 1; }
command -v go >/dev/null || { log "go is required to build jaeger (machine image ships it)"; exit 1; }
t0=$(date +%s); work="$(mktemp -d)"
log "go build jaeger all-in-one $JAEGER_VERSION (about 2 min on 2 cores)"
cp "$HARNESS_DIR/jaeger/go.mod" "$HARNESS_DIR/jaeger/go.sum" "$HARNESS_DIR/jaeger/tools.go" "$work/"
mkdir -p "$JAEGER_BIN"
(cd "$work" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$JAEGER_BIN/jaeger-all-in-one.tmp" github.com/jaegertracing/jaeger/cmd/all-in-one)
mv "$JAEGER_BIN/jaeger-all-in-one.tmp" "$JAEGER_BIN/jaeger-all-in-one"
rm -rf "$work"
log "built jaeger all-in-one in $(( $(date +%s) - t0 ))s: $JAEGER_BIN"
