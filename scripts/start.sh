#!/usr/bin/env bash
# npm start: installs what is missing, then runs Redis (REDIS_URL or private), web, worker and clock with demo data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
exec node --import tsx scripts/start.ts
