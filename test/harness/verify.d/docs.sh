#!/usr/bin/env bash
# README.md stays a front door under its size limit, and every relative link of README.md, docs/,
# examples/ and judges/ names a file and heading that exist (test/harness/doc-links.ts; run after `make build`),
# and no two ADRs share a number.
set -euo pipefail
cd "$(dirname "$0")/../../.."
node dist/test/harness/doc-links.js

# Each ADR number once: helpers working side by side took the next free number three times on
# one day (0064, 0067, 0069) and had to renumber after landing.
taken="$(ls docs/adr | grep -oE '^[0-9]{4}' | sort | uniq -d)"
if [ -n "$taken" ]; then
  echo "docs/adr: ADR number(s) used twice: $taken (take the next free number: ls docs/adr)" >&2
  ls docs/adr | grep -E "^($(echo $taken | tr ' ' '|'))-" >&2
  exit 1
fi
