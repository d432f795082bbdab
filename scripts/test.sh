#!/usr/bin/env bash
# npm test: installs what is missing, then typecheck, lint, and every test (unit and integration) on real
# Redis (REDIS_URL, or a private redis-server the test setup starts), real SQLite files and real workers.
# Ends with the line "N passed, N failed" from vitest's JSON report.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh || exit 1
mkdir -p .tmp
status=0
echo "[test] typecheck" >&2
npx tsc --noEmit || status=1
echo "[test] lint" >&2
npx eslint . || status=1
npx prettier --check . >/dev/null || { npx prettier --list-different . >&2; echo "[test] prettier: files above need 'npm run format'" >&2; status=1; }
echo "[test] vitest" >&2
npx vitest run --reporter=default --reporter=json --outputFile.json=.tmp/vitest.json "$@" || status=1
node -e '
  const fs = require("fs");
  let r = {};
  try { r = JSON.parse(fs.readFileSync(".tmp/vitest.json", "utf8")); } catch {}
  const passed = r.numPassedTests ?? 0, failed = r.numFailedTests ?? 0, skipped = r.numPendingTests ?? 0;
  console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ""));
  if (passed === 0) process.exit(1);
' || status=1
exit $status
