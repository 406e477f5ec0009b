#!/usr/bin/env bash
# Issue 4: a sliding-window model (gpt-oss-20b: 12 sliding + 12 full
# layers) holds only the window for its sliding layers. One request of
# max_model_len tokens peaks at exactly the blocks `kvsim calc` charges per
# request (blocks_per_request), and uses fewer bytes than the same model
# with the hybrid allocator disabled (all layers full attention).
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/s.json" <<'JSON'
{ "name": "hybrid", "seed": 1, "model": "gpt-oss-20b", "hardware": { "gpu": "rtx-pro-6000" },
  "engine": { "max_model_len": 32768, "gpu_memory_utilization": 0.5, "max_num_seqs": 64 },
  "output": { "sample_interval_s": 0.001 },
  "workload": { "synthetic": { "requests": 1, "arrival": { "process": "closed_loop", "clients": 1 },
    "prompt_tokens": 32767, "output_tokens": 1 } } }
JSON
for off in false true; do
  "$kvsim" run "$tmp/s.json" --quiet --out "$tmp/$off" --check-invariants \
    --set engine.disable_hybrid_kv_cache_manager=$off
  peak=$(awk -F, 'NR > 1 && $4 > m { m = $4 } END { print m + 0 }' "$tmp/$off/timeseries.csv")
  calc=$("$kvsim" calc --model gpt-oss-20b --gpu rtx-pro-6000 --max-model-len 32768 \
    --gpu-memory-utilization 0.5 --max-num-seqs 64 --json $([ $off = true ] && echo --disable-hybrid-kv-cache-manager) |
    awk -F: '/"blocks_per_request"/ { gsub(/[ ,\t]/, "", $2); b = $2 } /"block_bytes"/ { gsub(/[ ,\t]/, "", $2); s = $2 }
             END { print b, s }')
  read -r want bytes <<<"$calc"
  echo "hybrid off=$off: peak blocks $peak, calc blocks_per_request $want of $bytes bytes"
  # The +1 block of SlidingWindowSpec covers an unaligned window start; an
  # aligned request may need one block less.
  [ "$peak" -le "$want" ] && [ "$peak" -ge $((want - 1)) ] || { echo "peak blocks differ from calc"; exit 1; }
  eval "bytes_$off=$((peak * bytes))"
done
[ "$bytes_false" -lt "$bytes_true" ] || { echo "hybrid pool does not save memory"; exit 1; }
echo "bytes per request: hybrid $bytes_false, full attention $bytes_true"
