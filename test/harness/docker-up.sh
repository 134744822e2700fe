#!/usr/bin/env bash
# Starts a Docker engine when none answers. No bridge and no iptables: containers either
# share the host's network (workers, to reach NATS on loopback) or have none (judges).
source "$(dirname "$0")/lib.sh"

if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then exit 0; fi
log "starting dockerd"
mkdir -p "$GAVEL_CACHE/run"
(close_fds; as_root sh -c "nohup dockerd --iptables=false --ip6tables=false --bridge=none \
  >'$GAVEL_CACHE/run/dockerd.log' 2>&1 &")
for _ in $(seq 1 60); do
  docker version --format '{{.Server.Version}}' >/dev/null 2>&1 && { log "dockerd is up"; exit 0; }
  sleep 0.5
done
log "dockerd did not answer in 30 s; see $GAVEL_CACHE/run/dockerd.log"
tail -20 "$GAVEL_CACHE/run/dockerd.log" >&2
exit 1
