#!/usr/bin/env bash
# Builds kwok (Kubernetes WithOut Kubelet: simulated nodes and pod lifecycles, served
# kubelet endpoints for logs) at the pinned version from the Go module proxy into the cache:
# the scale bench (bench/scale.ts, docs/scale.md) runs hundreds of worker and judge pods on
# nodes kwok simulates, against a control plane of its own.
source "$(dirname "$0")/lib.sh"

[ -x "$KWOK_BIN/kwok" ] && exit 0
go_install "$KWOK_BIN" kwok "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "3 min"
log "kwok $("$KWOK_BIN/kwok" --version 2>&1 | head -1) in $KWOK_BIN"
