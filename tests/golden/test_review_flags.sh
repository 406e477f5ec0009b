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

# sweep --merge takes the shards' folders and --out only: the run flags
# --report, --allow-failures, --progress and --quiet were taken and
# ignored (--quiet still printed "joined from N folders"), like --jobs 1
# once was.
sw="$src/tests/golden/data/small-sweep.json"
for i in 0 1; do
  "$kvsim" sweep "$sw" --quiet --shard $i/2 --out "$tmp/sh$i" >/dev/null || fail "shard $i/2 did not run"
done
for f in --report --allow-failures --progress --quiet --keep-runs; do
  expect_error "^kvsim sweep: error: --merge: takes the shards' folders and --out only, not $f$" \
    sweep --merge "$tmp/sh0" "$tmp/sh1" $f --out "$tmp/merged"
done
[ ! -e "$tmp/merged" ] || fail "a refused --merge wrote outputs"
# An --out that is one of the shard folders put the whole sweep's table in
# one machine's folder.
expect_error "^kvsim sweep: error: --out: .*/sh0 is the shard folder .*/sh0 \(the merged table needs a folder of its own\)$" \
  sweep --merge "$tmp/sh0" "$tmp/sh1" --out "$tmp/sh0"
expect_error "^kvsim sweep: error: --out: .*/sh1/ is the shard folder .*/sh1 " \
  sweep --merge "$tmp/sh0" "$tmp/sh1" --out "$tmp/sh1/"
[ ! -e "$tmp/sh0/sweep.csv" ] && [ ! -e "$tmp/sh1/sweep.csv" ] || fail "a refused --merge wrote into a shard folder"
"$kvsim" sweep --merge "$tmp/sh0" "$tmp/sh1" --out "$tmp/merged" >/dev/null || fail "a plain --merge was refused"
[ -e "$tmp/merged/sweep.csv" ] || fail "--merge wrote no sweep.csv"

# calc's divisibility errors name the TP flag as typed (--tp-size was
# reported as --tensor-parallel-size, --num-shard with a scenario key).
expect_error "^kvsim calc: error: --tp-size: 3 does not divide the model's 32 attention heads$" \
  calc --engine sglang --tp-size 3
expect_error "^kvsim calc: error: --num-shard: 3 does not divide the model's 32 attention heads$" \
  calc --engine tgi --num-shard 3
expect_error "^kvsim calc: error: --tensor-parallel-size: 3 does not divide the model's 32 attention heads$" \
  calc --engine vllm-v1 --tensor-parallel-size 3

# A compare label with a newline broke REPORT.md's table and the terminal's.
sed 's/"label": "L4 util 0.1"/"label": "a\\nb|c"/' "$src/tests/golden/compare/tiny-study.json" >"$tmp/nl-study.json"
grep -q 'a\\nb|c' "$tmp/nl-study.json" || fail "the study with a newline label was not made"
expect_error "^kvsim compare: error: .*nl-study.json: candidates\[2\]\.label: control character 0x0a at byte 1 \(a label is one line of the table\)$" \
  compare "$tmp/nl-study.json" --out "$tmp/nl-cmp"
[ ! -e "$tmp/nl-cmp" ] || fail "a refused compare wrote outputs"

# trace: a file from the command line has no scenario key ("workload.trace:
# only0.jsonl:1: ..."), --time-scale out of range was "workload.time_scale",
# --lru-blocks '1,' was read as 1, and --seed for a trace was ignored.
printf '\0' >"$tmp/only0.jsonl"
ep="$src/tests/golden/data/ep-lockstep.csv"
for fmt in auto kvsim; do
  expect_error "^kvsim trace stats: error: $tmp/only0.jsonl:1: a NUL byte \(a binary file\?\)$" \
    trace stats "$tmp/only0.jsonl" --format $fmt
done
expect_error "^kvsim trace stats: error: --time-scale: bad value 1e\+30 \(expected > 0 and <= 1e\+06\)$" \
  trace stats "$ep" --time-scale 1e30
expect_error "^kvsim trace convert: error: --time-scale: bad value 1e\+30 " \
  trace convert "$ep" --time-scale 1e30 --out "$tmp/ts.csv"
[ ! -e "$tmp/ts.csv" ] || fail "a refused --time-scale wrote its output"
for v in '1,' '1,2,'; do
  expect_error "^kvsim trace stats: error: --lru-blocks: bad value '$v' " \
    trace stats "$ep" --prefix-block-size 16 --lru-blocks "$v"
done
expect_error "^kvsim trace stats: error: --seed: applies to synthetic specs only \(.*ep-lockstep.csv is a trace file\)$" \
  trace stats "$ep" --seed 3
printf '{"name": "t", "workload": {"trace": "%s"}}\n' "$ep" >"$tmp/trace-scen.json"
expect_error "^kvsim trace gen: error: --seed: applies to synthetic specs only \(.*trace-scen.json's workload is a trace\)$" \
  trace gen "$tmp/trace-scen.json" --seed 3 --out "$tmp/gen.csv"
[ ! -e "$tmp/gen.csv" ] || fail "a refused --seed wrote its output"
"$kvsim" trace stats "$src/tests/golden/data/small-synthetic.json" --seed 3 >/dev/null || fail "--seed for a synthetic spec was refused"

# An empty --out named no folder and failed late ("--merge: : cannot
# create folder", ": cannot rename into place"), after the work.
data="$src/tests/golden/data"
mkdir -p "$tmp/empty" && cd "$tmp/empty" || fail "cd"
expect_error "^kvsim run: error: --out: empty path$" run "$data/small-synthetic.json" --out ''
expect_error "^kvsim sweep: error: --out: empty path$" sweep "$sw" --out=
expect_error "^kvsim sweep: error: --out: empty path$" sweep --merge "$tmp/sh0" "$tmp/sh1" --out ''
expect_error "^kvsim compare: error: --out: empty path$" compare "$src/tests/golden/compare/tiny-study.json" --out ''
expect_error "^kvsim trace convert: error: --out: empty path$" trace convert "$ep" --out ''
expect_error "^kvsim trace gen: error: --out: empty path$" trace gen "$data/small-synthetic.json" --out ''
expect_error "^kvsim calibrate: error: --out: empty path$" calibrate --gpu l4 --silicon "$src/tests/golden/fidelity/silicon.csv" --out ''
expect_error "^kvsim validate: error: --startup: empty path$" validate --startup ''
[ -z "$(ls -A "$tmp/empty")" ] || fail "a refused empty --out wrote: $(ls -A "$tmp/empty")"
cd "$tmp" || fail "cd"

# plan --slo with one target twice was taken (the stricter limit counted).
expect_error "^kvsim plan: error: --slo: ttft_p99 is given twice$" \
  plan "$data/small-synthetic.json" --slo ttft_p99=1s,ttft_p99=2s

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
