#!/usr/bin/env bash
# Issue 5's comparison on ShareGPT lengths from ../shared (Poisson): the
# contiguous max_model_len reservation holds far fewer real tokens than
# vllm-v1's paging (> 90 %), the oracle and pow2 reservations sit between,
# and vllm-v1 sustains a clearly higher request rate than static at the same
# p99 TTFT. Runs scripts/compare_profiles.sh with fewer requests.
set -euo pipefail
[ "${KVSIM_SANITIZED:-0}" = 1 ] && { echo "SKIP: a long replay; it runs in the Release pass, not under the sanitizers"; exit 77; }
kvsim=$1
src=$2
csv="$src/../shared/traces/sharegpt_lengths/sharegpt_8k_filtered_stats_llama2_tokenizer.csv"
[ -f "$csv" ] || { echo "SKIP: $csv is absent"; exit 77; }
out=$(REQUESTS=300 ITERS=4 PROFILES="vllm-v1 contiguous contiguous:oracle contiguous-pow2 static" bash "$src/scripts/compare_profiles.sh" "$kvsim")
echo "$out"
echo "$out" | awk '
  $1 == "vllm-v1" { v1 = $3; v1r = $8 }
  $1 == "contiguous" { mx = $3 }
  $1 == "contiguous:oracle" { orc = $3 }
  $1 == "contiguous-pow2" { p2 = $3 }
  $1 == "static" { st = $3; str = $8 }
  END {
    bad = 0
    if (!(v1 > 0.9)) { print "vllm-v1 token fraction " v1 " is not over 0.9"; bad = 1 }
    if (!(mx < 0.5)) { print "contiguous token fraction " mx " is not under 0.5"; bad = 1 }
    if (!(orc > mx && p2 > mx)) { print "oracle " orc " / pow2 " p2 " do not beat max " mx; bad = 1 }
    if (!(str > 0 && v1r >= 3 * str)) { print "vllm-v1 rate " v1r " is not 3x static " str; bad = 1 }
    exit bad }'
echo "ok: paging vs reservations and rates as expected"
