#!/usr/bin/env bash
# Writes the outputs that a behaviour-neutral change must leave byte-identical
# into DIR: every golden case, `calc --json` over the whole catalog, a sweep,
# a plan search, `trace stats`, and (when ../shared is beside the checkout)
# the Azure and Mooncake replays and the validate/calibrate tables.
# Compare two trees with `diff -r` (the "version" field aside):
#   scripts/snapshot_outputs.sh build-old/kvsim /tmp/old
#   scripts/snapshot_outputs.sh build/kvsim /tmp/new
#   diff -r -I '"version"' /tmp/old /tmp/new
set -euo pipefail
kvsim=$(realpath "$1")
out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
shared=../shared   # relative, so two checkouts print the same paths
mkdir -p "$out"
out=$(realpath "$out")
cd "$src"
for c in tests/golden/cases/*/; do
  n=$(basename "$c")
  "$kvsim" run "$c/scenario.json" --quiet --out "$out/golden/$n"
done
"$kvsim" run --quiet --out "$out/default"
for m in configs/models/*.json; do
  m=$(basename "$m" .json)
  for g in configs/gpus/*.json; do
    g=$(basename "$g" .json)
    echo "== $m $g"
    "$kvsim" calc --model "$m" --gpu "$g" --json 2>&1 || true
  done
done >"$out/calc.jsonl"
# Since --keep-runs a sweep keeps only each point's summary.json by default;
# keep everything where the binary knows the flag, so old and new compare.
keep=()
"$kvsim" sweep --help 2>&1 | grep -q -- --keep-runs && keep=(--keep-runs)
"$kvsim" sweep tests/golden/data/small-sweep.json --jobs 2 "${keep[@]}" --out "$out/sweep" \
  >"$out/sweep.txt" 2>&1
"$kvsim" plan tests/golden/data/small-synthetic.json --slo ttft_p99=2s --json \
  >"$out/plan-rate.json" 2>&1 || true
"$kvsim" plan tests/golden/data/small-synthetic.json --slo ttft_p99=2s --search util --json \
  >"$out/plan-util.json" 2>&1 || true
f=tests/golden/fidelity
"$kvsim" validate --measured $f/requests.jsonl $f/scenario.json --json >"$out/validate-measured.json" 2>&1 || true
"$kvsim" validate --measured $f/requests.jsonl $f/scenario.json >"$out/validate-measured.txt" 2>&1 || true
"$kvsim" validate --silicon $f/silicon.csv --json >"$out/validate-silicon.json" 2>&1 || true
"$kvsim" trace stats --json "$f/workload.jsonl" >"$out/trace-stats.json" 2>&1 || true
if [ -d "$shared/traces" ]; then
  "$kvsim" run configs/scenarios/azure-conv-llama-3.1-8b-h100.json --quiet --out "$out/azure"
  "$kvsim" run configs/scenarios/mooncake-prefix-cache.json --quiet --out "$out/mooncake" \
    --set engine.block_size=64 --set engine.num_gpu_blocks_override=160000
  "$kvsim" trace stats --prefix-block-size 512 --json \
    "$shared/traces/mooncake_fast25/conversation_trace.jsonl" >"$out/mooncake-stats.json"
  "$kvsim" validate --startup "$shared/validation/vllm_startup_logs.csv" --json \
    >"$out/validate-startup.json" 2>&1 || true
  "$kvsim" validate --startup "$shared/validation/vllm_startup_logs.csv" \
    >"$out/validate-startup.txt" 2>&1 || true
fi
# The sweep's own timing lines are not outputs.
sed -i -E -e "s|$out|OUT|g" -e 's/[0-9.]+ s\b/T s/g' "$out/sweep.txt"
echo "snapshot in $out"
