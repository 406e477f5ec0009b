#!/usr/bin/env bash
# A plan that does not fit says what single change would make it fit, and
# each suggestion, applied, does fit (checked by running calc again).
set -euo pipefail
kvsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kvsim" calc --model llama-3.1-8b --gpu rtx4090 --json >"$tmp/a.json"
grep -q '"fits":[[:space:]]*false' "$tmp/a.json" || { echo "128k context on a 4090 should not fit"; exit 1; }
advice=$(grep '"advice"' "$tmp/a.json" | sed 's/.*"advice":[[:space:]]*"//; s/",*$//')
echo "advice: $advice"
[ -n "$advice" ] || { echo "no advice"; exit 1; }
n=0
IFS=';' read -ra parts <<<"$advice"
for part in "${parts[@]}"; do
  part=${part# or }
  part=${part# }
  case $part in
    "max_model_len <= "*) flag=(--max-model-len "$(echo "${part#max_model_len <= }" | tr -d ,)") ;;
    "kv_cache_dtype fp8") flag=(--kv-cache-dtype fp8) ;;
    "gpu_memory_utilization "*) flag=(--gpu-memory-utilization "${part#gpu_memory_utilization }") ;;
    "tensor_parallel_size "*) flag=(--tensor-parallel-size "${part#tensor_parallel_size }") ;;
    "quantization fp8 (weights)") flag=(--quantization fp8) ;;
    *) echo "unknown advice '$part'"; exit 1 ;;
  esac
  "$kvsim" calc --model llama-3.1-8b --gpu rtx4090 "${flag[@]}" --strict >/dev/null ||
    { echo "advice '$part' does not fit"; exit 1; }
  n=$((n + 1))
done
[ "$n" -ge 2 ] || { echo "expected at least two ways to fit, got $n"; exit 1; }
"$kvsim" calc --model llama-3.1-8b --gpu rtx4090 | grep -q '^To fit: ' || { echo "text output lacks 'To fit:'"; exit 1; }
