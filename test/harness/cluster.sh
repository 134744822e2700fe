#!/usr/bin/env bash
# Single-node Kubernetes cluster for e2e tests (up | down | status): the control plane of
# control-plane.sh on the node's address plus kube-controller-manager, kube-scheduler,
# containerd (runc, bridge CNI), a kubelet and kube-proxy, with gavel's images imported, the
# add-ons of addons.sh (CoreDNS, local-path-provisioner) and the CSI snapshot stack of csi.sh.
# Pods reach Services, DNS names and the API server (the `kubernetes` Service) as on any
# cluster; nothing is routed off this machine (network.sh). State lives in
# $GAVEL_CACHE/cluster; $GAVEL_CACHE/cluster/kubeconfig is the admin kubeconfig. No gavel
# CRDs: the chart installs them, as on a user's cluster (csi.sh installs the VolumeSnapshot
# CRDs, as a cluster with a snapshotting CSI driver has them).
source "$(dirname "$0")/lib.sh"
PKI="$GAVEL_CACHE/pki"
CTRD_ROOT=/var/lib/gavel-containerd
CTRD_STATE=/run/gavel-containerd
CTRD_SOCK="$CTRD_STATE/containerd.sock"
NODE="$NODE_NAME"
# Bumped when the cluster's shape changes: `up` restarts a cluster of another layout.
LAYOUT="2: apiserver on $NODE_IP:6443, kube-proxy, cluster DNS $CLUSTER_DNS_IP, add-ons"

kubectl_() { "$K8S_BIN/kubectl" --kubeconfig "$CLUSTER/kubeconfig" "$@"; }

# Writes stdin to FILE only when the content differs. `up` runs again over a live cluster, and
# a running kube-proxy exits as soon as its configuration file is written ("content of the
# proxy server's configuration file was updated"), which left Services without rules.
write_if_changed() {
  local tmp
  tmp="$(mktemp "$1.XXXXXX")"
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv -f "$tmp" "$1"; fi
}

component_kubeconfig() { # NAME USER CERT KEY
  source "$CLUSTER/cp/env"
  write_if_changed "$CLUSTER/$1.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: gavel
  cluster: {server: "https://$API_ADDRESS:$API_PORT", certificate-authority: "$PKI/ca.crt"}
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
    {"type": "bridge", "bridge": "$POD_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
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
# CoreDNS (addons.sh) behind the kube-dns Service. No resolv.conf from the host: nothing in
# a pod should ask the machine's own resolver (it is off this machine).
clusterDNS: ["$CLUSTER_DNS_IP"]
clusterDomain: cluster.local
resolvConf: ""
serializeImagePulls: false
registerNode: true
podCIDR: "$POD_CIDR"
maxPods: 50
YAML
}

write_kube_proxy_config() {
  write_if_changed "$CLUSTER/kube-proxy-config.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$CLUSTER/kube-proxy.kubeconfig"}
hostnameOverride: "$NODE"
mode: iptables
clusterCIDR: "$POD_CIDR"
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# NodePorts only on the node's own address, never on the machine's real interfaces.
nodePortAddresses: ["$NODE_IP/32"]
# Leave the machine's sysctls alone: no route_localnet, no conntrack table sizing.
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
}

import_images() {
  # Every gavel image plus the pause image, all tags of one image in one stream (its layers
  # once); skipped when containerd already has every tag at that image ID.
  local ids
  ids="$(docker images --format '{{.ID}} {{.Repository}}:{{.Tag}}' | grep -E ' gavel/' | grep -v ' gavel/rootfs' | awk '{print $1}' | sort -u || true)"
  for short in $ids; do
    local id names stamp have=1
    id="$(docker image inspect -f '{{.Id}}' "$short")"
    names="$(docker image inspect -f '{{range .RepoTags}}{{.}} {{end}}' "$short" | tr ' ' '\n' | grep -E '^gavel/' || true)"
    [ -n "$names" ] || continue
    for img in $names; do
      stamp="$CLUSTER/imported.$(echo "$img" | tr '/:' '__')"
      grep -qx "$id" "$stamp" 2>/dev/null && as_root ctr -a "$CTRD_SOCK" -n k8s.io images ls -q "name==docker.io/$img" 2>/dev/null | grep -q . || have=0
    done
    [ "$have" = 1 ] && continue
    log "importing $(echo $names) into containerd"
    # shellcheck disable=SC2086
    docker save $names | as_root ctr -a "$CTRD_SOCK" -n k8s.io images import --no-unpack=false - >/dev/null
    for img in $names; do echo "$id" > "$CLUSTER/imported.$(echo "$img" | tr '/:' '__')"; done
  done
}

