#!/usr/bin/env bash
# Builds the judge images (gavel/<judge>:dev) FROM $BASE_IMAGE, from the compiled dist/.
# Called by test/harness/images.sh (make images) after `make build`. The build context is
# staged with only what the Dockerfiles COPY (the repository root's layout), because the
# engine here has the legacy builder, which would upload all of node_modules otherwise.
# An image whose inputs (Dockerfile, its dist files, runtime modules, base image id) hash
# to the value in its label is not rebuilt.
set -euo pipefail
REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE_IMAGE="${BASE_IMAGE:-gavel/base:bookworm-node20}"
JUDGES=(${JUDGES:-rule-judge command-judge llm-judge})
log() { printf '[judges] %s\n' "$*" >&2; }

cd "$REPO_DIR"
[ -d dist/judges ] || { log "dist/judges missing: run make build first"; exit 1; }
base_id="$(docker image inspect --format '{{.Id}}' "$BASE_IMAGE")" || { log "$BASE_IMAGE is missing: run make base-image"; exit 1; }

# Files a judge image is made of: its Dockerfile's COPY sources.
inputs() {
  local judge="$1"
  grep -E '^COPY ' "judges/$judge/Dockerfile" | awk '{for (i = 2; i < NF; i++) print $i}'
}

for judge in "${JUDGES[@]}"; do
  image="gavel/$judge:dev"
  mapfile -t sources < <(inputs "$judge")
  hash="$( { echo "$base_id"; cat "judges/$judge/Dockerfile"; find "${sources[@]}" -type f -print0 | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16)"
  current="$(docker image inspect --format '{{index .Config.Labels "gavel.dev/inputs"}}' "$image" 2>/dev/null || true)"
  if [ "$current" = "$hash" ]; then
    log "$image is up to date"
    continue
  fi
  ctx="$(mktemp -d)"
  trap 'rm -rf "$ctx"' EXIT
  for src in "${sources[@]}"; do
    mkdir -p "$ctx/$(dirname "$src")"
    cp -R "$src" "$ctx/$src"
  done
  log "building $image"
  # Quiet unless it fails (the legacy builder's deprecation notice is not news).
  if ! out="$(docker build -q --build-arg BASE_IMAGE="$BASE_IMAGE" --label gavel.dev/harness=true --label "gavel.dev/inputs=$hash" \
    -f "judges/$judge/Dockerfile" -t "$image" "$ctx" 2>&1)"; then
    printf '%s\n' "$out" >&2
    log "building $image failed"
    exit 1
  fi
  rm -rf "$ctx"
  trap - EXIT
done
