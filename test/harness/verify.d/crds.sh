#!/usr/bin/env bash
# crds/*.yaml are rendered from src/api/crds.ts: fail when they differ (run after `make build`).
set -euo pipefail
cd "$(dirname "$0")/../../.."
node dist/src/api/render-crds.js --check crds
