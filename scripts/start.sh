#!/usr/bin/env bash
# npm start: installs what is missing, compiles to dist/ when it is missing or stale, then runs Redis (REDIS_URL
# or private), web, worker and clock with demo data, all as plain Node on the compiled JavaScript.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
bash scripts/build.sh --if-stale
exec node --enable-source-maps dist/scripts/start.js
