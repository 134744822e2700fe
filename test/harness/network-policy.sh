#!/usr/bin/env bash
# NetworkPolicy on the single-node cluster (build | up | down | status): the controller of
# sigs.k8s.io/kube-network-policies (the Kubernetes SIG's implementation, kind's default),
# built from the Go module proxy through the wrapper module in network-policies/ and run on
# the node as a host process. This machine's kernel has no nftables `queue` expression
# (CONFIG_NFT_QUEUE is off), so the controller's own nftables hook cannot load; iptables
# NFQUEUE rules here send the first packet of each new connection from a pod to it instead,
# and it accepts or drops the packet by the cluster's NetworkPolicies:
# - FORWARD, pod to pod on the pod bridge (before network.sh's GAVEL-FORWARD accepts it; every
#   other forwarded packet is left to GAVEL-FORWARD, which rejects what leaves the bridge);
# - INPUT, pod to the node (the API server, a host NATS), appended after others' INPUT rules.
# --queue-bypass: with no controller listening the packets pass (fail open), so a cluster
# without the controller still works; `up` waits until it listens. Host processes' own
# connections (kubelet probes) are never queued. Pod IPs come from the API server (no NRI in
# containerd 1.6): a connection made before the kubelet reported the pod's IP is not matched.
source "$(dirname "$0")/lib.sh"
KNP_VERSION=v0.8.0
# The binary's directory names a hash of the wrapper module, so a change to it rebuilds.
KNP_HASH="$(cat "$HARNESS_DIR/network-policies/go.mod" "$HARNESS_DIR/network-policies/go.sum" "$HARNESS_DIR/network-policies/main.go" | sha256sum | cut -c1-12)"
KNP_BIN="$GAVEL_CACHE/network-policies/$KNP_VERSION-$KNP_HASH/bin/kube-network-policies"
CHAIN=GAVEL-NETPOL
QUEUE=100

build() {
  [ -x "$KNP_BIN" ] && return 0
  grep -q "sigs.k8s.io/kube-network-policies $KNP_VERSION" "$HARNESS_DIR/network-policies/go.mod" ||
    { log "network-policies/go.mod does not pin $KNP_VERSION"; exit 1; }
  local t0 work; t0=$(date +%s); work="$(mktemp -d)"
  log "go build kube-network-policies $KNP_VERSION"
  cp "$HARNESS_DIR/network-policies/go.mod" "$HARNESS_DIR/network-policies/go.sum" "$HARNESS_DIR/network-policies/main.go" "$work/"
  mkdir -p "$(dirname "$KNP_BIN")"
  # The module is on the proxy but not in the checksum database: go.sum pins it instead.
  (cd "$work" && CGO_ENABLED=0 GONOSUMDB=sigs.k8s.io GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$KNP_BIN.tmp" .)
  mv "$KNP_BIN.tmp" "$KNP_BIN"
  rm -rf "$work"
  log "built kube-network-policies in $(( $(date +%s) - t0 ))s"
}

pid() { [ -f "$CLUSTER/network-policies.pid" ] && cat "$CLUSTER/network-policies.pid"; }
running() { local p; p="$(pid)" && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
# The running controller is this build (not one of an older wrapper module).
current() { local p; p="$(pid)" && [ "$(as_root readlink "/proc/$p/exe" 2>/dev/null)" = "$KNP_BIN" ]; }

rules() { # ACTION (-C/-A/-D) for each rule of the chain's jumps
  local action="$1"
  case "$action" in
    -D) while as_root iptables -w -D FORWARD -j "$CHAIN" 2>/dev/null; do :; done
        while as_root iptables -w -D INPUT -j "$CHAIN" 2>/dev/null; do :; done ;;
    *) as_root iptables -w -C FORWARD -j "$CHAIN" 2>/dev/null || as_root iptables -w -I FORWARD 1 -j "$CHAIN"
       as_root iptables -w -C INPUT -j "$CHAIN" 2>/dev/null || as_root iptables -w -A INPUT -j "$CHAIN" ;;
  esac
}

up() {
  build
  if running && ! current; then log "restarting kube-network-policies (its build changed)"; down; fi
  if ! running; then
    (close_fds; as_root sh -c 'exec "$@" >>"'"$CLUSTER/network-policies.log"'" 2>&1 & echo $! >"'"$CLUSTER/network-policies.pid"'"' _ \
      "$KNP_BIN" --kubeconfig "$CLUSTER/kubeconfig" --hostname-override "$NODE_NAME" --nfqueue-id "$QUEUE" --v=1)
  fi
  as_root iptables -w -N "$CHAIN" 2>/dev/null || true
  local rule
  for rule in "-m conntrack --ctstate ESTABLISHED,RELATED -j RETURN" \
              "-s $POD_CIDR -d $POD_CIDR -m conntrack --ctstate NEW -j NFQUEUE --queue-num $QUEUE --queue-bypass" \
              "-i $POD_BRIDGE -d $NODE_IP -m conntrack --ctstate NEW -j NFQUEUE --queue-num $QUEUE --queue-bypass"; do
    # shellcheck disable=SC2086
    as_root iptables -w -C "$CHAIN" $rule 2>/dev/null || as_root iptables -w -A "$CHAIN" $rule
  done
  rules -A
  # Listening once the queue is bound: /proc lists queue $QUEUE with its peer's port id.
  for _ in $(seq 1 100); do
    awk -v q="$QUEUE" '$1 == q' /proc/net/netfilter/nfnetlink_queue 2>/dev/null | grep -q . && { log "NetworkPolicy controller up (kube-network-policies $KNP_VERSION)"; return 0; }
    running || { log "kube-network-policies exited; last lines of $CLUSTER/network-policies.log:"; tail -20 "$CLUSTER/network-policies.log" >&2; exit 1; }
    sleep 0.2
  done
  log "kube-network-policies does not listen on nfqueue $QUEUE; see $CLUSTER/network-policies.log"; exit 1
}

down() {
  rules -D
  as_root iptables -w -F "$CHAIN" 2>/dev/null || true
  as_root iptables -w -X "$CHAIN" 2>/dev/null || true
  local p; p="$(pid)" || true
  if [ -n "${p:-}" ] && kill -0 "$p" 2>/dev/null; then
    as_root kill "$p" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    as_root kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$CLUSTER/network-policies.pid"
}

case "${1:-}" in
  build) build ;;
  up) up ;;
  down) down ;;
  status) running && echo running || echo stopped ;;
  *) echo "usage: network-policy.sh build|up|down|status" >&2; exit 2 ;;
esac
