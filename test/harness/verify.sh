#!/usr/bin/env bash
# Fails when a generated file has drifted from its source. Each check regenerates into a
# temporary place and compares.
source "$(dirname "$0")/lib.sh"
cd "$REPO_DIR"
status=0
for check in "$HARNESS_DIR"/verify.d/*.sh; do
  [ -e "$check" ] || continue
  if ! bash "$check"; then log "drift: $(basename "$check")"; status=1; fi
done
exit $status
