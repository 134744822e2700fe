# Shared settings for the harness scripts: pinned versions and the cache kept outside
# the repository, so warm runs reuse what cold runs built.
set -euo pipefail

GAVEL_CACHE="${GAVEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gavel}"
K8S_VERSION="v1.31.13"
STAGING_VERSION="v0.31.13"
HELM_VERSION="v3.16.4"
# Cluster add-ons built from the Go module proxy (build-k8s.sh) and run as pods (addons.sh).
COREDNS_VERSION="v1.15.0"
LOCAL_PATH_VERSION="v0.0.30"
# nats-server for the chart's NATS image and the tests (build-nats.sh).
NATS_VERSION="v2.15.2"
# promtool, to lint the controller's /metrics as Prometheus reads it (build-promtool.sh).
PROMTOOL_VERSION="v0.316.0"
# Jaeger (all-in-one), the OTLP receiver the traces tests read back (build-jaeger.sh).
JAEGER_VERSION="v1.76.0"
# kwok, the simulated nodes of the scale bench (build-kwok.sh).
KWOK_VERSION="v0.8.0"
K8S_BIN="$GAVEL_CACHE/k8s/$K8S_VERSION/bin"
HELM_BIN="$GAVEL_CACHE/helm/$HELM_VERSION/bin"
# CoreDNS's directory names a hash of its wrapper module (coredns/), so a change to it rebuilds.
COREDNS_BIN="$GAVEL_CACHE/coredns/$COREDNS_VERSION-$(cat "$(dirname "${BASH_SOURCE[0]}")"/coredns/{go.mod,go.sum,main.go} | sha256sum | cut -c1-12)/bin"
LOCAL_PATH_BIN="$GAVEL_CACHE/local-path-provisioner/$LOCAL_PATH_VERSION/bin"
NATS_BIN="$GAVEL_CACHE/nats/$NATS_VERSION/bin"
PROMTOOL_BIN="$GAVEL_CACHE/promtool/$PROMTOOL_VERSION/bin"
JAEGER_BIN="$GAVEL_CACHE/jaeger/$JAEGER_VERSION/bin"
KWOK_BIN="$GAVEL_CACHE/kwok/$KWOK_VERSION/bin"
HARNESS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$HARNESS_DIR/../.." && pwd)"
BASE_IMAGE="${BASE_IMAGE:-gavel/base:bookworm-node20}"
PAUSE_IMAGE="${PAUSE_IMAGE:-gavel/pause:3.10}"
# The single-node cluster's node name: "localhost", so that the apiserver reaches the
# kubelet on loopback by the node's Hostname address (a node IP may not be loopback).
NODE_NAME=localhost
# The node's own address: on a bridge with no ports (gavel-node, this kernel has no dummy
# interfaces), so traffic to it never leaves the machine. The API server listens there, so
# pods reach it through the `kubernetes` Service; it is also the node's InternalIP.
NODE_IP=10.89.0.1
NODE_IFACE=gavel-node
SERVICE_CIDR=10.0.0.0/24
CLUSTER_DNS_IP=10.0.0.10
POD_CIDR=10.88.0.0/16
POD_BRIDGE=gavel0
# The single-node cluster's state (cluster.sh) and the kubelet's root directory.
CLUSTER="$GAVEL_CACHE/cluster"
KUBELET_DIR=/var/lib/gavel-kubelet
# Where local-path-provisioner (the cluster's default StorageClass) keeps volumes on the node.
LOCAL_PATH_DIR=/var/lib/gavel-local-path

# Every image the harness builds carries this label, so that the images a rebuild supersedes
# (left untagged) can be removed without touching anyone else's: 778 of them (45 GB) once
# filled the disk until the kubelet evicted pods.
HARNESS_LABEL="gavel.dev/harness=true"

log() { printf '[harness] %s\n' "$*" >&2; }

# go_install DIR BINARY PACKAGE@VERSION HOW_LONG [GO FLAG...]: `go install` of a static binary
# from the Go module proxy into DIR (in the cache), timed, unless it is there already.
go_install() {
  local dir="$1" bin="$2" pkg="$3" how_long="$4"; shift 4
  [ -x "$dir/$bin" ] && return 0
  command -v go >/dev/null || { log "go is required to build $bin (machine image ships it)"; return 1; }
  local t0; t0=$(date +%s)
  log "go install $pkg${*:+ ($*)} (about $how_long on 2 cores)"
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  CGO_ENABLED=0 GOBIN="$dir.tmp" go install -trimpath -ldflags "-s -w" "$@" "$pkg"
  mkdir -p "$dir"
  mv "$dir.tmp/$bin" "$dir/$bin"
  rm -rf "$dir.tmp"
  log "built $bin in $(( $(date +%s) - t0 ))s"
}

# prune_superseded removes the harness's own images that no tag and no container names any
# more (what a rebuild leaves behind), never an image it did not build.
prune_superseded() {
  docker image prune -f --filter "label=${HARNESS_LABEL%%=*}" >/dev/null || log "could not remove superseded images"
}

# close_fds closes every file descriptor above 2 of the current shell; call it in the
# subshell that starts a daemon. A daemon must not keep what its starter held open: the lock
# of /work/helpers/heavy (flock hands its fd to the command) would stay taken as long as the
# cluster runs.
close_fds() {
  local fd
  for fd in $(ls /proc/$BASHPID/fd); do
    [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
  done
  return 0
}

# as_root runs a command as root (sudo when not already root).
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# apt_install installs Debian packages that are missing; it is a no-op when all are there.
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  local stamp=/var/lib/apt/periodic/gavel-update-stamp
  if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +720 2>/dev/null)" ]; then
    as_root apt-get update -qq
    as_root mkdir -p "$(dirname "$stamp")" && as_root touch "$stamp"
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Host processes of the cluster (cluster.sh, csi.sh), each with its pid in $CLUSTER/NAME.pid
# and its log in $CLUSTER/NAME.log.
pidof_file() { [ -f "$CLUSTER/$1.pid" ] && cat "$CLUSTER/$1.pid"; }
# alive NAME: the recorded process runs and is still NAME (a pid may be reused after a reboot).
alive() {
  local p; p="$(pidof_file "$1")" && [ -n "$p" ] && kill -0 "$p" 2>/dev/null &&
    { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -q -- "$1"
}
stop_proc() {
  local p; p="$(pidof_file "$1")" || return 0
  # Only the process the file names if it still runs that command: after the machine's
  # processes were killed, the pid may belong to another process.
  if [ -n "$p" ] && alive "$1"; then
    as_root kill "$p" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    as_root kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$CLUSTER/$1.pid"
}
# start_proc NAME CMD...: runs CMD in the background with its log in $CLUSTER/NAME.log.
start_proc() {
  local name="$1"; shift
  alive "$name" && return 0
  (close_fds; as_root sh -c 'exec "$@" >>"'"$CLUSTER/$name.log"'" 2>&1 & echo $! >"'"$CLUSTER/$name.pid"'"' _ "$@")
}
