#!/usr/bin/env bash
# A 5 x 3 x 2 sweep writes the same sweep.csv with --jobs 1, --jobs 2 and
# as 3 shards merged (from three folders, or from one); --merge refuses
# shards of another sweep, a missing shard and a duplicate, each with one
# line and exit 2.
set -euo pipefail
kvsim=$(realpath "$1")
src=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib_expect_error.sh
. "$src/tests/golden/lib_expect_error.sh"
# shellcheck source=lib_error_cases.sh
. "$src/tests/golden/lib_error_cases.sh"
grid() {  # NAME MAX_NUM_SEQS_LIST
  cat >"$tmp/$1.json" <<JSON
{ "name": "$1", "scenario": "$src/tests/golden/data/small-synthetic.json",
  "set": { "workload.synthetic.requests": 60 },
  "grid": { "engine.max_num_seqs": [$2], "engine.gpu_memory_utilization": [0.9, 0.5, 0.02],
            "engine.kv_cache_dtype": ["auto", "fp8"] } }
JSON
}
grid g "2, 4, 8, 16, 32"
grid other "2, 4, 8, 16, 64"
"$kvsim" sweep "$tmp/g.json" --jobs 1 --out "$tmp/j1" >/dev/null
"$kvsim" sweep "$tmp/g.json" --jobs 2 --out "$tmp/j2" >/dev/null
[ "$(($(wc -l <"$tmp/j1/sweep.csv") - 1))" = 30 ] || { echo "want 30 rows"; exit 1; }
cmp "$tmp/j1/sweep.csv" "$tmp/j2/sweep.csv" || { echo "--jobs 2 differs from --jobs 1"; exit 1; }
for i in 0 1 2; do
  "$kvsim" sweep "$tmp/g.json" --shard $i/3 --jobs 2 --out "$tmp/shard-$i" >/dev/null
  "$kvsim" sweep "$tmp/g.json" --shard $i/3 --out "$tmp/together" >/dev/null
done
[ -e "$tmp/shard-1/sweep.shard1.json" ] || { echo "a shard has no record"; exit 1; }
[ ! -e "$tmp/j1/sweep.shard0.json" ] || { echo "an unsharded sweep wrote a shard record"; exit 1; }
"$kvsim" sweep --merge "$tmp/shard-2" "$tmp/shard-0" "$tmp/shard-1" --out "$tmp/m" >"$tmp/out"
grep -q "$tmp/m/sweep.csv" "$tmp/out" || { echo "merge does not say where:"; cat "$tmp/out"; exit 1; }
cmp "$tmp/j1/sweep.csv" "$tmp/m/sweep.csv" || { echo "3 shards merged differ from one machine"; exit 1; }
"$kvsim" sweep --merge "$tmp/together" --out "$tmp/m1" >/dev/null
cmp "$tmp/j1/sweep.csv" "$tmp/m1/sweep.csv" || { echo "shards in one folder merge differently"; exit 1; }
(cd "$tmp" && "$kvsim" sweep --merge together >/dev/null)  # default: results/<sweep name>
cmp "$tmp/j1/sweep.csv" "$tmp/results/g/sweep.csv" || { echo "merge's default folder"; exit 1; }

# Shards of another sweep, a missing shard, a duplicate, folders without
# shards, and records whose sweep name would climb out of results/: one
# line each, exit 2, nothing written (errors/sweep_merge.cases).
"$kvsim" sweep "$tmp/other.json" --shard 1/3 --out "$tmp/other-1" >/dev/null
named() { # NAME: $tmp/together as $tmp/named, its records' sweep name NAME
  rm -rf "$tmp/named" && cp -r "$tmp/together" "$tmp/named"
  sed -Ei "s|(\"sweep\":[[:space:]]*)\"g\"|\\1\"$1\"|" "$tmp/named"/sweep.shard*.json
  grep -Fq "\"$1\"," "$tmp/named/sweep.shard0.json" || echo "test setup: record not named '$1'" >&2
  printf '../../named'
}
mkdir -p "$tmp/w/x"
(cd "$tmp/w/x" && run_error_cases "$src/tests/golden/errors/sweep_merge.cases") || exit 1

echo "5x3x2 sweep: --jobs 1, --jobs 2 and 3 merged shards give one sweep.csv"
