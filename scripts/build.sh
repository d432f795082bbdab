#!/usr/bin/env bash
# npm run build: compiles src (with the client package's source that `call` uses), workers, jobs and the scripts `npm start` runs to dist/ (tsc, with source maps),
# and copies beside them the JSON files modules read at run time. It builds into a fresh folder and swaps it in,
# so a process starting from dist/ never loads half a build; dist/.built marks a finished build.
#   bash scripts/build.sh [--if-stale]   (--if-stale: only when dist/ is missing or older than a source file)
set -euo pipefail
cd "$(dirname "$0")/.."
stale() {
  [ ! -f dist/.built ] ||
    [ -n "$(find src client/src workers jobs scripts package.json tsconfig.json tsconfig.build.json -newer dist/.built -print -quit)" ]
}
if [ "${1:-}" = --if-stale ] && ! stale; then exit 0; fi
# One build at a time (npm start and a test may both find dist/ stale); the second then finds it fresh.
exec 9<tsconfig.build.json
if command -v flock >/dev/null; then flock 9; fi
if [ "${1:-}" = --if-stale ] && ! stale; then exit 0; fi
echo "[build] compiling to dist/" >&2
next="$(mktemp -d dist.next-XXXXXX)"
chmod 755 "$next"
trap 'rm -rf "$next"' EXIT
# Stamped before compiling: a source saved during the build leaves dist/ stale, as it is.
touch "$next/.built"
npx tsc -p tsconfig.build.json --outDir "$next"
while IFS= read -r file; do
  mkdir -p "$next/$(dirname "$file")"
  cp "$file" "$next/$file"
done < <(find src -name '*.json'; echo scripts/demo-catalog.json)
old="$(mktemp -d dist.old-XXXXXX)"
if [ -d dist ]; then mv dist "$old/"; fi
mv "$next" dist
rm -rf "$old"
