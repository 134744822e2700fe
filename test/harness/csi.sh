#!/usr/bin/env bash
# A CSI stack that takes and restores volume snapshots on the single-node cluster (ADR 0045),
# run on the node as host processes (like the kubelet), all built from the Go module proxy:
# - gavel-csi-hostpath (csi-hostpath/, gavel's own): the CSI driver (directories of the node),
#   its kubelet plugin registration and its dynamic provisioner;
# - external-snapshotter's snapshot-controller and csi-snapshotter sidecar, and its
#   VolumeSnapshot CRDs (the upstream release, unchanged);
# - StorageClass and default VolumeSnapshotClass `$CSI_STORAGE_CLASS` (local-path stays the
#   default StorageClass).
#   csi.sh build   build what is missing into the cache
#   csi.sh up      build, apply the CRDs and classes, start the processes, wait until registered
#   csi.sh down    stop the processes, drop the volumes and snapshots
#   csi.sh status
source "$(dirname "$0")/lib.sh"
SNAPSHOTTER_VERSION=v8.7.0
CSI_DRIVER=hostpath.csi.gavel.dev
CSI_STORAGE_CLASS=gavel-csi-hostpath
CSI_DATA_DIR=/var/lib/gavel-csi-hostpath
CSI_SOCKET="$KUBELET_DIR/plugins/$CSI_DRIVER/csi.sock"
# The driver's directory names a hash of its module, so a change to it rebuilds.
CSI_HASH="$(cat "$HARNESS_DIR"/csi-hostpath/go.mod "$HARNESS_DIR"/csi-hostpath/go.sum "$HARNESS_DIR"/csi-hostpath/*.go | sha256sum | cut -c1-12)"
CSI_BIN="$GAVEL_CACHE/csi-hostpath/$CSI_HASH/bin/gavel-csi-hostpath"
SNAPSHOTTER_DIR="$GAVEL_CACHE/external-snapshotter/$SNAPSHOTTER_VERSION"
PROCS=(gavel-csi-hostpath snapshot-controller csi-snapshotter)

# module_dir MODULE@VERSION: the module's source in the Go module cache (downloaded from the
# proxy); the proxy's answer when it refuses it.
module_dir() {
  local out
  out="$(GOFLAGS=-mod=mod go mod download -json "$1" 2>&1)" || { log "go mod download $1 failed: $out"; return 1; }
  sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p' <<<"$out"
}

