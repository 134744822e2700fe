#!/usr/bin/env bash
# Starts (up DIR) or stops (down DIR) a Kubernetes control plane for tests: etcd and
# kube-apiserver on free loopback ports, TLS with the cached test PKI, RBAC, service
# account signing (as controller-runtime's envtest does). Writes DIR/kubeconfig (admin),
# DIR/env (ports, pids) and the logs into DIR. Installs crds/ unless NO_CRDS=1. API_ADDRESS
# (default 127.0.0.1) is where the apiserver listens and what it advertises; API_PORT its port.
# KUBELET_ADDRESS_TYPES (default Hostname) is the node address the apiserver reaches a kubelet
# at (logs): kwok's simulated nodes serve them on InternalIP 127.0.0.1 (test/harness/kwok.ts).
source "$(dirname "$0")/lib.sh"
cmd="${1:?usage: control-plane.sh up|down|restart-apiserver DIR}"
dir="${2:?usage: control-plane.sh up|down|restart-apiserver DIR}"
PKI="$GAVEL_CACHE/pki"
API_ADDRESS="${API_ADDRESS:-127.0.0.1}"

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# kubeconfig FILE USER CERT KEY: writes a kubeconfig for the apiserver at $API_PORT.
kubeconfig() {
  cat > "$1" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: gavel-test
  cluster:
    server: https://$API_ADDRESS:$API_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $3
    client-key: $4
contexts:
- name: gavel-test
  context: {cluster: gavel-test, user: $2}
current-context: gavel-test
YAML
}

stop_pid() {
  local pid="$1"
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

# start_apiserver: kube-apiserver on $API_PORT over the etcd at $ETCD_PORT, its log appended to
# $dir/kube-apiserver.log; sets API_PID.
start_apiserver() {
  (close_fds; exec "$K8S_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$API_ADDRESS" --advertise-address "$API_ADDRESS" --secure-port "$API_PORT" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --authorization-mode "${AUTHORIZATION_MODE:-RBAC}" \
    --service-cluster-ip-range 10.0.0.0/24 --allow-privileged=true \
    --kubelet-preferred-address-types "${KUBELET_ADDRESS_TYPES:-Hostname}" \
    --enable-priority-and-fairness=false \
    --profiling=false --v=1 >>"$dir/kube-apiserver.log" 2>&1) &
  API_PID=$!
}

# wait_apiserver: until its /readyz answers (30 s); otherwise names its log's last lines and fails.
wait_apiserver() {
  for _ in $(seq 1 300); do
    if ! kill -0 "$API_PID" 2>/dev/null; then break; fi
    if curl -fsS --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
        "https://$API_ADDRESS:$API_PORT/readyz" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  log "kube-apiserver did not become ready; last lines of $dir/kube-apiserver.log:"
  tail -30 "$dir/kube-apiserver.log" >&2
  return 1
}

case "$cmd" in
up)
  "$HARNESS_DIR/pki.sh"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  ETCD_PORT="$(free_port)"; ETCD_PEER_PORT="$(free_port)"; API_PORT="${API_PORT:-$(free_port)}"
  started=$(date +%s.%N)
  (close_fds; exec etcd --data-dir "$dir/etcd" --name gavel-test \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "gavel-test=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --quota-backend-bytes 2147483648 >"$dir/etcd.log" 2>&1) &
  ETCD_PID=$!
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"' && break
    sleep 0.1
  done
  start_apiserver
  kubeconfig "$dir/kubeconfig" admin "$PKI/admin.crt" "$PKI/admin.key"
  cat > "$dir/env" <<ENV
ETCD_PORT=$ETCD_PORT
ETCD_PID=$ETCD_PID
API_ADDRESS=$API_ADDRESS
API_PORT=$API_PORT
API_PID=$API_PID
KUBECONFIG=$dir/kubeconfig
ENV
  if ! wait_apiserver; then stop_pid "$API_PID"; stop_pid "$ETCD_PID"; exit 1; fi
  CRDS_DIR="${CRDS_DIR:-$REPO_DIR/crds}"
  if [ "${NO_CRDS:-0}" != 1 ] && ls "$CRDS_DIR"/*.yaml >/dev/null 2>&1; then
    "$K8S_BIN/kubectl" --kubeconfig "$dir/kubeconfig" apply --server-side -f "$CRDS_DIR" >/dev/null
    "$K8S_BIN/kubectl" --kubeconfig "$dir/kubeconfig" wait --for condition=established --timeout=60s \
      -f "$CRDS_DIR" >/dev/null
    # A new CRD's watch cache answers 429 until it has initialised; wait for every one.
    for res in $("$K8S_BIN/kubectl" --kubeconfig "$dir/kubeconfig" get crd \
        -o jsonpath='{range .items[*]}{.spec.group}/{.spec.versions[0].name}/{.spec.names.plural}{"\n"}{end}'); do
      for _ in $(seq 1 100); do
        "$K8S_BIN/kubectl" --kubeconfig "$dir/kubeconfig" get --raw \
          "/apis/$res?watch=1&timeoutSeconds=1" >/dev/null 2>&1 && break
        sleep 0.1
      done
    done
    # Rules on fields without a structural type live in a ValidatingAdmissionPolicy
    # (rendered with the CRDs into manifests/); it needs the CRDs' types to be served.
    for policy in "$REPO_DIR"/manifests/*admission-policy.yaml; do
      [ -e "$policy" ] || continue
      "$K8S_BIN/kubectl" --kubeconfig "$dir/kubeconfig" apply --server-side -f "$policy" >/dev/null
    done
  fi
  elapsed=$(echo "$(date +%s.%N) - $started" | bc 2>/dev/null || echo "?")
  echo "STARTUP_SECONDS=$elapsed" >> "$dir/env"
  log "control plane up in ${elapsed}s: https://$API_ADDRESS:$API_PORT (kubeconfig $dir/kubeconfig)"
  ;;
down)
  [ -f "$dir/env" ] || exit 0
  # shellcheck disable=SC1091
  source "$dir/env"
  stop_pid "${API_PID:-}"
  stop_pid "${ETCD_PID:-}"
  rm -f "$dir/env"
  ;;
restart-apiserver)
  # The API server stopped (SIGTERM, then SIGKILL after 5 s) and started again on the same
  # port and etcd: what clients see of an API server's restart (issue 24 item 6).
  # shellcheck disable=SC1091
  source "$dir/env"
  stop_pid "$API_PID"
  start_apiserver
  sed -i "s/^API_PID=.*/API_PID=$API_PID/" "$dir/env"
  wait_apiserver
  ;;
*) echo "usage: control-plane.sh up|down|restart-apiserver DIR" >&2; exit 2 ;;
esac
