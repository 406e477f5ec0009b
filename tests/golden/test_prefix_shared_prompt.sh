#!/usr/bin/env bash
# Issue 4: a 2,000-token shared system prompt. With prefix caching the
# shared blocks are computed once: TTFT falls and throughput rises against
# the same traffic with caching off; tenants that may not share (cache
# salt) lose hits, and the summary says how many.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/configs/scenarios/shared-system-prompt.json"
get() { # FILE KEY_PATH... -> the number after the last key (first match after the previous)
  awk -v path="$2" 'BEGIN { n = split(path, k, ".") }
    { for (i = 1; i <= n; i++) if (!done[i] && index($0, "\"" k[i] "\"") && (i == 1 || done[i-1])) {
        done[i] = 1; if (i == n) { v = $0; sub(/.*:[ \t]*/, "", v); sub(/,$/, "", v); print v; exit } } }' "$1"
}
for pc in true false; do
  "$kvsim" run "$scen" --quiet --out "$tmp/$pc" --set engine.enable_prefix_caching=$pc \
    --set workload.synthetic.requests=1200 --check-invariants
done
"$kvsim" run "$scen" --quiet --out "$tmp/tenants" --set workload.synthetic.requests=1200 \
  --set workload.synthetic.tenants.count=8
on_ttft=$(get "$tmp/true/summary.json" latency.ttft_s.mean)
off_ttft=$(get "$tmp/false/summary.json" latency.ttft_s.mean)
on_tp=$(get "$tmp/true/summary.json" throughput.total_tokens_per_s)
off_tp=$(get "$tmp/false/summary.json" throughput.total_tokens_per_s)
hit=$(get "$tmp/true/summary.json" prefix_cache.hit_rate)
off_hits=$(get "$tmp/false/summary.json" prefix_cache.hits_tokens)
t_hit=$(get "$tmp/tenants/summary.json" prefix_cache.hit_rate)
t_lost=$(get "$tmp/tenants/summary.json" prefix_cache.hits_lost_to_tenant_isolation_tokens)
echo "TTFT mean on $on_ttft s / off $off_ttft s; throughput on $on_tp / off $off_tp tok/s;" \
     "hit rate $hit (off: $off_hits hit tokens); 8 tenants: hit rate $t_hit, $t_lost tokens lost to isolation"
awk -v a="$on_ttft" -v b="$off_ttft" -v c="$on_tp" -v d="$off_tp" -v h="$hit" -v o="$off_hits" \
    -v th="$t_hit" -v tl="$t_lost" 'BEGIN {
  ok = a < b && c > d && h > 0.5 && o == 0 && th < h && tl > 0
  exit !ok }'
