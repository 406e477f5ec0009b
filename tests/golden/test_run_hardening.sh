#!/usr/bin/env bash
# Bad inputs that used to crash or run away:
# - a trace with an idle gap of 9e9 s writes a handful of rows, not one per
#   idle second (engine.h KVSIM_IDLE_TICKS_MAX), and a gap of 1,000 ticks
#   or fewer is still sampled every tick;
# - tensor_parallel_size 0 with expert_parallel_size 2 is an error (it died
#   of SIGFPE), and gpu_memory_gib 1e12 an error naming key and range;
# - a run stopped by SIGTERM leaves no *.tmp.PID files and exits non-zero.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib_expect_error.sh
. "$src/tests/golden/lib_expect_error.sh"
# shellcheck source=lib_error_cases.sh
. "$src/tests/golden/lib_error_cases.sh"
cat >"$tmp/gap.json" <<'JSON'
{ "name": "gap", "model": "llama-3.2-1b", "hardware": { "gpu": "l4" },
  "engine": { "max_model_len": 4096 }, "workload": { "trace": "gap.csv" } }
JSON
printf 'arrival_s,prompt_tokens,output_tokens\n0.000,100,4\n9000000000.000,100,4\n' >"$tmp/gap.csv"
# Bounded in time: before the rule this wrote ~650 GB.
timeout 120 "$kvsim" run "$tmp/gap.json" --out "$tmp/gap" --quiet
rows=$(($(wc -l <"$tmp/gap/timeseries.csv") - 1))
[ "$rows" -le 10 ] || { echo "idle gap wrote $rows rows"; exit 1; }
grep -q '^8999999999.000000,0,' "$tmp/gap/timeseries.csv" || { echo "no closing row of the idle stretch"; exit 1; }
grep -q '"finished":	2' "$tmp/gap/summary.json" || { echo "both requests finish"; exit 1; }
printf 'arrival_s,prompt_tokens,output_tokens\n0.000,100,4\n1001.500,100,4\n' >"$tmp/gap.csv"
"$kvsim" run "$tmp/gap.json" --out "$tmp/gap2" --quiet
rows=$(($(wc -l <"$tmp/gap2/timeseries.csv") - 1))
[ "$rows" = 1003 ] || { echo "a 1,000-tick gap wrote $rows rows, want every tick (1003)"; exit 1; }

scen="$src/tests/golden/data/small-synthetic.json"
# tensor_parallel_size 0 with expert_parallel_size 2, gpu_memory_gib 1e12:
# one line naming key and range (errors/run_hardening.cases).
q=(run "$scen" --quiet --out "$tmp/x")
run_error_cases "$src/tests/golden/errors/run_hardening.cases"

# A long run, stopped while its outputs are being written.
"$kvsim" run "$scen" --quiet --out "$tmp/big" --set workload.synthetic.requests=50000000 \
  --set workload.synthetic.arrival.rate=1000 &
pid=$!
for _ in $(seq 50); do ls "$tmp"/big/*.tmp.* >/dev/null 2>&1 && break; sleep 0.1; done
ls "$tmp"/big/*.tmp.* >/dev/null 2>&1 || { echo "no temporary files while running"; exit 1; }
kill -TERM $pid
rc=0; wait $pid || rc=$?
[ $rc != 0 ] || { echo "a run stopped by SIGTERM exits 0"; exit 1; }
left=$(ls -A "$tmp/big" 2>/dev/null || true)
[ -z "$left" ] || { echo "a stopped run left: $left"; exit 1; }
echo "hardening: ok"
