#!/usr/bin/env bash
# Builds nats-server at the pinned version from the Go module proxy into the cache (Debian
# bookworm ships 2.9; gavel's operator-mode setup and the chart's image want 2.10 or newer).
# The chart's NATS image (deploy/nats.Dockerfile) and the test harness's servers use it.
source "$(dirname "$0")/lib.sh"

[ -x "$NATS_BIN/nats-server" ] && exit 0
go_install "$NATS_BIN" nats-server "github.com/nats-io/nats-server/v2@$NATS_VERSION" "1 min"
log "nats-server $("$NATS_BIN/nats-server" --version) in $NATS_BIN"
