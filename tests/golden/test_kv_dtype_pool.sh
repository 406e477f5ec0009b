#!/usr/bin/env bash
# Issue 4: FP8 KV doubles kv_cache_tokens and roughly halves KV usage for
# the same traffic; an int4 cache reports its scale bytes and its
# unquantized residual window (the auxiliary data) in the summary.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/configs/scenarios/shared-system-prompt.json"
num() { awk -v k="\"$2\"" 'index($0, k) { v = $0; sub(/.*:[ \t]*/, "", v); sub(/,$/, "", v); print v; exit }' "$1"; }
for d in auto fp8 int4; do
  "$kvsim" run "$scen" --quiet --out "$tmp/$d" --set engine.kv_cache_dtype=$d \
    --set engine.enable_prefix_caching=false --set workload.synthetic.requests=400 \
    --set workload.synthetic.arrival.rate=2 --check-invariants
done
t_auto=$(num "$tmp/auto/summary.json" kv_cache_tokens)
t_fp8=$(num "$tmp/fp8/summary.json" kv_cache_tokens)
u_auto=$(num "$tmp/auto/summary.json" usage_mean)
u_fp8=$(num "$tmp/fp8/summary.json" usage_mean)
scale=$(num "$tmp/int4/summary.json" kv_scale_bytes_per_token)
resid=$(num "$tmp/int4/summary.json" kv_residual_bytes_per_request)
per4=$(num "$tmp/int4/summary.json" per_token_kv_bytes)
echo "kv_cache_tokens auto $t_auto fp8 $t_fp8; mean usage auto $u_auto fp8 $u_fp8;" \
     "int4: $per4 bytes/token of which $scale scales, residual $resid bytes/request"
awk -v a="$t_auto" -v b="$t_fp8" -v ua="$u_auto" -v ub="$u_fp8" -v s="$scale" -v r="$resid" -v p="$per4" 'BEGIN {
  ok = b >= 2 * a - 32 && b <= 2 * a + 32        # double, to one block either way
  ok = ok && ub > 0.4 * ua && ub < 0.6 * ua     # roughly half the usage
  ok = ok && s > 0 && s < p && r > 0
  exit !ok }'
