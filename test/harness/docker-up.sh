#!/usr/bin/env bash
# Starts a Docker engine when none answers. No bridge and no iptables: containers either
# share the host's network (workers, to reach NATS on loopback) or have none (judges).
source "$(dirname "$0")/lib.sh"

if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then exit 0; fi
log "starting dockerd"
# A pid file left by an engine that did not stop (the machine's processes were killed) names a
# pid the kernel may have given to another process since: dockerd then takes it for its
# containerd, waits 15 s for a socket nobody serves and gives up ("timeout waiting for
# containerd to start", a CI run on 2026-12-07). Remove each one whose process is not that daemon.
for pair in /var/run/docker.pid:dockerd /var/run/docker/containerd/containerd.pid:containerd; do
  file="${pair%%:*}" name="${pair##*:}"
  as_root test -f "$file" || continue
  pid="$(as_root cat "$file" 2>/dev/null || true)"
  if [ -n "$pid" ] && { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -q -- "$name"; then continue; fi
  log "removing $file (pid ${pid:-none} is not $name)"
  as_root rm -f "$file"
done
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
