#!/usr/bin/env bash
# npm test: installs what is missing, then typecheck, builds the client package (client/), lint, and every test: unit tests, and every integration
# and contract test on both stores (vitest projects "unit", "sqlite", "postgres"), the PostgreSQL tests that
# matter most once more through a private PgBouncer in transaction mode, and the server restart tests (project
# "pgbouncer"), on real Redis (REDIS_URL, or a private redis-server), real PostgreSQL (DATABASE_URL, or a private
# server; one database per test service), real SQLite files and real workers. The test setup starts the servers once per run and stops them at the end.
# Ends with the line "N passed, N failed" from vitest's JSON report (all projects).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh || exit 1
mkdir -p .tmp

# The global setup records the private servers it starts here, and forgets them once it has stopped them;
# whatever is still recorded when this script ends (vitest killed or crashed) is stopped and removed here.
TEST_STATE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/bookorders-test-state-XXXXXX")"
export TEST_STATE_DIR
# stop_recorded RECORD PIDFILE SIGNAL NAME: the server whose directory RECORD names (its PIDFILE there naming a
# process whose command line holds that directory) is sent SIGNAL, waited for, and its directory removed.
stop_recorded() {
  local dir pid
  [[ -s "$TEST_STATE_DIR/$1" ]] || return 0
  dir="$(head -n1 "$TEST_STATE_DIR/$1")"
  [[ -n "$dir" && -d "$dir" ]] || return 0
  pid="$(head -n1 "$dir/$2" 2>/dev/null)"
  if [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir"; then
    echo "[test] stopping leftover $4 (pid $pid, $dir)" >&2
    kill "-$3" "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$dir"
}
cleanup() {
  local pid dir
  stop_recorded pgbouncer.dir pgbouncer.pid TERM pgbouncer # immediate shutdown
  if [[ -s "$TEST_STATE_DIR/redis.pid" ]]; then
    pid="$(head -n1 "$TEST_STATE_DIR/redis.pid")"
    if [[ "$pid" =~ ^[0-9]+$ ]] && grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null; then
      echo "[test] stopping leftover redis-server (pid $pid)" >&2
      kill "$pid" 2>/dev/null
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  fi
  if [[ -s "$TEST_STATE_DIR/redis.dir" ]]; then
    dir="$(head -n1 "$TEST_STATE_DIR/redis.dir")"
    [[ "$dir" == */bookorders-redis-* ]] && rm -rf "$dir"
  fi
  stop_recorded postgres.dir postmaster.pid QUIT PostgreSQL # immediate shutdown
  rm -rf "$TEST_STATE_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

status=0
echo "[test] typecheck" >&2
npx tsc --noEmit || status=1
echo "[test] build the client package (client/dist)" >&2
npx tsc -p client/tsconfig.json || status=1
echo "[test] lint" >&2
npx eslint . || status=1
npx prettier --check . >/dev/null || { npx prettier --list-different . >&2; echo "[test] prettier: files above need 'npm run format'" >&2; status=1; }
echo "[test] vitest" >&2
rm -f .tmp/vitest.json
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
