#!/usr/bin/env bash
# kvsim sweep: a 2 x 2 grid gives four rows in run order whatever --jobs;
# two shards cover the grid; a bad sweep file (unknown key, empty axis, zip
# lists of unequal length) is one line and exit 2; zip mode pairs values; a
# sweep whose runs fail exits 1 unless --allow-failures; a sweep that cannot
# write its table removes its run folders.
# kvsim plan: the rate found meets the SLO and a rate one tolerance step
# above it does not.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
sweeps=$(mktemp -d)
trap 'rm -rf "$tmp" "$sweeps"' EXIT
# shellcheck source=lib_expect_error.sh
. "$src/tests/golden/lib_expect_error.sh"
# shellcheck source=lib_error_cases.sh
. "$src/tests/golden/lib_error_cases.sh"
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
cp "$src/tests/golden/data/small-synthetic.json" "$tmp/"
# A bad sweep file (unknown key, empty axis, zip lists of unequal length)
# is one line and exit 2 (errors/sweep_plan.cases).
cp "$src/tests/golden/data/small-synthetic.json" "$sweeps/"
sweep_file() { printf '{ "scenario": "small-synthetic.json", %s }\n' "$1" >"$sweeps/bad.json" && printf '%s' "$sweeps/bad.json"; }
run_error_cases "$src/tests/golden/errors/sweep_plan.cases"

cat >"$tmp/zip.json" <<'JSON'
{ "scenario": "small-synthetic.json", "mode": "zip", "set": { "workload.synthetic.requests": 20 },
  "grid": { "hardware.gpu": ["l4", "h100-sxm"], "engine.max_num_seqs": [8, 16] } }
JSON
"$kvsim" sweep "$tmp/zip.json" --out "$tmp/zip" >/dev/null
[ "$(cut -d, -f1-3 "$tmp/zip/sweep.csv" | tr '\n' ' ')" = "run,hardware.gpu,engine.max_num_seqs run0000,l4,8 run0001,h100-sxm,16 " ] ||
  { echo "zip rows wrong:"; cat "$tmp/zip/sweep.csv"; exit 1; }

# A point that does not fit is a row (fits=false), not a failure; a point
# that fails is, and the exit code says so.
cat >"$tmp/fail.json" <<'JSON'
{ "scenario": "small-synthetic.json",
  "grid": { "engine.gpu_memory_utilization": [0.9, 0.02], "workload.synthetic.requests": [20, -1] } }
JSON
rc=0; "$kvsim" sweep "$tmp/fail.json" --jobs 2 --out "$tmp/f1" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc = 1 ] || { echo "a sweep with failed runs exits $rc, want 1"; exit 1; }
grep -q 'runs failed' "$tmp/err" || { echo "no failure line"; cat "$tmp/err"; exit 1; }
awk -F, 'NR == 4 && $4 != "false" { exit 1 }' "$tmp/f1/sweep.csv" || { echo "no-fit row not fits=false"; exit 1; }
[ "$(ls -d "$tmp"/f1/run* | wc -l)" = 1 ] || { echo "failed runs left folders:"; ls "$tmp/f1"; exit 1; }
"$kvsim" sweep "$tmp/fail.json" --allow-failures --out "$tmp/f2" >/dev/null 2>&1 ||
  { echo "--allow-failures does not exit 0"; exit 1; }
# The table cannot be written (a folder in its place): nothing is left.
mkdir -p "$tmp/f3/sweep.csv"
if "$kvsim" sweep "$tmp/zip.json" --out "$tmp/f3" >/dev/null 2>"$tmp/err"; then echo "table failure exits 0"; exit 1; fi
[ "$(ls "$tmp/f3")" = "sweep.csv" ] || { echo "a sweep without its table left:"; ls "$tmp/f3"; exit 1; }

scen="$src/tests/golden/data/small-synthetic.json"
"$kvsim" plan "$scen" --slo ttft_p99=0.5s --tolerance 0.05 --json --quiet >"$tmp/plan.json"
best=$(awk -F: '/"best"/ { gsub(/[ ,\t]/, "", $2); print $2 }' "$tmp/plan.json")
awk -v b="$best" 'BEGIN { exit !(b > 0) }' || { echo "no rate found"; exit 1; }
# A search point keeps the workload's duration: the run at a rate r has
# ceil(requests x r / the scenario's rate) requests (never fewer; study/rate.c), as plan ran it.
read -r n0 r0 < <(python3 -c 'import json, sys; w = json.load(open(sys.argv[1]))["workload"]["synthetic"]
print(w["requests"], w["arrival"]["rate"])' "$scen")
p99_at() {
  local n; n=$(awk -v n="$n0" -v r0="$r0" -v r="$1" 'BEGIN { x = n * r / r0; c = int(x); if (c < x) c++; if (c < n) c = n; printf "%d", c }')
  "$kvsim" run "$scen" --set workload.synthetic.arrival.rate="$1" --set workload.synthetic.requests="$n" \
    --out "$tmp/r" --summary --quiet |
    awk '/"ttft_s"/ { t = 1 } t && !done && /"p99"/ { gsub(/[ ,\t]/, "", $0); sub(/.*:/, "", $0); v = $0; done = 1 }
         END { print v }'  # read to the end: an early exit would SIGPIPE kvsim
}
at=$(p99_at "$best")
above=$(p99_at "$(awk -v b="$best" 'BEGIN { print b * 1.12 }')")
echo "plan: best rate $best req/s: p99 TTFT $at s; 12% above: $above s"
awk -v a="$at" -v u="$above" 'BEGIN { exit !(a <= 0.5 && u > 0.5) }' || { echo "not the edge of the SLO"; exit 1; }
