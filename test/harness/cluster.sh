#!/usr/bin/env bash
# Single-node Kubernetes cluster for e2e tests (up | down | status): the control plane of
# control-plane.sh plus kube-controller-manager, kube-scheduler, containerd (runc, bridge
# CNI) and a kubelet, with gavel's images imported. State lives in $GAVEL_CACHE/cluster;
# $GAVEL_CACHE/cluster/kubeconfig is the admin kubeconfig.
source "$(dirname "$0")/lib.sh"
CLUSTER="$GAVEL_CACHE/cluster"
PKI="$GAVEL_CACHE/pki"
CTRD_ROOT=/var/lib/gavel-containerd
CTRD_STATE=/run/gavel-containerd
CTRD_SOCK="$CTRD_STATE/containerd.sock"
KUBELET_DIR=/var/lib/gavel-kubelet
NODE="$NODE_NAME"
POD_CIDR=10.88.0.0/16

pidof_file() { [ -f "$CLUSTER/$1.pid" ] && cat "$CLUSTER/$1.pid"; }
# alive NAME: the recorded process runs and is still NAME (a pid may be reused after a reboot).
alive() {
  local p; p="$(pidof_file "$1")" && [ -n "$p" ] && kill -0 "$p" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "$1"
}
stop_proc() {
  local p; p="$(pidof_file "$1")" || return 0
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
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

kubectl_() { "$K8S_BIN/kubectl" --kubeconfig "$CLUSTER/kubeconfig" "$@"; }

component_kubeconfig() { # NAME USER CERT KEY
  source "$CLUSTER/cp/env"
  cat > "$CLUSTER/$1.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: gavel
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$PKI/ca.crt"}
users:
- name: $2
  user: {client-certificate: "$3", client-key: "$4"}
contexts:
- name: gavel
  context: {cluster: gavel, user: $2}
current-context: gavel
YAML
}

write_containerd_config() {
  mkdir -p "$CLUSTER/cni/net.d"
  cat > "$CLUSTER/containerd.toml" <<TOML
version = 2
root = "$CTRD_ROOT"
state = "$CTRD_STATE"
[grpc]
  address = "$CTRD_SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CLUSTER/cni/net.d"
TOML
  cat > "$CLUSTER/cni/net.d/10-gavel.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "gavel",
  "plugins": [
    {"type": "bridge", "bridge": "gavel0", "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "loopback"}
  ]
}
JSON
}

write_kubelet_config() {
  mkdir -p "$KUBELET_DIR"
  cat > "$CLUSTER/kubelet-config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: AlwaysAllow}
tlsCertFile: "$PKI/kubelet-serving.crt"
tlsPrivateKeyFile: "$PKI/kubelet-serving.key"
cgroupDriver: cgroupfs
cgroupsPerQOS: true
enforceNodeAllocatable: []
oomScoreAdj: 0
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
containerRuntimeEndpoint: "unix://$CTRD_SOCK"
clusterDNS: []
resolvConf: /etc/resolv.conf
serializeImagePulls: false
registerNode: true
podCIDR: "$POD_CIDR"
maxPods: 50
YAML
}

import_images() {
  # Every gavel image plus the pause image; skipped when containerd already has it by ID.
  local images
  images="$(docker images --format '{{.Repository}}:{{.Tag}}' | grep -E '^gavel/' | grep -v '^gavel/rootfs' || true)"
  for img in $images; do
    local id; id="$(docker image inspect -f '{{.Id}}' "$img")"
    local have; have="$(as_root ctr -a "$CTRD_SOCK" -n k8s.io images ls -q "name==docker.io/$img" 2>/dev/null || true)"
    if [ -n "$have" ] && grep -qx "$id" "$CLUSTER/imported.$(echo "$img" | tr '/:' '__')" 2>/dev/null; then continue; fi
    log "importing $img into containerd"
    docker save "$img" | as_root ctr -a "$CTRD_SOCK" -n k8s.io images import --no-unpack=false - >/dev/null
    echo "$id" > "$CLUSTER/imported.$(echo "$img" | tr '/:' '__')"
  done
}

up() {
  local t0; t0=$(date +%s)
  mkdir -p "$CLUSTER"
  "$HARNESS_DIR/base-image.sh"
  if ! { [ -f "$CLUSTER/cp/env" ] && source "$CLUSTER/cp/env" &&
         tr '\0' ' ' <"/proc/$API_PID/cmdline" 2>/dev/null | grep -q kube-apiserver; }; then
    rm -rf "$CLUSTER/cp"
    AUTHORIZATION_MODE=Node,RBAC "$HARNESS_DIR/control-plane.sh" up "$CLUSTER/cp"
  fi
  source "$CLUSTER/cp/env"
  cp "$CLUSTER/cp/kubeconfig" "$CLUSTER/kubeconfig"
  component_kubeconfig scheduler system:kube-scheduler "$PKI/scheduler.crt" "$PKI/scheduler.key"
  component_kubeconfig controller-manager system:kube-controller-manager "$PKI/controller-manager.crt" "$PKI/controller-manager.key"
  component_kubeconfig kubelet "system:node:$NODE" "$PKI/kubelet.crt" "$PKI/kubelet.key"

  start_proc kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$CLUSTER/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$CLUSTER/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$CLUSTER/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --use-service-account-credentials=true --controllers '*,-nodeipam,-cloud-node-lifecycle' \
    --service-cluster-ip-range 10.0.0.0/24 --v=1
  start_proc kube-scheduler "$K8S_BIN/kube-scheduler" \
    --kubeconfig "$CLUSTER/scheduler.kubeconfig" \
    --authentication-kubeconfig "$CLUSTER/scheduler.kubeconfig" \
    --authorization-kubeconfig "$CLUSTER/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false --v=1

  write_containerd_config
  as_root mkdir -p "$CTRD_ROOT" "$CTRD_STATE"
  start_proc containerd containerd --config "$CLUSTER/containerd.toml"
  for _ in $(seq 1 100); do as_root ctr -a "$CTRD_SOCK" version >/dev/null 2>&1 && break; sleep 0.1; done
  import_images

  write_kubelet_config
  start_proc kubelet "$K8S_BIN/kubelet" \
    --config "$CLUSTER/kubelet-config.yaml" --kubeconfig "$CLUSTER/kubelet.kubeconfig" \
    --hostname-override "$NODE" --root-dir "$KUBELET_DIR" --v=1

  log "waiting for node $NODE to be Ready"
  for _ in $(seq 1 120); do
    kubectl_ get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True && break
    for p in containerd kubelet kube-scheduler kube-controller-manager; do
      alive "$p" || { log "$p exited; last lines of $CLUSTER/$p.log:"; tail -20 "$CLUSTER/$p.log" >&2; exit 1; }
    done
    sleep 1
  done
  kubectl_ get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -q True \
    || { log "node not Ready; see $CLUSTER/kubelet.log"; tail -30 "$CLUSTER/kubelet.log" >&2; exit 1; }
  # The default service account appears once the controller-manager has run.
  for _ in $(seq 1 60); do kubectl_ -n default get serviceaccount default >/dev/null 2>&1 && break; sleep 0.5; done
  log "cluster up in $(( $(date +%s) - t0 ))s (kubeconfig $CLUSTER/kubeconfig)"
}

down() {
  stop_proc kubelet
  # Stop every pod's containers before containerd goes, so nothing is left running.
  if [ -S "$CTRD_SOCK" ]; then
    for t in $(as_root ctr -a "$CTRD_SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
      as_root ctr -a "$CTRD_SOCK" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
  fi
  stop_proc containerd
  stop_proc kube-scheduler
  stop_proc kube-controller-manager
  [ -d "$CLUSTER/cp" ] && "$HARNESS_DIR/control-plane.sh" down "$CLUSTER/cp"
  # Mounts the kubelet left behind (pod volumes, secrets) must go before the next start.
  grep -o " $KUBELET_DIR[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do as_root umount -l "$m" || true; done
  rm -rf "$CLUSTER/cp"
  log "cluster down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) for p in kube-controller-manager kube-scheduler containerd kubelet; do
            printf '%-24s %s\n' "$p" "$(alive "$p" && echo running || echo stopped)"; done ;;
  *) echo "usage: cluster.sh up|down|status" >&2; exit 2 ;;
esac
