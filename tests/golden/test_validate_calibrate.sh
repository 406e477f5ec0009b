#!/usr/bin/env bash
# kvsim calibrate recovers a known host term: the "measurement" is a kvsim
# run of tests/golden/fidelity/calib.json on the H100's kernel tables with
# a host_us we plant; calibration starts from host_us 0 and must find it
# again (--fit host_us; the kernel tables themselves are measured, not
# fitted). Also: the written GPU file (perf object only changes), the
# residual report, input errors. $1 = kvsim binary, $2 = source dir.
# Exit non-zero on failure.
set -u
kvsim=$1
src=$2
d=$src/tests/golden/fidelity
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib_expect_error.sh
. "$src/tests/golden/lib_expect_error.sh"
# shellcheck source=lib_error_cases.sh
. "$src/tests/golden/lib_error_cases.sh"

# The truth and the start: the H100's hardware facts (its lines as they
# are in the catalog), its kernel tables, and a host term that differs
# only in host_us (host_per_seq_us is the same known 10 us in both).
gpu() { # host_us
  echo "{"
  grep -E '^  "(name|description|vendor|generation|memory_total_bytes|hbm_bandwidth_GBps|bf16_tflops|fp8_tflops|gpu_link_GBps|tdp_w)":' \
    "$src/configs/gpus/h100-sxm.json"
  printf '  "perf": {"kernels": "h100-sxm", "host_us": %s, "host_per_seq_us": 10}\n}\n' "$1"
}
truth=1500
gpu $truth >"$tmp/truth.json"
gpu 0 >"$tmp/start.json"
"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --set "hardware.gpu=$tmp/start.json" >/dev/null \
  || fail "the test's GPU file is not a valid GPU"
# Two "perf" keys (a hand edit) are refused: JSON would keep one of them.
sed 's/^  "perf": {/  "perf": {"host_us": 1},\n  "perf": {/' "$tmp/start.json" >"$tmp/twice.json"
"$kvsim" run "$d/calib.json" --set "hardware.gpu=$tmp/truth.json" --out "$tmp/measured" --quiet || fail "truth run"
# The planted term is visible: the start (host_us 0) misses the truth run's
# TPOT by more than the 5 % the fitted file must reach below.
! "$kvsim" validate --measured "$tmp/measured/requests.csv" "$d/calib.json" --set "hardware.gpu=$tmp/start.json" \
  --max-error 5 >/dev/null 2>&1 || fail "host_us $truth leaves the run within 5 % of host_us 0: nothing to recover"

out=$("$kvsim" calibrate --gpu "$tmp/start.json" --fit host_us --measured "$tmp/measured/requests.csv" \
  --scenario "$d/calib.json" --out "$tmp/fitted.json") || fail "calibrate exited $?"
grep -Eq '^ +ttft_mean +measured ' <<<"$out" || fail "residuals are printed: $out"
grep -Eq '^host_us +0 +[0-9.]+ ' <<<"$out" || fail "the table shows start and fitted host_us: $out"
grep -Eq '^host_per_seq_us +10 +10 +\(fixed\)' <<<"$out" || fail "host_per_seq_us is not fitted: $out"
val() { awk -v k="\"$1\":" '$1 == k { gsub(/,/, "", $2); gsub(/"/, "", $2); print $2; exit }' "$tmp/fitted.json"; }
host=$(val host_us)
awk -v a="$host" -v t="$truth" 'BEGIN { exit !(a > t * 0.97 && a < t * 1.03) }' || fail "fitted host_us $host, truth $truth: $out"
awk -v a="$(val host_per_seq_us)" 'BEGIN { exit !(a == 10) }' || fail "host_per_seq_us moved: $(val host_per_seq_us)"
[ "$(val kernels)" = h100-sxm ] && [ "$(val status)" = kernels ] || fail "the fitted file keeps the H100's own kernel tables"
grep -q '"source": "kvsim calibrate (1 per-request run' "$tmp/fitted.json" || fail "the source names the data"
# Only the perf object changed: the hardware facts are the same lines.
diff <(grep -v '"perf"' "$tmp/start.json" | grep -v '^}') <(awk '/^  "perf": \{/ { exit } { print }' "$tmp/fitted.json") \
  >"$tmp/diff" || fail "the lines before perf changed: $(cat "$tmp/diff")"
for key in name memory_total_bytes hbm_bandwidth_GBps bf16_tflops fp8_tflops gpu_link_GBps; do
  a=$(grep "\"$key\":" "$src/configs/gpus/h100-sxm.json")
  b=$(grep "\"$key\":" "$tmp/fitted.json" | head -1)
  [ "$a" = "$b" ] || fail "hardware fact $key changed: '$a' vs '$b'"
done
# The written file is a GPU kvsim reads, and its host term reproduces the
# measurement: mean, p50 and p99 of TTFT, TPOT and E2E within 5 % (a
# percentile of 200 requests moves by a few percent when a coefficient
# moves by 1 %: requests cross step boundaries).
"$kvsim" validate --measured "$tmp/measured/requests.csv" "$d/calib.json" --set "hardware.gpu=$tmp/fitted.json" \
  --max-error 5 >/dev/null || fail "the fitted file reproduces the truth run within 5 %"

# JSON report.
j=$("$kvsim" calibrate --gpu "$tmp/start.json" --fit host_us --measured "$tmp/measured/requests.csv" \
  --scenario "$d/calib.json" --json) || fail "--json exited $?"
grep -Eq '"residuals":[[:space:]]+\[' <<<"$j" && grep -Eq '"stddev":' <<<"$j" || fail "JSON residuals / stddev: $j"

# Bad input: one line naming the flag or file, exit 2, nothing written
# (errors/validate_calibrate.cases).
run_error_cases "$src/tests/golden/errors/validate_calibrate.cases"
exit 0