build_driver() {
  [ -x "$CSI_BIN" ] && return 0
  local t0 work; t0=$(date +%s); work="$(mktemp -d)"
  log "go build gavel-csi-hostpath"
  cp "$HARNESS_DIR"/csi-hostpath/go.mod "$HARNESS_DIR"/csi-hostpath/go.sum "$HARNESS_DIR"/csi-hostpath/*.go "$work/"
  mkdir -p "$(dirname "$CSI_BIN")"
  # The staging modules are on the proxy but not in the checksum database: go.sum pins them.
  (cd "$work" && CGO_ENABLED=0 GONOSUMDB=k8s.io,sigs.k8s.io GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$CSI_BIN.tmp" .)
  mv "$CSI_BIN.tmp" "$CSI_BIN"
  rm -rf "$work"
  log "built gavel-csi-hostpath in $(( $(date +%s) - t0 ))s"
}

# build_snapshotter: the release's own go.mod and go.sum; its replace of client/v8 by ./client
# (a nested module, not in the release's zip) is met with the client module of the same release.
build_snapshotter() {
  [ -x "$SNAPSHOTTER_DIR/bin/snapshot-controller" ] && [ -x "$SNAPSHOTTER_DIR/bin/csi-snapshotter" ] && [ -d "$SNAPSHOTTER_DIR/crd" ] && return 0
  local t0 work src client; t0=$(date +%s); work="$(mktemp -d)"
  log "go build external-snapshotter $SNAPSHOTTER_VERSION: snapshot-controller, csi-snapshotter"
  src="$(module_dir "github.com/kubernetes-csi/external-snapshotter/v8@$SNAPSHOTTER_VERSION")" || exit 1
  client="$(module_dir "github.com/kubernetes-csi/external-snapshotter/client/v8@$SNAPSHOTTER_VERSION")" || exit 1
  [ -d "$src" ] && [ -d "$client" ] || { log "external-snapshotter $SNAPSHOTTER_VERSION: no source directory from go mod download"; exit 1; }
  cp -r "$src" "$work/src" && cp -r "$client" "$work/src/client" && chmod -R u+w "$work/src"
  mkdir -p "$SNAPSHOTTER_DIR/bin.tmp"
  (cd "$work/src" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$SNAPSHOTTER_DIR/bin.tmp/" ./cmd/snapshot-controller ./cmd/csi-snapshotter)
  rm -rf "$SNAPSHOTTER_DIR/crd" && mkdir -p "$SNAPSHOTTER_DIR/crd"
  cp "$client"/config/crd/snapshot.storage.k8s.io_*.yaml "$SNAPSHOTTER_DIR/crd/" && chmod u+w "$SNAPSHOTTER_DIR"/crd/*
  rm -rf "$SNAPSHOTTER_DIR/bin" && mv "$SNAPSHOTTER_DIR/bin.tmp" "$SNAPSHOTTER_DIR/bin"
  rm -rf "$work"
  log "built external-snapshotter in $(( $(date +%s) - t0 ))s"
}

kubectl_() { "$K8S_BIN/kubectl" --kubeconfig "$CLUSTER/kubeconfig" "$@"; }

# restart_if_rebuilt NAME BIN: a running NAME of another build stops (start_proc starts this one).
restart_if_rebuilt() {
  local p; p="$(pidof_file "$1")" || return 0
  alive "$1" && [ "$(as_root readlink "/proc/$p/exe" 2>/dev/null)" != "$2" ] && { log "restarting $1 (its build changed)"; stop_proc "$1"; }
  return 0
}

up() {
  build_driver
  build_snapshotter
  local t0; t0=$(date +%s)
  kubectl_ apply -f "$SNAPSHOTTER_DIR/crd" >/dev/null
  kubectl_ wait --for condition=established --timeout=60s -f "$SNAPSHOTTER_DIR/crd" >/dev/null
  sed -e "s|@DRIVER@|$CSI_DRIVER|g" -e "s|@STORAGE_CLASS@|$CSI_STORAGE_CLASS|g" "$HARNESS_DIR/csi-hostpath/cluster.yaml" | kubectl_ apply -f - >/dev/null
  restart_if_rebuilt gavel-csi-hostpath "$CSI_BIN"
  # csi-snapshotter exits when it loses its driver's socket (a pod's container would be
  # restarted); it starts again with a driver that starts again.
  # A driver that is not running left its sockets behind (SIGKILLed): the kubelet's plugin
  # watcher would register the stale path, then flap (unregister, register again) when the new
  # driver replaces the file. Removed first (cluster.sh does the same before a kubelet starts).
  alive gavel-csi-hostpath || { stop_proc csi-snapshotter; as_root rm -f "$KUBELET_DIR/plugins_registry/$CSI_DRIVER-reg.sock" "$CSI_SOCKET"; }
  restart_if_rebuilt snapshot-controller "$SNAPSHOTTER_DIR/bin/snapshot-controller"
  restart_if_rebuilt csi-snapshotter "$SNAPSHOTTER_DIR/bin/csi-snapshotter"
  # Group snapshots are off: no VolumeGroupSnapshot CRDs, no group controller in the driver.
  start_proc gavel-csi-hostpath "$CSI_BIN" --driver-name "$CSI_DRIVER" --endpoint "$CSI_SOCKET" \
    --registration-dir "$KUBELET_DIR/plugins_registry" --node-id "$NODE_NAME" --data-dir "$CSI_DATA_DIR" \
    --kubeconfig "$CLUSTER/kubeconfig" --v=2
  start_proc snapshot-controller "$SNAPSHOTTER_DIR/bin/snapshot-controller" --kubeconfig "$CLUSTER/kubeconfig" \
    --leader-election=false --feature-gates CSIVolumeGroupSnapshot=false --retry-interval-start 200ms --v=2
  start_proc csi-snapshotter "$SNAPSHOTTER_DIR/bin/csi-snapshotter" --kubeconfig "$CLUSTER/kubeconfig" \
    --csi-address "$CSI_SOCKET" --leader-election=false --feature-gates CSIVolumeGroupSnapshot=false \
    --retry-interval-start 200ms --v=2
  # Ready once the kubelet registered the driver (the node's CSINode lists it) and the
  # registration holds: listed in 5 polls in a row (~1.5 s), so a flap of the kubelet's plugin
  # watcher (register, unregister, register) is waited out rather than taken for ready.
  local held=0
  for _ in $(seq 1 150); do
    if kubectl_ get csinode "$NODE_NAME" -o jsonpath='{.spec.drivers[*].name}' 2>/dev/null | grep -qw "$CSI_DRIVER"; then
      held=$((held + 1)); [ "$held" -ge 5 ] && break
    else
      held=0
    fi
    for p in "${PROCS[@]}"; do
      alive "$p" || { log "$p exited; last lines of $CLUSTER/$p.log:"; tail -20 "$CLUSTER/$p.log" >&2; exit 1; }
    done
    sleep 0.2
  done
  [ "$held" -ge 5 ] ||
    { log "the kubelet did not register $CSI_DRIVER (held $held polls); see $CLUSTER/gavel-csi-hostpath.log and kubelet.log"; exit 1; }
  log "CSI stack up in $(( $(date +%s) - t0 ))s (StorageClass and VolumeSnapshotClass $CSI_STORAGE_CLASS)"
}

down() {
  for p in csi-snapshotter snapshot-controller gavel-csi-hostpath; do stop_proc "$p"; done
  # The volumes and snapshots went with etcd's data.
  as_root rm -rf "$CSI_DATA_DIR"
}

case "${1:-}" in
  build) build_driver; build_snapshotter ;;
  up) up ;;
  down) down ;;
  status) for p in "${PROCS[@]}"; do printf '%-24s %s\n' "$p" "$(alive "$p" && echo running || echo stopped)"; done ;;
  *) echo "usage: csi.sh build|up|down|status" >&2; exit 2 ;;
esac
