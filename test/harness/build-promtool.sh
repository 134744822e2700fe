#!/usr/bin/env bash
# Builds promtool (Prometheus' own linter of the text exposition format) at the pinned
# version from the Go module proxy into the cache: the e2e tier checks the controller's
# /metrics with `promtool check metrics` (test/harness/metrics.ts).
source "$(dirname "$0")/lib.sh"

[ -x "$PROMTOOL_BIN/promtool" ] && exit 0
go_install "$PROMTOOL_BIN" promtool "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION" "6 min"
log "promtool $("$PROMTOOL_BIN/promtool" --version 2>&1 | head -1) in $PROMTOOL_BIN"
