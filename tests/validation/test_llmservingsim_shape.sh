#!/usr/bin/env bash
# The KV-bound RTX 4090 run of ../shared/validation/llmservingsim: the
# replay must show its shape -- running requests capped near 50 by the KV
# cache (measured <= 49), hundreds waiting (measured up to 234), KV usage
# near 100 %. Closeness of latencies is the fidelity issue's.
set -euo pipefail
kvsim=$1
src=$2
wl="$src/../shared/validation/llmservingsim/workloads/sharegpt-llama-3.1-8b-300-sps10.stripped.jsonl"
[ -f "$wl" ] || { echo "SKIP: $wl is absent"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kvsim" run "$src/configs/scenarios/llmservingsim-rtx4090-llama-3.1-8b.json" --out "$tmp" --quiet \
  --set engine.num_gpu_blocks_override=2588
awk -F, 'NR > 1 { if ($7 > run) run = $7; if ($8 > wait) wait = $8; if ($3 > kv) kv = $3 }
  END { printf "max running %d, max waiting %d, peak KV usage %.3f\n", run, wait, kv
        ok = run >= 35 && run <= 60 && wait >= 150 && kv >= 0.97
        exit !ok }' "$tmp/timeseries.csv"
finished=$(grep -c ',finished$' "$tmp/requests.csv" || true)
[ "$finished" = 300 ] || { echo "$finished of 300 finished"; exit 1; }
