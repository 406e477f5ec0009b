#!/usr/bin/env bash
# kvsim validate --measured on the tiny files of tests/golden/fidelity/
# (written for this test): the three measured formats, the JSON contract
# (issue 6), self-comparison, --max-error and input errors.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
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

# -- LLMServingSim requests.jsonl: the measured side, computed by hand from
# the file (anchored on queued_ts): TTFT 0.05 0.10 0.10 0.16 0.03 -> mean
# 0.088 s; every TPOT is 10 ms; queueing 0.001 0.005 0.06 0 0.01 -> 0.0152 s.
out=$("$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json") || fail "text mode exited $?"
grep -Eq '^measured: .*requests.jsonl \(llmservingsim, 5 finished requests\)$' <<<"$out" || fail "header: $out"
grep -Eq '^TTFT +mean +0\.088 s ' <<<"$out" || fail "measured TTFT mean 0.088 s: $out"
grep -Eq '^TPOT +mean +10\.000 ms ' <<<"$out" || fail "measured TPOT mean 10 ms: $out"
grep -Eq '^queue +mean +0\.015 s ' <<<"$out" || fail "measured queueing delay 0.015 s: $out"
grep -Eq '^ +running +1\.0 / ' <<<"$out" || fail "the timeseries.csv beside the file is read: $out"
grep -Eq 'KV usage +0\.8% /' <<<"$out" || fail "measured KV usage (percent) averaged: $out"

json=$("$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --json) || fail "--json exited $?"
for k in ttft_mean ttft_p50 ttft_p99 tpot_mean tpot_p50 tpot_p99 e2e_mean e2e_p50 e2e_p99; do
  # Each metric: {measured, simulated, error_pct}, error_pct = (sim - meas) / meas x 100.
  v=$(awk -v k="\"$k\":" '
    $1 == k { on = 1; next }
    on && $1 == "\"measured\":" { m = $2 + 0 }
    on && $1 == "\"simulated\":" { s = $2 + 0 }
    on && $1 == "\"error_pct\":" { e = $2 + 0; on = 0
      want = (s - m) / m * 100; d = e - want; if (d < 0) d = -d
      print (m > 0 && s > 0 && d < 1e-6) ? "ok" : "bad " m " " s " " e }' <<<"$json")
  [ "$v" = ok ] || fail "metrics.$k: $v"
done
m=$(awk '$1 == "\"ttft_mean\":" { on = 1 } on && $1 == "\"measured\":" { print $2 + 0; exit }' <<<"$json")
awk -v m="$m" 'BEGIN { exit !(m > 0.08799 && m < 0.08801) }' || fail "JSON measured TTFT mean $m, want 0.088"

# -- kvsim's own requests.csv and timeseries.csv: a run compared with its
# own scenario is exact (same clock, deterministic) up to the microsecond
# the CSV keeps: below 0.01 % on latencies of 10 ms and more (the queueing
# delays are microseconds here and are not checked).
"$kvsim" run "$d/scenario.json" --out "$tmp/run" --quiet || fail "kvsim run"
self=$("$kvsim" validate --measured "$tmp/run/requests.csv" "$d/scenario.json" --series "$tmp/run/timeseries.csv" \
  --json) || fail "self comparison exited $?"
bad=$(awk '$1 ~ /^"(ttft|tpot|e2e)_/ { on = 1 } $1 ~ /^"queue_/ { on = 0 }
  on && $1 == "\"error_pct\":" && ($2 + 0 > 0.01 || $2 + 0 < -0.01)' <<<"$self")
[ -z "$bad" ] || fail "self comparison has non-zero errors: $bad"
grep -Eq '"running_mean_abs_diff":[[:space:]]+0,?$' <<<"$self" || fail "self series differs: $self"
grep -q '"format":[[:space:]]*"kvsim"' <<<"$self" || fail "kvsim format not detected"

# -- vLLM benchmark JSON: the failed request (error text, ttft 0) is left
# out; E2E = TTFT + sum(ITL); no scheduling times, so no queueing delay.
b=$("$kvsim" validate --measured "$d/bench.json" "$d/scenario.json") || fail "vllm bench exited $?"
grep -Eq '\(vllm-bench, 3 finished requests\)' <<<"$b" || fail "3 requests of the bench file: $b"
grep -Eq '^TTFT +mean +0\.117 s ' <<<"$b" || fail "bench TTFT mean (0.05+0.1+0.2)/3: $b"
grep -A1 '^E2E ' <<<"$b" | grep -Eq '^ +p50 +0\.140 s ' || fail "bench E2E p50 = 0.1 + 2 x 0.02: $b"
grep -q '^queue  (not in the measured file)' <<<"$b" || fail "no queueing delay for bench files: $b"

# -- --max-error: exit 1 above it, 0 below.
"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --max-error 0.001 >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] || fail "--max-error 0.001 should exit 1"
grep -q 'exceeds --max-error' "$tmp/e" || fail "the exceeded metric is named: $(cat "$tmp/e")"
"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --max-error 1e9 >/dev/null \
  || fail "--max-error 1e9 should pass"

# -- bad input: exit 2, one line naming the file (and line and key) or
# flag, nothing written (errors/validate_measured.cases).
printf '{"input_toks": 5, "output_toks": 2, "queued_ts": 1}\n' >"$tmp/bad.jsonl"
printf 'hello\n' >"$tmp/what.txt"
run_error_cases "$src/tests/golden/errors/validate_measured.cases"
exit 0
