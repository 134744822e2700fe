#!/usr/bin/env bash
# The single-node cluster's add-ons, run as pods the way a kubeadm cluster runs them:
# CoreDNS (Deployment + Service kube-dns in kube-system) and local-path-provisioner (the
# default StorageClass `local-path`). Their binaries come from build-k8s.sh (Go module proxy).
#   addons.sh images   build their images FROM the base image (skipped when present)
#   addons.sh apply    apply addons/*.yaml to the cluster of $KUBECONFIG and wait until ready
source "$(dirname "$0")/lib.sh"
COREDNS_IMAGE="gavel/coredns:$COREDNS_VERSION"
LOCAL_PATH_IMAGE="gavel/local-path-provisioner:$LOCAL_PATH_VERSION"

# image NAME BINARY: NAME, FROM the base image, with BINARY as its entrypoint; rebuilt when
# the binary changed (its checksum is a label of the image).
image() {
  local name="$1" bin="$2" sum
  [ -x "$bin" ] || "$HARNESS_DIR/build-k8s.sh"
  sum="$(sha256sum "$bin" | cut -c1-16)"
  [ "$(docker image inspect -f '{{index .Config.Labels "gavel.dev/binary"}}' "$name" 2>/dev/null)" = "$sum" ] && return 0
  log "building $name"
  local ctx; ctx="$(mktemp -d)"
  cp "$bin" "$ctx/"
  cat > "$ctx/Dockerfile" <<DOCKERFILE
FROM $BASE_IMAGE
COPY $(basename "$bin") /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/$(basename "$bin")"]
DOCKERFILE
  # Quiet unless it fails (the legacy builder's deprecation notice is not news).
  local out
  out="$(docker build -q --label "$HARNESS_LABEL" --label "gavel.dev/binary=$sum" -t "$name" "$ctx" 2>&1)" || { printf '%s\n' "$out" >&2; exit 1; }
  rm -rf "$ctx"
}

apply() {
  local k=("$K8S_BIN/kubectl")
  for f in "$HARNESS_DIR"/addons/*.yaml; do
    sed -e "s|@COREDNS_IMAGE@|$COREDNS_IMAGE|g" -e "s|@CLUSTER_DNS_IP@|$CLUSTER_DNS_IP|g" \
        -e "s|@LOCAL_PATH_IMAGE@|$LOCAL_PATH_IMAGE|g" -e "s|@LOCAL_PATH_DIR@|$LOCAL_PATH_DIR|g" \
        -e "s|@BASE_IMAGE@|$BASE_IMAGE|g" "$f"
    echo "---"
  done | "${k[@]}" apply -f - >/dev/null
  for d in kube-system/coredns local-path-storage/local-path-provisioner; do
    "${k[@]}" -n "${d%/*}" rollout status "deployment/${d#*/}" --timeout=180s >/dev/null || {
      log "add-on $d is not ready:"; "${k[@]}" -n "${d%/*}" get pods -o wide >&2
      "${k[@]}" -n "${d%/*}" logs "deployment/${d#*/}" --tail=20 >&2 || true
      exit 1
    }
  done
}

case "${1:-}" in
  images) image "$COREDNS_IMAGE" "$COREDNS_BIN/coredns"
          image "$LOCAL_PATH_IMAGE" "$LOCAL_PATH_BIN/local-path-provisioner" ;;
  apply) apply ;;
  *) echo "usage: addons.sh images|apply" >&2; exit 2 ;;
esac
