#!/usr/bin/env bash
# gavel's CSI driver (csi-hostpath/go.mod) and the NetworkPolicy controller's wrapper
# (network-policies/go.mod) require every module they share at one version: then a cold run
# compiles client-go, api and apimachinery once for the two, not twice (ADR 0046). Fails naming
# each module whose versions differ.
set -euo pipefail
cd "$(dirname "$0")/.."
requires() { awk '/^require \(/{r=1; next} r && /^\)/{r=0} r && NF >= 2 {print $1, $2} /^require [^(]/{print $2, $3}' "$1"; }
diff_="$(awk 'NR==FNR{v[$1]=$2; next} ($1 in v) && v[$1] != $2 {print "  " $1 ": csi-hostpath/go.mod " v[$1] ", network-policies/go.mod " $2}' \
  <(requires csi-hostpath/go.mod) <(requires network-policies/go.mod))"
[ -z "$diff_" ] && exit 0
echo "test/harness/csi-hostpath/go.mod and test/harness/network-policies/go.mod require shared modules at different versions:" >&2
printf '%s\n' "$diff_" >&2
exit 1
