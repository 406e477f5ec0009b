#!/usr/bin/env bash
# Bad input is one line on stderr naming the flag (or file and key) and the
# bad value, exit 2, nothing on stdout and no output written: flags a
# command does not use, an --out that would land on an input, flags named
# as typed, labels and SLOs given twice, empty paths.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$(realpath "$1")
src=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib_expect_error.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib_error_cases.sh"

# The error cases are data (errors/review_flags.cases); here, their
# fixtures and what must still work. Two shards, and a plain merge of them.
sw="$src/tests/golden/data/small-sweep.json"
for i in 0 1; do
  "$kvsim" sweep "$sw" --quiet --shard $i/2 --out "$tmp/sh$i" >/dev/null || fail "shard $i/2 did not run"
done
"$kvsim" sweep --merge "$tmp/sh0" "$tmp/sh1" --out "$tmp/merged" >/dev/null || fail "a plain --merge was refused"
[ -e "$tmp/merged/sweep.csv" ] || fail "--merge wrote no sweep.csv"

# A study whose label has a newline.
sed 's/"label": "L4 util 0.1"/"label": "a\\nb|c"/' "$src/tests/golden/compare/tiny-study.json" >"$tmp/nl-study.json"
grep -q 'a\\nb|c' "$tmp/nl-study.json" || fail "the study with a newline label was not made"

# A binary trace, and a scenario whose workload is a trace; --seed for a
# synthetic spec is taken.
printf '\0' >"$tmp/only0.jsonl"
ep="$src/tests/golden/data/ep-lockstep.csv"
printf '{"name": "t", "workload": {"trace": "%s"}}\n' "$ep" >"$tmp/trace-scen.json"
"$kvsim" trace stats "$src/tests/golden/data/small-synthetic.json" --seed 3 >/dev/null || fail "--seed for a synthetic spec was refused"

data="$src/tests/golden/data"
cd "$tmp" || fail "cd"

run_error_cases "$src/tests/golden/errors/review_flags.cases"

# sweep's result and failure lines said "1 runs failed".
cat >"$tmp/one-fail.json" <<JSON
{ "scenario": "$data/small-synthetic.json",
  "grid": { "engine.gpu_memory_utilization": [0.9], "workload.synthetic.requests": [20, -1] } }
JSON
rc=0; "$kvsim" sweep "$tmp/one-fail.json" --out "$tmp/one-fail" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] || fail "a sweep with one failed run exited $rc, want 1: $(cat "$tmp/err")"
grep -qx "$tmp/one-fail/sweep.csv: 1 run failed or did not fit (see the error column)" "$tmp/out" \
  || fail "the result line for one failure: $(cat "$tmp/out")"
grep -qx "kvsim sweep: error: 1 run failed (see the error column; --allow-failures to exit 0)" "$tmp/err" \
  || fail "the error line for one failure: $(cat "$tmp/err")"
cat >"$tmp/two-fail.json" <<JSON
{ "scenario": "$data/small-synthetic.json",
  "grid": { "engine.gpu_memory_utilization": [0.9, 0.8], "workload.synthetic.requests": [-1] } }
JSON
rc=0; "$kvsim" sweep "$tmp/two-fail.json" --out "$tmp/two-fail" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] || fail "a sweep with two failed runs exited $rc, want 1"
grep -qx "kvsim sweep: error: 2 runs failed (see the error column; --allow-failures to exit 0)" "$tmp/err" \
  || fail "the error line for two failures: $(cat "$tmp/err")"

echo "ok: review flags"
