#!/usr/bin/env bash
# Builds nats-server at the pinned version from the Go module proxy into the cache (Debian
# bookworm ships 2.9; gavel's operator-mode setup and the chart's image want 2.10 or newer).
# The chart's NATS image (deploy/nats.Dockerfile) and the test harness's servers use it.
source "$(dirname "$0")/lib.sh"

[ -x "$NATS_BIN/nats-server" ] && exit 0
command -v go >/dev/null || { log "go is required to build nats-server (machine image ships it)"; exit 1; }
log "go install nats-server $NATS_VERSION (about 1 min on 2 cores)"
mkdir -p "$NATS_BIN.tmp"
CGO_ENABLED=0 GOBIN="$NATS_BIN.tmp" go install -trimpath -ldflags "-s -w" "github.com/nats-io/nats-server/v2@$NATS_VERSION"
mkdir -p "$NATS_BIN"
mv "$NATS_BIN.tmp/nats-server" "$NATS_BIN/nats-server"
rm -rf "$NATS_BIN.tmp"
log "nats-server $("$NATS_BIN/nats-server" --version) in $NATS_BIN"
