#!/usr/bin/env bash
# What a sweep leaves and says: by default each point keeps only its
# summary.json (--keep-runs: its timeseries.csv and requests.csv too, the
# table and summaries unchanged); off a terminal, --progress gives one
# line per finished point, nothing is printed without it, and --quiet
# silences it (and the result line on stdout, unless runs failed or did
# not fit).
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/g.json" <<JSON
{ "name": "g", "scenario": "$src/tests/golden/data/small-synthetic.json",
  "set": { "workload.synthetic.requests": 60 },
  "grid": { "engine.max_num_seqs": [2, 4, 8, 16, 32], "engine.gpu_memory_utilization": [0.9, 0.5, 0.02],
            "engine.kv_cache_dtype": ["auto", "fp8"] } }
JSON
"$kvsim" sweep "$tmp/g.json" --jobs 2 --out "$tmp/j1" >/dev/null 2>"$tmp/quiet.err"
# Per-point outputs: summary.json only, unless --keep-runs.
[ -e "$tmp/j1/run0000/summary.json" ] || { echo "no summary.json for a point"; exit 1; }
[ ! -e "$tmp/j1/run0000/timeseries.csv" ] && [ ! -e "$tmp/j1/run0000/requests.csv" ] ||
  { echo "per-point CSV written without --keep-runs"; exit 1; }
"$kvsim" sweep "$tmp/g.json" --keep-runs --out "$tmp/keep" >/dev/null
[ -e "$tmp/keep/run0000/timeseries.csv" ] && [ -e "$tmp/keep/run0000/requests.csv" ] ||
  { echo "--keep-runs did not keep the CSV files"; exit 1; }
cmp "$tmp/j1/run0000/summary.json" "$tmp/keep/run0000/summary.json" || { echo "summaries differ"; exit 1; }
cmp "$tmp/j1/sweep.csv" "$tmp/keep/sweep.csv" || { echo "--keep-runs changes the table"; exit 1; }

# Progress off a terminal: none by default, a line per point with --progress.
[ ! -s "$tmp/quiet.err" ] || { echo "progress without --progress:"; cat "$tmp/quiet.err"; exit 1; }
"$kvsim" sweep "$tmp/g.json" --jobs 2 --progress --out "$tmp/p" >/dev/null 2>"$tmp/p.err"
[ "$(wc -l <"$tmp/p.err")" = 30 ] || { echo "want 30 progress lines:"; cat "$tmp/p.err"; exit 1; }
grep -Eq '^kvsim sweep: run00[0-9]{2} done \([0-9]+/30, 0 failed, [0-9.]+ s elapsed, ETA [0-9.]+ s\)$' "$tmp/p.err" ||
  { echo "progress line format:"; cat "$tmp/p.err"; exit 1; }
grep -q '^kvsim sweep: run0004 does not fit (' "$tmp/p.err" || { echo "no-fit point not said"; exit 1; }
tail -1 "$tmp/p.err" | grep -q '(30/30, 0 failed, [0-9.]* s elapsed)$' || { echo "last line"; exit 1; }
"$kvsim" sweep "$tmp/g.json" --progress --quiet --out "$tmp/q" >"$tmp/q.out" 2>"$tmp/q.err"
[ ! -s "$tmp/q.err" ] || { echo "--quiet printed progress"; exit 1; }
# --quiet prints the result line only when something failed or did not fit.
grep -qx "$tmp/q/sweep.csv: 10 runs failed or did not fit (see the error column)" "$tmp/q.out" ||
  { echo "--quiet with runs that do not fit:"; cat "$tmp/q.out"; exit 1; }
cat >"$tmp/ok.json" <<JSON
{ "name": "ok", "scenario": "$src/tests/golden/data/small-synthetic.json",
  "set": { "workload.synthetic.requests": 20 }, "grid": { "engine.max_num_seqs": [4, 8] } }
JSON
"$kvsim" sweep "$tmp/ok.json" --quiet --out "$tmp/ok" >"$tmp/ok.out"
[ -e "$tmp/ok/sweep.csv" ] && [ ! -s "$tmp/ok.out" ] ||
  { echo "--quiet with nothing failed printed:"; cat "$tmp/ok.out"; exit 1; }
"$kvsim" sweep "$tmp/ok.json" --out "$tmp/ok2" | grep -qx "$tmp/ok2/sweep.csv: 0 runs failed or did not fit (see the error column)" ||
  { echo "without --quiet the result line is printed"; exit 1; }
"$kvsim" sweep --help | grep -q -- '--keep-runs' || { echo "--help lacks --keep-runs"; exit 1; }

# On a terminal (script(1) gives one): a line redrawn in place, erased at
# the end; for plan below the points' lines.
if command -v script >/dev/null; then
  script -qec "'$kvsim' sweep '$tmp/g.json' --out '$tmp/t'" /dev/null >"$tmp/tty.out"
  grep -q $'\r\033\[Kkvsim sweep: 30/30 done, 0 failed, [0-9.]* s elapsed\r\033\[K' "$tmp/tty.out" ||
    { echo "no redrawn progress line on a terminal:"; cat -v "$tmp/tty.out"; exit 1; }
  script -qec "'$kvsim' plan '$src/tests/golden/data/small-synthetic.json' --slo ttft_p99=2s --search util" \
    /dev/null >"$tmp/plan.out"
  grep -q $'elapsed\r\033\[K  engine.gpu_memory_utilization = 0.3 .* meets' "$tmp/plan.out" &&
    grep -q $'^\r\033\[Kkvsim plan: 2 done, 0 failed, [0-9.]* s elapsed\r\033\[KLowest util' "$tmp/plan.out" ||
    { echo "plan: no progress line below the points:"; cat -v "$tmp/plan.out"; exit 1; }
fi
echo "sweep outputs: summaries by default, --keep-runs, --progress lines"
