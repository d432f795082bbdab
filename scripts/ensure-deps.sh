#!/usr/bin/env bash
# Installs what is missing for this checkout: node_modules, from package-lock.json, when absent or older than
# the lock file (better-sqlite3 builds from source). Needs Node 20 or newer.
# `npm install --no-save` rather than `npm ci`: npm 11's ci refuses a lock file whose platform-specific optional
# packages (msgpackr-extract's builds for other systems) the registry here does not list, which npm itself wrote.
set -euo pipefail
cd "$(dirname "$0")/.."
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ]; then
  echo "Node.js 20 or newer is required (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[setup] installing dependencies (better-sqlite3 builds from source: 2 to 4 minutes on 2 cores)" >&2
  npm install --no-save --no-audit --no-fund --loglevel=error
fi
