#!/usr/bin/env bash
# Builds promtool (Prometheus' own linter of the text exposition format) at the pinned
# version from the Go module proxy into the cache: the e2e tier checks the controller's
# /metrics with `promtool check metrics` (test/harness/metrics.ts).
# Built with Prometheus' own `remove_all_sd` tag (plugins/plugin_*.go): the cloud service
# discovery plugins (AWS, Azure, GCE, ...) only serve `check config` of scrape configs that
# name them, never `check metrics`, and were most of a cold build (ADR 0046).
source "$(dirname "$0")/lib.sh"

[ -x "$PROMTOOL_BIN/promtool" ] && exit 0
go_install "$PROMTOOL_BIN" promtool "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION" "2 min" -tags remove_all_sd
log "promtool $("$PROMTOOL_BIN/promtool" --version 2>&1 | head -1) in $PROMTOOL_BIN"
