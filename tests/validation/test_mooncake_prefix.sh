#!/usr/bin/env bash
# Issue 4: replaying the Mooncake conversation trace with prefix caching.
# Unbounded memory: a token hit rate a little under the trace's ideal
# 37.36 % (kvsim trace stats computes the ideal exactly); prefix caching
# off: zero hits; finite pools: a hit rate that falls with the pool, near
# the hit rates of a pure LRU cache of the same capacity on this trace, in
# 512-token hash blocks (C hash blocks of 512 tokens = 8 x C engine blocks
# of 64 tokens): C=20,000 -> 28.75 %, C=1,000 -> 4.45 %, what
# `kvsim trace stats --prefix-block-size 512` reports.
# 64-token blocks keep the unbounded pool small enough for a CI run; the
# scenario itself uses vLLM's 16.
set -euo pipefail
[ "${KVSIM_SANITIZED:-0}" = 1 ] && { echo "SKIP: a long replay; it runs in the Release pass, not under the sanitizers"; exit 77; }
kvsim=$1
src=$2
trace="$src/../shared/traces/mooncake_fast25/conversation_trace.jsonl"
[ -f "$trace" ] || { echo "SKIP: $trace is absent"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/configs/scenarios/mooncake-prefix-cache.json"
ideal=$("$kvsim" trace stats --prefix-block-size 512 --json "$trace" |
  awk -F: '/ideal_prefix_hit_rate_tokens/ { gsub(/[ ,\t]/, "", $2); print $2 }')
run() { # BLOCKS [extra sets] -> "hit_rate cached_fraction hits"
  local b=$1; shift
  "$kvsim" run "$scen" --quiet --no-band --out "$tmp/$b" --set engine.block_size=64 \
    --set engine.num_gpu_blocks_override="$b" "$@"
  awk -F: '/"hit_rate"/ { gsub(/[ ,\t]/, "", $2); h = $2 }
           /"prompt_tokens_cached_fraction"/ { gsub(/[ ,\t]/, "", $2); c = $2 }
           /"hits_tokens"/ && !seen { gsub(/[ ,\t]/, "", $2); n = $2; seen = 1 }
           END { print h, c, n }' "$tmp/$b/summary.json"
}
read -r h_inf c_inf _ <<<"$(run 1600000)"
read -r h_big c_big _ <<<"$(run 160000)"
read -r h_small c_small _ <<<"$(run 8000)"
read -r _ _ n_off <<<"$(run 1600000 --set engine.enable_prefix_caching=false)"
echo "ideal $ideal; unbounded $h_inf; 160k blocks $h_big (cached $c_big, LRU 20000 = 0.2875);" \
     "8k blocks $h_small (cached $c_small, LRU 1000 = 0.0445); caching off: $n_off hit tokens"
awk -v i="$ideal" -v a="$h_inf" -v b="$h_big" -v c="$h_small" -v cb="$c_big" -v cs="$c_small" -v off="$n_off" 'BEGIN {
  ok = 1
  if (!(a <= i && a > i - 0.005)) { print "unbounded hit rate not a little under the ideal"; ok = 0 }
  if (!(a > b && b > c)) { print "hit rate does not fall with the pool"; ok = 0 }
  if ((cb - 0.2875) ^ 2 > 0.015 ^ 2) { print "160k-block cached fraction not near LRU(20000)"; ok = 0 }
  if ((cs - 0.0445) ^ 2 > 0.015 ^ 2) { print "8k-block cached fraction not near LRU(1000)"; ok = 0 }
  if (off != 0) { print "prefix caching off still hits"; ok = 0 }
  exit !ok }'
