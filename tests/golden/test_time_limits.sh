#!/usr/bin/env bash
# Times and scales past what the clock holds, which used to crash, give
# wrong numbers or run for ever, are one error line, exit 2, no output:
# - output.max_time_s and admission.max_wait_s past int64 nanoseconds (an
#   assertion in the event queue; a release build reported a run of
#   -9.2e9 s, or every request rejected as waiting too long);
# - engine.quant_step_factor 1e308 (a run without end) and 0 (silently 1);
# - an arrival at 9e9 s plus a long max_wait_s (the clock would wrap);
# - a synthetic stream that passes the horizon before its count (10,000
#   requests at 1e-6/s simulated 8,907 and exited 0);
# - a scenario or study name that climbs out of results/;
# - hardware.gpu_memory_gib 0 or 1e-310 and an SLO target of 0 (each
#   silently meant 'not given');
# - plan and compare --tolerance below the spacing of doubles (spun);
# - a closed loop past the horizon or ended by duration_s, and bursts far
#   apart with nothing between (each ran for ever).
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/tests/golden/data/small-synthetic.json"

expect_error() {  # WORDS CMD ARGS...
  words=$1; shift
  rc=0; timeout 60 "$kvsim" "$@" 2>"$tmp/err" >/dev/null || rc=$?
  [ $rc = 2 ] || { echo "$*: exit $rc, want 2"; cat "$tmp/err"; exit 1; }
  [ "$(wc -l <"$tmp/err")" = 1 ] || { echo "$*: not one line:"; cat "$tmp/err"; exit 1; }
  grep -qF -- "$words" "$tmp/err" || { echo "$*: error does not say '$words':"; cat "$tmp/err"; exit 1; }
  [ ! -e "$tmp/out" ] || { echo "$*: left $tmp/out behind"; exit 1; }
}
run() { expect_error "$1" run "$scen" --quiet --no-band --no-verify-advice --out "$tmp/out" "${@:2}"; }

run 'output.max_time_s: 1e+10 is outside [0, 9e+09]' --set output.max_time_s=1e10
run 'admission.max_wait_s: 9.3e+09 is outside [0, 9e+09]' --set admission.max_wait_s=9.3e9
run 'quant_step_factor: 1e+308 is outside [0.01, 100]' --set engine.quant_step_factor=1e308
run 'quant_step_factor: 0 is outside [0.01, 100]' --set engine.quant_step_factor=0
run 'arrivals passed 9e+09 s (285 years) after' \
  --set workload.synthetic.arrival.rate=1e-6 --set workload.synthetic.requests=10000
run "name may not contain '/'" --set 'name="../../escaped"'
run "name may not contain '/'" --set 'name="/abs"'
run 'name may not contain control characters' --set 'name="a\nb"'
run "name '..' is not a folder name" --set 'name=".."'
# Values that used to mean "unset" when written: an error once written.
run 'hardware.gpu_memory_gib: 1e-310 GiB is outside [1/1024, 4096]' --set hardware.gpu_memory_gib=1e-310
run 'hardware.gpu_memory_gib: 0 GiB is outside [1/1024, 4096]' --set hardware.gpu_memory_gib=0
run 'slo.ttft_p99_s: 0 must be > 0 (leave the key out for no target)' --set slo.ttft_p99_s=0
[ ! -e "$src/escaped+"* ] || { echo "a name escaped results/"; exit 1; }

run 'arrivals passed 9e+09 s (285 years) after 10 of the 12 requests' \
  --set 'workload.synthetic.arrival={"process": "closed_loop", "clients": 1, "think_s": 9e8}' \
  --set workload.synthetic.requests=12

# A closed loop that ends by duration_s, and bursts 1e8 s apart with no
# traffic between: each once ran for ever (the first sampled an empty
# engine, the second thinned through every idle second).
sed 's/"requests": *[0-9]*/"duration_s": 30/' "$scen" >"$tmp/cl.json"
grep -q '"duration_s": 30' "$tmp/cl.json" || { echo "test setup: no requests key to replace"; exit 1; }
timeout 60 "$kvsim" run "$tmp/cl.json" --quiet --no-band --no-verify-advice --out "$tmp/cl" \
  --set 'workload.synthetic.arrival={"process": "closed_loop", "clients": 2, "think_s": 1}'
grep -q '"finished":' "$tmp/cl/summary.json" || { echo "closed loop with duration_s: no summary"; exit 1; }
timeout 60 "$kvsim" run "$scen" --quiet --no-band --no-verify-advice --out "$tmp/bu" --set workload.synthetic.requests=40 \
  --set 'workload.synthetic.arrival={"process": "bursts", "rate": 0, "burst_rate": 1, "burst_s": 1, "period_s": 1e8}'
grep -q '"finished":	40' "$tmp/bu/summary.json" || { echo "bursts 1e8 s apart: not all 40 finished"; exit 1; }

# Just inside the horizon the same run works: the ranges are not too tight.
timeout 60 "$kvsim" run "$scen" --quiet --no-band --no-verify-advice --out "$tmp/ok" \
  --set output.max_time_s=9e9 --set admission.max_wait_s=9e9 --set engine.quant_step_factor=100
grep -q '"finished":' "$tmp/ok/summary.json" || { echo "in-range run wrote no summary"; exit 1; }

# An arrival at 9e9 s with a wait of 9e8 s: the deadline would wrap.
printf 'arrival_s,prompt_tokens,output_tokens\n0.000,100,4\n9000000000.000,100,4\n' >"$tmp/far.csv"
cat >"$tmp/far.json" <<'JSON'
{ "name": "far", "model": "llama-3.2-1b", "hardware": { "gpu": "l4" },
  "engine": { "max_model_len": 4096 }, "admission": { "max_wait_s": 9e8 }, "workload": { "trace": "far.csv" } }
JSON
expect_error 'the simulated clock would pass 9.22e+09 s (int64 nanoseconds) at t = 9e+09 s' \
  run "$tmp/far.json" --quiet --no-band --no-verify-advice --out "$tmp/out"

expect_error '--tolerance: 1e-17 must be in [1e-06, 1)' \
  plan "$scen" --slo ttft_p99=2s --no-range --quiet --tolerance 1e-17
expect_error '--tolerance: 1e-17 must be in [1e-06, 1)' \
  compare "$src/tests/golden/compare/tiny-study.json" --out "$tmp/out" --quiet --tolerance 1e-17
sed 's/"name": *"[^"]*"/"name": "..\/up"/' "$src/tests/golden/compare/tiny-study.json" >"$tmp/up.json"
grep -q '"\.\./up"' "$tmp/up.json" || { echo "test setup: the study has no name to replace"; exit 1; }
expect_error "name may not contain '/'" compare "$tmp/up.json" --out "$tmp/out" --quiet
echo "time limits: ok"
