#!/usr/bin/env bash
# Builds the base image every gavel Dockerfile starts FROM (ARG BASE_IMAGE): Debian
# bookworm minbase from debootstrap plus this machine's own Node binary. Also builds a
# pause image for the kubelet's sandboxes. Skips images that already exist.
source "$(dirname "$0")/lib.sh"

build_base() {
  docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 && return 0
  local tarball="$GAVEL_CACHE/images/base-bookworm-minbase.tar"
  if [ ! -f "$tarball" ]; then
    log "debootstrap bookworm minbase (about 40 s)"
    local root; root="$(mktemp -d)"
    as_root debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
    as_root rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
    mkdir -p "$(dirname "$tarball")"
    as_root tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    as_root rm -rf "$root"
  fi
  log "importing $BASE_IMAGE"
  local node_bin; node_bin="$(readlink -f "$(command -v node)")"
  local ctx; ctx="$(mktemp -d)"
  cp "$node_bin" "$ctx/node"
  cat > "$ctx/Dockerfile" <<DOCKERFILE
FROM gavel/rootfs:bookworm-minbase
COPY node /usr/local/bin/node
ENV NODE_ENV=production
DOCKERFILE
  docker import "$tarball" gavel/rootfs:bookworm-minbase >/dev/null
  docker build -q --label "$HARNESS_LABEL" -t "$BASE_IMAGE" "$ctx" >/dev/null
  rm -rf "$ctx"
}

build_pause() {
  docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1 && return 0
  log "building $PAUSE_IMAGE"
  local ctx; ctx="$(mktemp -d)"
  # A static pause: sleeps until signalled, reaps nothing (the sandbox has no children).
  cat > "$ctx/pause.c" <<'C'
#include <signal.h>
#include <unistd.h>
static void done(int s) { (void)s; _exit(0); }
int main(void) { signal(SIGINT, done); signal(SIGTERM, done); for (;;) pause(); }
C
  gcc -static -Os -o "$ctx/pause" "$ctx/pause.c"
  (cd "$ctx" && tar -cf rootfs.tar pause)
  docker import -c 'ENTRYPOINT ["/pause"]' "$ctx/rootfs.tar" "$PAUSE_IMAGE" >/dev/null
  rm -rf "$ctx"
}

"$HARNESS_DIR/docker-up.sh"
build_base
build_pause
log "base images ready: $BASE_IMAGE $PAUSE_IMAGE"
