#!/usr/bin/env bash
# kvsim sweep: a 2 x 2 grid gives four rows in run order whatever --jobs;
# two shards cover the grid; a bad sweep file is one line and exit 2.
# kvsim plan: the rate found meets the SLO and a rate one tolerance step
# above it does not.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sw="$src/tests/golden/data/small-sweep.json"
"$kvsim" sweep "$sw" --jobs 1 --out "$tmp/a" >/dev/null
"$kvsim" sweep "$sw" --jobs 3 --out "$tmp/b" >/dev/null
cmp "$tmp/a/sweep.csv" "$tmp/b/sweep.csv" || { echo "sweep table depends on --jobs"; exit 1; }
rows=$(($(wc -l <"$tmp/a/sweep.csv") - 1))
[ "$rows" = 4 ] || { echo "sweep has $rows rows, want 4"; exit 1; }
head -1 "$tmp/a/sweep.csv" | grep -q '^run,engine.kv_cache_dtype,engine.max_num_seqs,fits,' || { echo "bad header"; exit 1; }
awk -F, 'NR == 2 && !($2 == "auto" && $3 == 8) { exit 1 } NR == 5 && !($2 == "fp8" && $3 == 32) { exit 1 }' \
  "$tmp/a/sweep.csv" || { echo "rows not in grid order"; exit 1; }
"$kvsim" sweep "$sw" --shard 0/2 --out "$tmp/c" >/dev/null
"$kvsim" sweep "$sw" --shard 1/2 --out "$tmp/c" >/dev/null
n0=$(($(wc -l <"$tmp/c/sweep.shard0.csv") - 1))
n1=$(($(wc -l <"$tmp/c/sweep.shard1.csv") - 1))
[ $((n0 + n1)) = 4 ] || { echo "shards cover $((n0 + n1)) runs, want 4"; exit 1; }
echo '{ "scenario": "x.json", "grid": {} }' >"$tmp/bad.json"
if "$kvsim" sweep "$tmp/bad.json" 2>"$tmp/err"; then echo "bad sweep accepted"; exit 1; fi
[ "$(wc -l <"$tmp/err")" = 1 ] || { echo "error is not one line"; cat "$tmp/err"; exit 1; }

scen="$src/tests/golden/data/small-synthetic.json"
"$kvsim" plan "$scen" --slo ttft_p99=0.5s --tolerance 0.05 --json --quiet >"$tmp/plan.json"
best=$(awk -F: '/"best"/ { gsub(/[ ,\t]/, "", $2); print $2 }' "$tmp/plan.json")
awk -v b="$best" 'BEGIN { exit !(b > 0) }' || { echo "no rate found"; exit 1; }
p99_at() {
  "$kvsim" run "$scen" --set workload.synthetic.arrival.rate="$1" --out "$tmp/r" --summary --quiet |
    awk '/"ttft_s"/ { t = 1 } t && !done && /"p99"/ { gsub(/[ ,\t]/, "", $0); sub(/.*:/, "", $0); v = $0; done = 1 }
         END { print v }'  # read to the end: an early exit would SIGPIPE kvsim
}
at=$(p99_at "$best")
above=$(p99_at "$(awk -v b="$best" 'BEGIN { print b * 1.12 }')")
echo "plan: best rate $best req/s: p99 TTFT $at s; 12% above: $above s"
awk -v a="$at" -v u="$above" 'BEGIN { exit !(a <= 0.5 && u > 0.5) }' || { echo "not the edge of the SLO"; exit 1; }
