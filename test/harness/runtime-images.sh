#!/usr/bin/env bash
# Builds the language runtime images of gavel's runtime table (src/children/runtime-table.ts):
# gavel's agent runtime (from gavel/agent:dev) on a language toolchain, for Agents that name
# `runtime.language` + `version` instead of an image (the reference's judge manifests):
#   gavel/runtime-python-3.11  Debian bookworm's python3 (3.11) and pytest, from debootstrap
#   gavel/runtime-node-20      the base image's node 20 plus this machine's npm
# Tagged :dev and :<package.json version>. An image whose inputs (agent image id, rootfs,
# npm version) hash to its label is not rebuilt. Called by images.sh after gavel/agent.
source "$(dirname "$0")/lib.sh"
cd "$REPO_DIR"
version="$(node -p 'require("./package.json").version')"
agent_id="$(docker image inspect -f '{{.Id}}' gavel/agent:dev)" || { log "gavel/agent:dev is missing"; exit 1; }

# up_to_date IMAGE HASH: the image exists with that inputs label.
up_to_date() { [ "$(docker image inspect -f '{{index .Config.Labels "gavel.dev/inputs"}}' "$1" 2>/dev/null)" = "$2" ]; }

# build IMAGE HASH CONTEXT: docker build quietly (its output only when it fails), then tag the version.
build() {
  local out
  out="$(docker build -q --label "$HARNESS_LABEL" --label "gavel.dev/inputs=$2" -t "$1:dev" "$3" 2>&1)" || { printf '%s\n' "$out" >&2; log "building $1 failed"; exit 1; }
  docker tag "$1:dev" "$1:$version"
}

python_rootfs() {
  docker image inspect gavel/rootfs:bookworm-python3 >/dev/null 2>&1 && return 0
  local tarball="$GAVEL_CACHE/images/rootfs-bookworm-python3.tar"
  if [ ! -f "$tarball" ]; then
    log "debootstrap bookworm minbase + python3, python3-pytest (about a minute)"
    local root; root="$(mktemp -d)"
    as_root debootstrap --variant=minbase --include=python3,python3-pytest bookworm "$root" http://deb.debian.org/debian >/dev/null
    as_root rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
    mkdir -p "$(dirname "$tarball")"
    as_root tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    as_root rm -rf "$root"
  fi
  docker import "$tarball" gavel/rootfs:bookworm-python3 >/dev/null
}

build_python() {
  python_rootfs
  local image=gavel/runtime-python-3.11 hash
  hash="$(printf '%s %s\n' "$agent_id" "$(docker image inspect -f '{{.Id}}' gavel/rootfs:bookworm-python3)" | sha256sum | cut -c1-16)"
  up_to_date "$image:dev" "$hash" && { docker tag "$image:dev" "$image:$version"; return 0; }
  log "building $image:dev"
  local ctx; ctx="$(mktemp -d)"
  cp "$(readlink -f "$(command -v node)")" "$ctx/node"
  cat > "$ctx/Dockerfile" <<'DOCKERFILE'
FROM gavel/rootfs:bookworm-python3
COPY node /usr/local/bin/node
COPY --from=gavel/agent:dev /opt/gavel /opt/gavel
ENV NODE_ENV=production PYTHONDONTWRITEBYTECODE=1
WORKDIR /opt/gavel
ENTRYPOINT ["node", "/opt/gavel/dist/src/agent/main.js"]
DOCKERFILE
  build "$image" "$hash" "$ctx"
  rm -rf "$ctx"
}

build_node() {
  local image=gavel/runtime-node-20 npm_dir hash
  npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
  hash="$(printf '%s %s\n' "$agent_id" "$(node -p 'require(process.argv[1]).version' "$npm_dir/package.json")" | sha256sum | cut -c1-16)"
  up_to_date "$image:dev" "$hash" && { docker tag "$image:dev" "$image:$version"; return 0; }
  log "building $image:dev"
  local ctx; ctx="$(mktemp -d)"
  cp -R "$npm_dir" "$ctx/npm"
  cat > "$ctx/Dockerfile" <<'DOCKERFILE'
FROM gavel/agent:dev
COPY npm /usr/local/lib/node_modules/npm
RUN ["/usr/local/bin/node", "-e", "const fs = require('fs'); for (const b of ['npm', 'npx']) fs.symlinkSync(`/usr/local/lib/node_modules/npm/bin/${b}-cli.js`, `/usr/local/bin/${b}`)"]
DOCKERFILE
  build "$image" "$hash" "$ctx"
  rm -rf "$ctx"
}

t0=$(date +%s)
build_python
build_node
log "runtime images ready in $(( $(date +%s) - t0 ))s: gavel/runtime-python-3.11 gavel/runtime-node-20 (:dev, :$version)"
