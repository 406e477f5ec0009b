#!/usr/bin/env bash
# Fidelity on AIConfigurator's fixed-concurrency vLLM rows of the dense
# models (../shared/validation/aiconfigurator/silicon_vllm.csv; skipped when
# absent), with the shipped constants: the kernel tables of configs/kernels
# and the catalog's host term. A regression guard: per system and model,
# the median absolute error of mean TTFT and mean TPOT must not exceed the
# kernel-table model's figures at the commit that introduced it by more
# than 1 percentage point (H100: Qwen3-32B, Llama-3.1-70B; B200:
# Llama-3.1-70B fp8; the NVFP4 rows are skipped: not modelled). The kernel
# tables are measured, not fitted to these rows; the engines' host term
# (perf.h KVSIM_HOST_US_*) is fitted across GPUs on dense models, so these
# figures are in-sample for it; its held-out error is what kvsim validate
# --all reports (tests/validation/test_validate_all.sh). They replace the
# old per-GPU fit's in-sample targets (TTFT 15 %, TPOT 10 %), which the
# kernel-table model does not meet on TTFT (B200 70B, H100 Qwen3-32B).
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure, 77 to
# skip.
set -u
kvsim=$1
src=$2
csv=$src/../shared/validation/aiconfigurator/silicon_vllm.csv
[ -f "$csv" ] || { echo "skip: $csv is absent"; exit 77; }
j=$("$kvsim" validate --silicon "$csv" --filter model=qwen3-32b --filter model=llama-3.1-70b \
  --filter model=llama-3.1-8b --json) || { echo "FAIL: validate --silicon exited $?"; exit 1; }
# One line per group: system model rows ttft tpot.
groups=$(awk '
  $1 == "\"groups\":" { on = 1 } !on { next }
  $1 == "\"system\":" { gsub(/[",]/, "", $2); sys = $2 }
  $1 == "\"model\":" { gsub(/[",]/, "", $2); model = $2 }
  $1 == "\"rows\":" { gsub(/,/, "", $2); rows = $2 }
  $1 == "\"ttft\":" { gsub(/,/, "", $2); t = $2 }
  $1 == "\"tpot\":" && sys != "" { gsub(/,/, "", $2); print sys, model, rows, t, $2; sys = "" }' <<<"$j")
# The figures, as printed by
#   kvsim validate --silicon ../shared/validation/aiconfigurator/silicon_vllm.csv \
#     --filter model=qwen3-32b --filter model=llama-3.1-70b --filter model=llama-3.1-8b
# with the kernel-table step model (in-sample for the host term; the two
# Qwen3-32B fp8 rows whose request cycle is shorter than the tables allow
# are excluded since):
# system model rows ttft% tpot%
expected='b200_sxm llama-3.1-70b 60 16.9 4.9
h100_sxm llama-3.1-70b 45 13.4 5.0
h100_sxm qwen3-32b 91 22.3 2.5'
fail=0
n=0
while read -r sys model rows t p; do
  [ -n "$sys" ] || continue
  n=$((n + 1))
  printf '%-9s %-14s %3s rows: median |error| TTFT %6.1f%%, TPOT %6.1f%%\n' "$sys" "$model" "$rows" "$t" "$p"
  want=$(awk -v s="$sys" -v m="$model" '$1 == s && $2 == m' <<<"$expected")
  [ -n "$want" ] || { echo "FAIL: $sys / $model is not one of the expected groups"; fail=1; continue; }
  read -r _ _ wrows wt wp <<<"$want"
  [ "$rows" = "$wrows" ] || { echo "FAIL: $sys / $model: $rows rows simulated, expected $wrows"; fail=1; }
  awk -v t="$t" -v p="$p" -v wt="$wt" -v wp="$wp" 'BEGIN { exit !(t <= wt + 1 && p <= wp + 1) }' \
    || { echo "FAIL: $sys / $model above the guard (TTFT $wt + 1 %, TPOT $wp + 1 %)"; fail=1; }
done <<<"$groups"
[ $n -eq 3 ] || { echo "FAIL: expected 3 system/model groups, got $n"; fail=1; }
grep -Eq '"precision .fp4. \(NVFP4 / int4 weights\) is not modelled":[[:space:]]+60' <<<"$j" \
  || { echo "FAIL: the 60 NVFP4 rows are skipped and counted"; fail=1; }
exit $fail
