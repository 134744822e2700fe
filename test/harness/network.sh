#!/usr/bin/env bash
# The single-node cluster's network on this machine (up | down), kept on interfaces the
# harness creates so that no packet of the cluster ever leaves the machine:
# - the node's address NODE_IP on a bridge with no ports (NODE_IFACE): the API server listens
#   there, pods reach it through the `kubernetes` Service (kube-proxy DNATs 10.0.0.1:443 to it);
# - the Service range routed to that bridge too: a ClusterIP kube-proxy has no rule for goes
#   nowhere instead of out of the default route;
# - the pod bridge (POD_BRIDGE, which the bridge CNI plugin then uses), with
#   bridge-nf-call-iptables so that kube-proxy's rules see traffic between two pods of the
#   bridge (a pod asking CoreDNS through the kube-dns Service);
# - forwarding limited to pod-to-pod on that bridge (chain GAVEL-FORWARD): a pod's packet to
#   any other address is rejected, not routed. The bridge CNI plugin turns on ip_forward.
source "$(dirname "$0")/lib.sh"
CHAIN=GAVEL-FORWARD

ensure_bridge() { # NAME: a bridge that is up
  ip link show "$1" >/dev/null 2>&1 || as_root ip link add "$1" type bridge
  as_root ip link set "$1" up
}

up() {
  ensure_bridge "$NODE_IFACE"
  as_root ip addr replace "$NODE_IP/32" dev "$NODE_IFACE"
  as_root ip route replace "$SERVICE_CIDR" dev "$NODE_IFACE"
  ensure_bridge "$POD_BRIDGE"
  as_root sh -c 'echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables' 2>/dev/null ||
    log "warning: net.bridge.bridge-nf-call-iptables cannot be set: pod-to-pod traffic through a Service may fail"
  # Rules are checked one by one and only missing ones appended: no moment without them.
  as_root iptables -w -N "$CHAIN" 2>/dev/null || true
  for rule in "-i $POD_BRIDGE -o $POD_BRIDGE -j ACCEPT" "-i $POD_BRIDGE -j REJECT" "-o $POD_BRIDGE -j REJECT"; do
    # shellcheck disable=SC2086
    as_root iptables -w -C "$CHAIN" $rule 2>/dev/null || as_root iptables -w -A "$CHAIN" $rule
  done
  as_root iptables -w -C FORWARD -j "$CHAIN" 2>/dev/null || as_root iptables -w -I FORWARD 1 -j "$CHAIN"
}

down() {
  while as_root iptables -w -D FORWARD -j "$CHAIN" 2>/dev/null; do :; done
  as_root iptables -w -F "$CHAIN" 2>/dev/null || true
  as_root iptables -w -X "$CHAIN" 2>/dev/null || true
  as_root ip route del "$SERVICE_CIDR" dev "$NODE_IFACE" 2>/dev/null || true
  for link in "$NODE_IFACE" "$POD_BRIDGE"; do as_root ip link del "$link" 2>/dev/null || true; done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: network.sh up|down" >&2; exit 2 ;;
esac