up() {
  local t0; t0=$(date +%s)
  mkdir -p "$CLUSTER"
  # A cluster of an older layout (made by an earlier version of this script) is replaced.
  if [ -f "$CLUSTER/cp/env" ] && ! grep -qxF "$LAYOUT" "$CLUSTER/layout" 2>/dev/null; then
    log "replacing a cluster of another layout"
    down
  fi
  "$HARNESS_DIR/base-image.sh"
  "$HARNESS_DIR/network.sh" up
  if ! { [ -f "$CLUSTER/cp/env" ] && source "$CLUSTER/cp/env" &&
         { tr '\0' ' ' <"/proc/$API_PID/cmdline"; } 2>/dev/null | grep -q kube-apiserver; }; then
    rm -rf "$CLUSTER/cp"
    AUTHORIZATION_MODE=Node,RBAC API_ADDRESS="$NODE_IP" API_PORT=6443 NO_CRDS=1 \
      "$HARNESS_DIR/control-plane.sh" up "$CLUSTER/cp"
  fi
  source "$CLUSTER/cp/env"
  echo "$LAYOUT" > "$CLUSTER/layout"
  cp "$CLUSTER/cp/kubeconfig" "$CLUSTER/kubeconfig"
  component_kubeconfig scheduler system:kube-scheduler "$PKI/scheduler.crt" "$PKI/scheduler.key"
  component_kubeconfig controller-manager system:kube-controller-manager "$PKI/controller-manager.crt" "$PKI/controller-manager.key"
  component_kubeconfig kubelet "system:node:$NODE" "$PKI/kubelet.crt" "$PKI/kubelet.key"
  component_kubeconfig kube-proxy system:kube-proxy "$PKI/kube-proxy.crt" "$PKI/kube-proxy.key"

  start_proc kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$CLUSTER/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$CLUSTER/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$CLUSTER/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --use-service-account-credentials=true --controllers '*,-nodeipam,-cloud-node-lifecycle' \
    --service-cluster-ip-range "$SERVICE_CIDR" --v=1
  start_proc kube-scheduler "$K8S_BIN/kube-scheduler" \
    --kubeconfig "$CLUSTER/scheduler.kubeconfig" \
    --authentication-kubeconfig "$CLUSTER/scheduler.kubeconfig" \
    --authorization-kubeconfig "$CLUSTER/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false --v=1

  write_containerd_config
  as_root mkdir -p "$CTRD_ROOT" "$CTRD_STATE"
  start_proc containerd containerd --config "$CLUSTER/containerd.toml"
  for _ in $(seq 1 100); do as_root ctr -a "$CTRD_SOCK" version >/dev/null 2>&1 && break; sleep 0.1; done
  "$HARNESS_DIR/addons.sh" images
  import_images

  write_kubelet_config
  # Registration sockets of plugins that are not running (the CSI driver of csi.sh, killed with
  # the cluster) would be registered by the new kubelet, then unregistered when the driver
  # replaces them.
  alive kubelet || alive gavel-csi-hostpath || as_root sh -c "rm -f '$KUBELET_DIR'/plugins_registry/*.sock"
  start_proc kubelet "$K8S_BIN/kubelet" \
    --config "$CLUSTER/kubelet-config.yaml" --kubeconfig "$CLUSTER/kubelet.kubeconfig" \
    --hostname-override "$NODE" --node-ip "$NODE_IP" --root-dir "$KUBELET_DIR" --v=1
  write_kube_proxy_config
  start_proc kube-proxy "$K8S_BIN/kube-proxy" --config "$CLUSTER/kube-proxy-config.yaml" --v=1

  log "waiting for node $NODE to be Ready"
  for _ in $(seq 1 120); do
    kubectl_ get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True && break
    for p in containerd kubelet kube-proxy kube-scheduler kube-controller-manager; do
      alive "$p" || { log "$p exited; last lines of $CLUSTER/$p.log:"; tail -20 "$CLUSTER/$p.log" >&2; exit 1; }
    done
    sleep 1
  done
  kubectl_ get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -q True \
    || { log "node not Ready; see $CLUSTER/kubelet.log"; tail -30 "$CLUSTER/kubelet.log" >&2; exit 1; }
  # The default service account appears once the controller-manager has run.
  for _ in $(seq 1 60); do kubectl_ -n default get serviceaccount default >/dev/null 2>&1 && break; sleep 0.5; done
  # NetworkPolicy enforcement (kube-network-policies); idempotent, so a running cluster gets it too.
  "$HARNESS_DIR/network-policy.sh" up
  # A CSI driver that takes and restores snapshots (the `snapshot` workspace strategy); idempotent.
  "$HARNESS_DIR/csi.sh" up
  KUBECONFIG="$CLUSTER/kubeconfig" "$HARNESS_DIR/addons.sh" apply
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
  stop_proc kube-proxy
  stop_proc kube-scheduler
  stop_proc kube-controller-manager
  [ -d "$CLUSTER/cp" ] && "$HARNESS_DIR/control-plane.sh" down "$CLUSTER/cp"
  # Mounts the kubelet left behind (pod volumes, secrets) must go before the next start.
  grep -o " $KUBELET_DIR[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do as_root umount -l "$m" || true; done
  # kube-proxy's rules, and the volumes of PersistentVolumes that went with etcd's data.
  [ -x "$K8S_BIN/kube-proxy" ] && as_root "$K8S_BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
  as_root rm -rf "$LOCAL_PATH_DIR"
  # The CSI stack's processes, volumes and snapshots (after the pods' mounts of them are gone).
  "$HARNESS_DIR/csi.sh" down
  "$HARNESS_DIR/network-policy.sh" down
  "$HARNESS_DIR/network.sh" down
  rm -rf "$CLUSTER/cp" "$CLUSTER/layout"
  log "cluster down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  # kill CONTAINER_ID: SIGKILL a pod's container from the node, as a crash would.
  kill) as_root ctr -a "$CTRD_SOCK" -n k8s.io tasks kill -s SIGKILL "${2:?usage: cluster.sh kill CONTAINER_ID}" ;;
  status) for p in kube-controller-manager kube-scheduler containerd kubelet kube-proxy; do
            printf '%-24s %s\n' "$p" "$(alive "$p" && echo running || echo stopped)"; done
          "$HARNESS_DIR/csi.sh" status ;;
  *) echo "usage: cluster.sh up|down|status|kill CONTAINER_ID" >&2; exit 2 ;;
esac
