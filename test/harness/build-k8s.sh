#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy and
# kubectl at the pinned version from the Go module proxy, helm, and the single-node cluster's
# add-ons CoreDNS and local-path-provisioner, into the cache. Skips what exists.
source "$(dirname "$0")/lib.sh"
# One build at a time: `make -j` may run this from verify (helm for the chart check) and from
# k8s-binaries at once; the second waits, then finds what the first built.
mkdir -p "$GAVEL_CACHE" && exec {lock}>"$GAVEL_CACHE/.build-k8s.lock" && flock "$lock"

build_k8s() {
  local cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl) todo=()
  for c in "${cmds[@]}"; do [ -x "$K8S_BIN/$c" ] || todo+=("$c"); done
  [ ${#todo[@]} -eq 0 ] && return 0
  log "building Kubernetes $K8S_VERSION: ${todo[*]} (cold: about 4 min on 2 cores)"
  local work; work="$(mktemp -d)"
  cp "$HARNESS_DIR/k8s/go.mod" "$HARNESS_DIR/k8s/go.sum" "$HARNESS_DIR/k8s/tools.go" "$work/"
  fetch_staging "$work/staging"
  local minor; minor="$(echo "$K8S_VERSION" | cut -d. -f2)"
  local pkg=k8s.io/component-base/version cpkg=k8s.io/client-go/pkg/version
  local ld="-s -w"
  for p in $pkg $cpkg; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  # One `go build` for all of them: they share most packages, and the linker of one runs
  # beside the compiler and the other linkers (a loop of builds linked one at a time).
  local t0 pkgs=(); t0=$(date +%s)
  for c in "${todo[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  rm -rf "$K8S_BIN.tmp" && mkdir -p "$K8S_BIN.tmp"
  (cd "$work" && CGO_ENABLED=0 GONOSUMDB=k8s.io GOFLAGS=-mod=mod go build -trimpath -ldflags "$ld" -o "$K8S_BIN.tmp/" "${pkgs[@]}")
  log "built ${todo[*]} in $(( $(date +%s) - t0 ))s"
  mkdir -p "$K8S_BIN"
  for c in "${todo[@]}"; do mv "$K8S_BIN.tmp/$c" "$K8S_BIN/$c"; done
  rm -rf "$work" "$K8S_BIN.tmp"
}

# fetch_staging unpacks each staging module's release zip from the Go module proxy into
# DIR/<name>, cached; the wrapper go.mod replaces the staging modules with these folders.
fetch_staging() {
  local dir="$1" src="$GAVEL_CACHE/k8s/src/$STAGING_VERSION" proxy="$(go env GOPROXY)"; proxy="${proxy%%,*}"
  [ "$proxy" = direct ] || [ "$proxy" = off ] || [ -z "$proxy" ] && proxy=https://proxy.golang.org
  mkdir -p "$src"
  for m in $(sed -n 's|^\s*k8s.io/\([a-z-]*\) => ./staging/.*|\1|p' "$HARNESS_DIR/k8s/go.mod"); do
    if [ ! -f "$src/$m/go.mod" ]; then
      log "fetch k8s.io/$m@$STAGING_VERSION"
      local z; z="$(mktemp)"
      curl -fsSL --retry 5 --retry-delay 2 -o "$z" "$proxy/k8s.io/$m/@v/$STAGING_VERSION.zip"
      rm -rf "$src/$m.tmp" && mkdir -p "$src/$m.tmp"
      (cd "$src/$m.tmp" && unzip -q "$z")
      rm -rf "$src/$m" && mv "$src/$m.tmp/k8s.io/$m@$STAGING_VERSION" "$src/$m"
      rm -rf "$src/$m.tmp" "$z"
    fi
  done
  ln -sfn "$src" "$dir"
}

# build_coredns: CoreDNS from the wrapper module in coredns/ (the release its go.mod pins,
# only the plugins the test cluster's Corefile uses).
build_coredns() {
  [ -x "$COREDNS_BIN/coredns" ] && return 0
  grep -q "github.com/coredns/coredns $COREDNS_VERSION" "$HARNESS_DIR/coredns/go.mod" ||
    { log "coredns/go.mod does not pin $COREDNS_VERSION"; exit 1; }
  local t0 work; t0=$(date +%s); work="$(mktemp -d)"
  log "go build coredns $COREDNS_VERSION"
  cp "$HARNESS_DIR/coredns/go.mod" "$HARNESS_DIR/coredns/go.sum" "$HARNESS_DIR/coredns/main.go" "$work/"
  mkdir -p "$COREDNS_BIN"
  (cd "$work" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$COREDNS_BIN/coredns.tmp" .)
  mv "$COREDNS_BIN/coredns.tmp" "$COREDNS_BIN/coredns"
  rm -rf "$work"
  log "built coredns in $(( $(date +%s) - t0 ))s"
}

build_k8s
go_install "$HELM_BIN" helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "1 min"
build_coredns
go_install "$LOCAL_PATH_BIN" local-path-provisioner "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION" "1 min"
log "kubernetes binaries in $K8S_BIN, helm in $HELM_BIN, add-ons in $COREDNS_BIN, $LOCAL_PATH_BIN"
