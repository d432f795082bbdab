#!/usr/bin/env bash
# Installs what is missing for this checkout: node_modules (npm ci, which builds better-sqlite3) when absent
# or older than package-lock.json. Needs Node 20 or newer.
set -euo pipefail
cd "$(dirname "$0")/.."
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ]; then
  echo "Node.js 20 or newer is required (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[setup] installing dependencies (npm ci; better-sqlite3 builds from source, about a minute)" >&2
  npm ci --no-audit --no-fund --loglevel=error
fi
