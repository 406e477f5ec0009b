#!/usr/bin/env bash
# Fidelity on the measured vLLM runs of ../shared/validation/llmservingsim
# (skipped when absent), with the shipped calibrated coefficients:
# - RTX4090 Llama-3.1-8B (KV-bound) and RTXPRO6000 Llama-3.1-8B: issue 6's
#   targets, mean TPOT and E2E within 5 %, mean TTFT within 10 %, p99 of
#   each within 15 %; the RTX4090 running / waiting curve follows the
#   measured one (mean absolute difference within 10 % of the measured mean,
#   KV usage within 5 percentage points).
# - RTXPRO6000 Qwen3-30B-A3B (DP2 + expert parallel, ranks in lockstep),
#   with the dense coefficients of the Llama run and moe_efficiency fitted
#   on this run: the same targets.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure, 77 to skip.
set -u
kvsim=$1
src=$2
ls=$src/../shared/validation/llmservingsim
[ -d "$ls" ] || { echo "skip: $ls is absent"; exit 77; }
sc=$src/configs/scenarios
fail=0

# metric error_pct from validate --json
err() { awk -v k="\"$1\":" '$1 == k { on = 1 } on && $1 == "\"error_pct\":" { printf "%.6f\n", $2 + 0; exit }'; }
series() { awk -v k="\"$1\":" '$1 == k { gsub(/,/, "", $2); print $2 + 0; exit }'; }
within() { # name value limit
  awk -v v="$2" -v l="$3" 'BEGIN { exit !(v >= -l && v <= l) }' || { echo "FAIL: $1 = $2 %, target +/-$3 %"; fail=1; }
}

check_targets() { # label json
  local label=$1 j=$2
  within "$label TTFT mean" "$(err ttft_mean <<<"$j")" 10
  within "$label TPOT mean" "$(err tpot_mean <<<"$j")" 5
  within "$label E2E mean" "$(err e2e_mean <<<"$j")" 5
  within "$label TTFT p99" "$(err ttft_p99 <<<"$j")" 15
  within "$label TPOT p99" "$(err tpot_p99 <<<"$j")" 15
  within "$label E2E p99" "$(err e2e_p99 <<<"$j")" 15
}

j=$("$kvsim" validate --measured "$ls/RTX4090/Llama-3.1-8B/vllm/requests.jsonl" \
  "$sc/llmservingsim-rtx4090-llama-3.1-8b.json" --json) || { echo "FAIL: RTX4090 validate"; exit 1; }
check_targets RTX4090 "$j"
# The KV-bound curve: running and waiting over time follow the measured ones.
rm=$(series running_mean_measured <<<"$j")
wm=$(series waiting_mean_measured <<<"$j")
rd=$(series running_mean_abs_diff <<<"$j")
wd=$(series waiting_mean_abs_diff <<<"$j")
kd=$(series kv_usage_mean_abs_diff_pct <<<"$j")
awk -v d="$rd" -v m="$rm" 'BEGIN { exit !(m > 0 && d <= 0.10 * m) }' \
  || { echo "FAIL: RTX4090 running |difference| $rd vs mean $rm (want <= 10 %)"; fail=1; }
awk -v d="$wd" -v m="$wm" 'BEGIN { exit !(m > 0 && d <= 0.10 * m) }' \
  || { echo "FAIL: RTX4090 waiting |difference| $wd vs mean $wm (want <= 10 %)"; fail=1; }
awk -v d="$kd" 'BEGIN { exit !(d >= 0 && d <= 5) }' || { echo "FAIL: RTX4090 KV usage |difference| $kd pp"; fail=1; }
echo "RTX4090: running |diff| $rd of $rm, waiting |diff| $wd of $wm, KV |diff| $kd pp"

j=$("$kvsim" validate --measured "$ls/RTXPRO6000/Llama-3.1-8B/vllm/requests.jsonl" \
  "$sc/llmservingsim-rtxpro6000-llama-3.1-8b.json" --json) || { echo "FAIL: RTXPRO6000 Llama validate"; exit 1; }
check_targets "RTXPRO6000 Llama" "$j"

j=$("$kvsim" validate --measured "$ls/RTXPRO6000/Qwen3-30B-A3B-Instruct-2507/vllm/requests.jsonl" \
  "$sc/llmservingsim-rtxpro6000-qwen3-30b-a3b.json" --json) || { echo "FAIL: RTXPRO6000 Qwen validate"; exit 1; }
check_targets "RTXPRO6000 Qwen3-30B-A3B" "$j"
exit $fail
