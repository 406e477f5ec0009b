#!/usr/bin/env bash
# kvsim validate --all: leave-one-GPU-out over the dev data of
# ../shared/validation (skipped when absent; under the sanitizer build,
# KVSIM_SANITIZED=1, skipped: it replays every run and row several times).
# Checks the table's shape and what ships from it: every dev source has its
# groups, each latency group has held-out and in-sample errors and lists its
# rows' signed held-out errors, every group is held out by GPU (the host
# term fitted without its GPU), exclusions name their reason; the host term
# in perf.h and the client latency in
# fidelity.h are the table's all-data fit, and each status's band in gpu.h
# is at least the table's 90th percentile of the held-out errors of that
# status (and of every better-informed one). A change to the step model
# fails here until those constants are set from the new table.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure, 77 to skip.
set -u
kvsim=$1
src=$2
v=$src/../shared/validation
[ -d "$v/llmservingsim" ] && [ -f "$v/aiconfigurator/silicon_vllm.csv" ] || { echo "skip: $v is absent"; exit 77; }
[ "${KVSIM_SANITIZED:-0}" = 1 ] && { echo "skip: long replays under the sanitizer"; exit 77; }
command -v jq >/dev/null || { echo "skip: no jq"; exit 77; }
fail=0
cd "$src" || exit 1 # --all reads ../shared/validation and configs/scenarios from the checkout
j=$("$kvsim" validate --all --json) || { echo "FAIL: validate --all --json"; exit 1; }
n() { jq "$1" <<<"$j"; }
[ "$(n '[.groups[] | select(.source == "per-request")] | length')" = 3 ] || { echo "FAIL: 3 per-request groups"; fail=1; }
[ "$(n '[.groups[] | select(.source == "silicon")] | length')" -ge 4 ] || { echo "FAIL: silicon groups"; fail=1; }
[ "$(n '[.groups[] | select(.source == "silicon-sglang")] | length')" -ge 1 ] || { echo "FAIL: SGLang groups"; fail=1; }
[ "$(n '[.groups[] | select(.source == "startup")] | length')" -ge 3 ] || { echo "FAIL: start-up groups"; fail=1; }
bad=$(n '[.groups[] | select(.source != "startup" and .rows > 0)
          | select(.held_out.ttft == null or .held_out.tpot == null or .shipped.tpot == null)] | length')
[ "$bad" = 0 ] || { echo "FAIL: $bad latency groups without errors"; fail=1; }
# Every latency group is held out by its GPU.
bad=$(n '[.groups[] | select(.source != "startup" and .rows > 0)
          | select(. as $g | $g.held_out_from | test("without " + $g.gpu) | not)] | length')
[ "$bad" = 0 ] || { echo "FAIL: $bad groups not held out by GPU"; fail=1; }
# Each latency group lists its rows' signed held-out errors, whose median |error| is the table's.
bad=$(n 'def abs: if . < 0 then -. else . end;
         def median: sort | length as $k | if $k % 2 == 1 then .[($k - 1) / 2] else (.[$k / 2 - 1] + .[$k / 2]) / 2 end;
         [.groups[] | select(.source != "startup" and .rows > 0)
          | select((.row_errors | length) != .rows or
                   (([.row_errors[].held_out.tpot | abs] | median) - .held_out.tpot | abs) > 1e-6)] | length')
[ "$bad" = 0 ] || { echo "FAIL: $bad groups whose row_errors do not give their median"; fail=1; }
bad=$(n '[.excluded[] | select(.reason | test("dense .* peak|HBM bandwidth|kernel tables|not reproducible") | not)] | length')
[ "$bad" = 0 ] || { echo "FAIL: an exclusion without its reason"; fail=1; }
# The shipped host term and client latency are the all-data fit.
const() { sed -n "s/^#define $1 \\([0-9.]*\\).*/\\1/p" "$2"; }
h=sim/include/kvsim/perf.h
for pair in "sync_us KVSIM_HOST_US_VLLM_SYNC 1" "sync_per_seq_us KVSIM_HOST_PER_SEQ_US_VLLM_SYNC 0.1" \
            "async_us KVSIM_HOST_US_VLLM_ASYNC 1" "async_per_seq_us KVSIM_HOST_PER_SEQ_US_VLLM_ASYNC 0.1" \
            "sglang_us KVSIM_HOST_US_SGLANG 1" "sglang_per_seq_us KVSIM_HOST_PER_SEQ_US_SGLANG 0.1"; do
  set -- $pair
  c=$(const "$2" $h); f=$(n ".host.$1")
  awk -v c="$c" -v f="$f" -v t="$3" 'BEGIN { exit !(c - f <= t && f - c <= t) }' ||
    { echo "FAIL: $2 is $c, the fit says $f"; fail=1; }
done
c=$(const KVSIM_FID_CLIENT_US sim/include/kvsim/fidelity.h); f=$(n '.host.frontend_us')
awk -v c="$c" -v f="$f" 'BEGIN { exit !(c - f <= 100 && f - c <= 100) }' ||
  { echo "FAIL: KVSIM_FID_CLIENT_US is $c, the fit says $f"; fail=1; }
# Each band at least its status's held-out 90th percentile, and a borrowed
# or spec-only band at least the kernels one.
g=sim/include/kvsim/gpu.h
check_band() { # NAME CONSTANT-PREFIX [OTHER STATUS...]
  local name=$1 pre=$2; shift 2
  for m in ttft tpot; do
    local M=$(tr a-z A-Z <<<"$m") c
    c=$(const "KVSIM_GPU_BAND_${pre}_$M" $g)
    for s in "$name" "$@"; do
      local q; q=$(n ".bands[\"$s\"].$m // 0")
      awk -v c="$c" -v q="$q" 'BEGIN { exit !(c >= q) }' ||
        { echo "FAIL: KVSIM_GPU_BAND_${pre}_$M $c is below the $s rows' $q"; fail=1; }
    done
  done
}
check_band kernels KERNELS
check_band kernels-borrowed BORROWED kernels
check_band spec-only SPEC kernels kernels-borrowed
check_band moe MOE
# The GPUs with kernel tables of their own say so.
gpus=$("$kvsim" list gpus --json) || { echo "FAIL: list gpus --json"; exit 1; }
for gpu in a100-80g h100-sxm h200 b200 l40s rtx-pro-6000; do
  s=$(jq -r --arg g "$gpu" '.[] | select(.name == $g) | .status' <<<"$gpus")
  [ "$s" = kernels ] || { echo "FAIL: $gpu status '$s', expected kernels"; fail=1; }
done
t=$("$kvsim" validate --all --no-refit 2>/dev/null) || { echo "FAIL: validate --all"; exit 1; }
grep -q "rtx-pro-6000 *qwen3-30b-a3b" <<<"$t" || { echo "FAIL: text table lacks the MoE run"; fail=1; }
grep -q "memory side" <<<"$t" || { echo "FAIL: text table lacks the start-up logs"; fail=1; }
# Elsewhere (no ../shared beside): one clear error line, exit 2.
d=$(mktemp -d)
msg=$(cd "$d" && "$kvsim" validate --all 2>&1 >/dev/null); rc=$?
rmdir "$d"
[ "$rc" = 2 ] && [ "$(wc -l <<<"$msg")" = 1 ] || { echo "FAIL: no data: exit $rc, '$msg'"; fail=1; }
[ $fail = 0 ] && echo "validate --all: $(n '.groups | length') groups, $(n '.excluded | length') excluded rows"
exit $fail
