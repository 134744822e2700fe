#!/usr/bin/env bash
# Builds the two images of examples/mcp-python-worker, after `make images` (it needs
# gavel/agent:dev and gavel/rootfs:bookworm-python3):
#   gavel/example-mcp-python:dev           the worker: plain Python on the official MCP client
#   gavel/example-mcp-python-endpoint:dev  its pod's MCP endpoint: gavel/agent plus mcp-server-git
# Both start FROM gavel/rootfs:bookworm-python3-git (gavel's python rootfs plus Debian's git,
# built once: apt reaches Debian's packages, hence the host network for that one build) and
# carry the pinned PyPI packages of requirements.txt, installed with this machine's pip as
# wheels for CPython 3.11 on x86_64 Linux into the cache (outside the repository), once per
# version of requirements.txt (ADR 0063; make deps installs python3-pip). No registry is reached when a pod starts.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
here="$repo/examples/mcp-python-worker"
cache="${GAVEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gavel}"
label=(${HARNESS_LABEL:+--label "$HARNESS_LABEL"})

# quiet_build ARGS...: docker build -q, its output shown only when it fails.
quiet_build() {
  local out
  out="$(docker build -q "$@" 2>&1)" || { printf '%s\n' "$out" >&2; echo "mcp-python-worker: docker build $* failed" >&2; exit 1; }
}

if ! docker image inspect gavel/rootfs:bookworm-python3-git >/dev/null 2>&1; then
  docker image inspect gavel/rootfs:bookworm-python3 >/dev/null 2>&1 ||
    { echo "mcp-python-worker: gavel/rootfs:bookworm-python3 is missing (make images builds it)" >&2; exit 1; }
  quiet_build --network=host -t gavel/rootfs:bookworm-python3-git - <<'DOCKERFILE'
FROM gavel/rootfs:bookworm-python3
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends git >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
DOCKERFILE
fi

site="$cache/pypi/mcp-python-worker-$(grep -v '^#' "$here/requirements.txt" | sha256sum | cut -c1-16)"
if [ ! -f "$site/.done" ]; then
  python3 -m pip --version >/dev/null 2>&1 || { echo "mcp-python-worker: python3 -m pip is required to install requirements.txt" >&2; exit 1; }
  rm -rf "$site" && mkdir -p "$site"
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --root-user-action=ignore \
    --target "$site/site" --only-binary=:all: --python-version 3.11 --implementation cp \
    --platform manylinux2014_x86_64 -r "$here/requirements.txt" >&2
  # pip writes console scripts with this machine's interpreter in their #! line: the images run `python3 -m`.
  rm -rf "$site/site/bin"
  touch "$site/.done"
fi

# An image whose inputs hash to its gavel.dev/inputs label is not rebuilt (as runtime-images.sh
# does): sending the 48 MB site/ and node to docker build twice took 12 s of every make images.
inputs() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }
up_to_date() { [ "$(docker image inspect -f '{{index .Config.Labels "gavel.dev/inputs"}}' "$1" 2>/dev/null)" = "$2" ]; }
rootfs_id="$(docker image inspect -f '{{.Id}}' gavel/rootfs:bookworm-python3-git)"
agent_id="$(docker image inspect -f '{{.Id}}' gavel/agent:dev)" || { echo "mcp-python-worker: gavel/agent:dev is missing (make images builds it)" >&2; exit 1; }
worker_inputs="$(inputs "$rootfs_id" "$(basename "$site")" "$(cat "$here/Dockerfile" "$here/worker.py" | sha256sum)")"
endpoint_inputs="$(inputs "$rootfs_id" "$(basename "$site")" "$agent_id" "$(readlink -f "$(command -v node)")" "$(node --version)" "$(sha256sum <"$here/endpoint.Dockerfile")")"

up_to_date gavel/example-mcp-python:dev "$worker_inputs" && up_to_date gavel/example-mcp-python-endpoint:dev "$endpoint_inputs" && exit 0
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
cp -R "$site/site" "$ctx/site"
if ! up_to_date gavel/example-mcp-python:dev "$worker_inputs"; then
  cp "$here/Dockerfile" "$here/worker.py" "$ctx/"
  quiet_build "${label[@]}" --label "gavel.dev/inputs=$worker_inputs" -t gavel/example-mcp-python:dev "$ctx"
fi
if ! up_to_date gavel/example-mcp-python-endpoint:dev "$endpoint_inputs"; then
  # node joins the context only now: the worker's build does not send it.
  cp "$here/endpoint.Dockerfile" "$ctx/"
  cp "$(readlink -f "$(command -v node)")" "$ctx/node"
  quiet_build "${label[@]}" --label "gavel.dev/inputs=$endpoint_inputs" -f "$ctx/endpoint.Dockerfile" -t gavel/example-mcp-python-endpoint:dev "$ctx"
fi
