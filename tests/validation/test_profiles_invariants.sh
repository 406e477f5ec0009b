#!/usr/bin/env bash
# Every engine profile on ShareGPT lengths from ../shared, two replicas,
# with the pool, CPU-tier and request invariants checked after every step:
# each request is reported exactly once and finishes, and the same run twice
# gives byte-identical outputs.
set -euo pipefail
kvsim=$1
src=$2
csv="$src/../shared/traces/sharegpt_lengths/sharegpt_8k_filtered_stats_llama2_tokenizer.csv"
[ -f "$csv" ] || { echo "SKIP: $csv is absent"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scn="$src/configs/scenarios/compare-sharegpt-a100.json"
for p in vllm-v0 static contiguous contiguous-pow2; do
  for run in a b; do
    "$kvsim" run "$scn" --out "$tmp/$p-$run" --quiet --no-band --check-invariants --set "engine.profile=$p" \
      --set hardware.replicas=2 --set workload.synthetic.requests=300 \
      --set workload.synthetic.arrival.rate=2 --set engine.preemption_mode=swap \
      --set engine.swap_space=4
  done
  fin=$(grep -c ',finished$' "$tmp/$p-a/requests.csv" || true)
  ids=$(tail -n +2 "$tmp/$p-a/requests.csv" | cut -d, -f1 | sort -un | wc -l)
  [ "$fin" = 300 ] && [ "$ids" = 300 ] || { echo "$p: $fin finished, $ids distinct ids (want 300)"; exit 1; }
  for f in requests.csv timeseries.csv; do
    cmp -s "$tmp/$p-a/$f" "$tmp/$p-b/$f" || { echo "$p: $f differs between identical runs"; exit 1; }
  done
  echo "ok: $p"
done
