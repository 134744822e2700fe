#!/usr/bin/env bash
# Installs the Debian packages gavel's harness needs (NATS, Docker, etcd, containerd,
# runc, CNI plugins, debootstrap, gcc for the static pause and gavel-launch, chromium for the web view's e2e test, pip for
# the Python example's pinned PyPI packages, ADR 0063) and the npm
# dependencies. Idempotent.
source "$(dirname "$0")/lib.sh"

apt_install ca-certificates curl unzip git make bc openssl \
  nats-server docker.io etcd-server containerd runc \
  containernetworking-plugins iptables conntrack iproute2 socat util-linux mount \
  debootstrap gcc libc6-dev python3-pip \
  chromium

command -v go >/dev/null || { log "go is required to build Kubernetes (machine image ships it)"; exit 1; }
command -v node >/dev/null || { log "node >= 20 is required"; exit 1; }

# npm ci only when the lock file changed since the last install.
cd "$REPO_DIR"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
