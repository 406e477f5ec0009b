#!/usr/bin/env bash
# Issue 5: with kv_offloading_size, a multi-turn workload whose working set
# exceeds the GPU pool finds earlier turns in the CPU tier (external prefix
# hits) and gets a lower TTFT than without offload; the transfer time grows
# when the GPU's host link is slowed.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/configs/scenarios/offload-multiturn-rtx4090.json"
num() { grep "\"$2\":" "$1" | head -1 | sed 's/.*://; s/[ ,\t]//g'; }
ttft() { awk '/"ttft_s"/ { t = 1 } t && /"mean"/ { v = $2; gsub(/,/, "", v); print v; t = 0 }' "$1"; }
common=(--set workload.synthetic.requests=300)
"$kvsim" run "$scen" --quiet --out "$tmp/none" "${common[@]}"
"$kvsim" run "$scen" --quiet --out "$tmp/cpu" "${common[@]}" --set engine.kv_offloading_size=64 --check-invariants
# The same GPU with a host link 16x slower.
sed 's/"host_link_GBps": *[0-9.]*/"host_link_GBps": 2/' "$src/configs/gpus/rtx4090.json" >"$tmp/slow.json"
"$kvsim" run "$scen" --quiet --out "$tmp/slow" "${common[@]}" --set engine.kv_offloading_size=64 \
  --set hardware.gpu="$tmp/slow.json"
hits=$(num "$tmp/cpu/summary.json" external_prefix_hits_tokens)
t_none=$(ttft "$tmp/none/summary.json")
t_cpu=$(ttft "$tmp/cpu/summary.json")
x_fast=$(num "$tmp/cpu/summary.json" transfer_s)
x_slow=$(num "$tmp/slow/summary.json" transfer_s)
echo "CPU hits $hits tokens; mean TTFT $t_none s without offload, $t_cpu s with; transfer $x_fast s, $x_slow s on a 2 GB/s link"
awk -v h="$hits" -v a="$t_none" -v b="$t_cpu" -v f="$x_fast" -v s="$x_slow" \
  'BEGIN { exit !(h > 0 && b < a && s > 4 * f) }'
