#!/usr/bin/env bash
# A sweep spread over GNU parallel the way a user spreads it over machines
# (kvsim sweep --shard {}/4, one folder per shard), then merged: the table
# is the one a single machine writes. Skipped when GNU parallel is absent
# (scripts/deps.sh --test installs it).
set -euo pipefail
kvsim=$1
src=$2
if ! command -v parallel >/dev/null || ! parallel --version 2>/dev/null | grep -q 'GNU parallel'; then
  echo "GNU parallel is not installed (scripts/deps.sh --test installs it): skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sw="$src/tests/golden/data/small-sweep.json"
"$kvsim" sweep "$sw" --jobs 2 --out "$tmp/one" >/dev/null
parallel -j 2 "$kvsim" sweep "$sw" --quiet --shard {}/4 --out "$tmp/results/shard-{}" ::: 0 1 2 3 >/dev/null
"$kvsim" sweep --merge "$tmp"/results/shard-* --out "$tmp/merged" >/dev/null
cmp "$tmp/one/sweep.csv" "$tmp/merged/sweep.csv" || { echo "merged table differs"; exit 1; }
echo "GNU parallel: 4 shards merged into the one-machine sweep.csv"
