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
# The error cases are data (errors/time_limits.cases); this script writes
# their fixtures and checks what runs.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/tests/golden/data/small-synthetic.json"

source "$src/tests/golden/lib_expect_error.sh"
source "$src/tests/golden/lib_error_cases.sh"
q=(run "$scen" --quiet --no-band --no-verify-advice --out "$tmp/o")

# Fixtures: an arrival at 9e9 s with a wait of 9e8 s (the deadline would
# wrap), and a study named ../up.
printf 'arrival_s,prompt_tokens,output_tokens\n0.000,100,4\n9000000000.000,100,4\n' >"$tmp/far.csv"
cat >"$tmp/far.json" <<'JSON'
{ "name": "far", "model": "llama-3.2-1b", "hardware": { "gpu": "l4" },
  "engine": { "max_model_len": 4096 }, "admission": { "max_wait_s": 9e8 }, "workload": { "trace": "far.csv" } }
JSON
sed 's/"name": *"[^"]*"/"name": "..\/up"/' "$src/tests/golden/compare/tiny-study.json" >"$tmp/up.json"
grep -q '"\.\./up"' "$tmp/up.json" || { echo "test setup: the study has no name to replace"; exit 1; }

run_error_cases "$src/tests/golden/errors/time_limits.cases"
[ ! -e "$src/escaped+"* ] || { echo "a name escaped results/"; exit 1; }

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

echo "time limits: ok"
