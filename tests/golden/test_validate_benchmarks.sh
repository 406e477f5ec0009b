#!/usr/bin/env bash
# kvsim validate --measured and kvsim calibrate on benchmark results,
# from the hand-made fixtures of tests/golden/fidelity/: a vLLM
# --save-result JSON without --save-detailed (aggregates), SGLang
# bench_serving output (two runs appended; the last is read), an aiperf
# profile_export.jsonl. Formats detected by content, the measured side as
# the file states it, arrivals replayed as the benchmark drove them.
# $1 = kvsim binary, $2 = source dir.
set -u
kvsim=$1
d=$2/tests/golden/fidelity
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
syn="$d/scenario-synthetic.json"

# vLLM aggregates: mean / median / p99 as stated (ms -> s), p90 not stated.
out=$("$kvsim" validate --measured "$d/vllm-aggregates.json" "$syn") || fail "vLLM aggregates exited $?"
grep -Eq '^measured: .*vllm-aggregates.json \(vllm-bench, 6 finished requests\)$' <<<"$out" || fail "header: $out"
grep -Eq '^compared: +the stated aggregates; not compared: p90' <<<"$out" || fail "what is compared: $out"
grep -Eq '^replay: +arrivals as the benchmark drove them: 8 requests at 4 req/s, Gamma' <<<"$out" || fail "replay: $out"
grep -Eq '^simulated: .* \(8 finished' <<<"$out" || fail "the 8 requests sent are simulated: $out"
grep -Eq '^TTFT +mean +0\.080 s ' <<<"$out" || fail "TTFT mean 80 ms: $out"
grep -Eq '^ +p90 +- ' <<<"$out" || fail "p90 shown as not stated: $out"
grep -Eq '^E2E +mean +0\.836 s ' <<<"$out" || fail "E2E mean from mean_e2el_ms: $out"
json=$("$kvsim" validate --measured "$d/vllm-aggregates.json" "$syn" --json) || fail "--json exited $?"
grep -q '"compared":[[:space:]]*"aggregates (no per-request lists)"' <<<"$json" || fail "JSON compared: $json"
m=$(awk '$1 == "\"ttft_p90\":" { on = 1 } on && $1 == "\"measured\":" { print $2; exit }' <<<"$json")
[ "$m" = "null," ] || fail "ttft_p90 measured is null in JSON, got $m"

# SGLang: the second (last) run, inf rate with max_concurrency 4.
out=$("$kvsim" validate --measured "$d/sglang-bench.jsonl" "$syn") || fail "SGLang exited $?"
grep -Eq '\(sglang-bench, 8 finished requests\)$' <<<"$out" || fail "SGLang header: $out"
grep -Eq '^run: +2 of 2 appended' <<<"$out" || fail "the last run: $out"
grep -Eq 'closed-loop clients \(4 clients\)' <<<"$out" || fail "4 concurrent clients: $out"
grep -Eq '^TTFT +mean +0\.095 s ' <<<"$out" || fail "the last run's TTFT: $out"

# aiperf: per request, client-side; the cancelled record is not a request.
out=$("$kvsim" validate --measured "$d/aiperf.jsonl" "$d/scenario.json") || fail "aiperf exited $?"
grep -Eq '\(aiperf, 3 finished requests\)$' <<<"$out" || fail "aiperf header: $out"
grep -Eq '^TTFT +mean +0\.060 s ' <<<"$out" || fail "TTFT (50 + 100 + 30) / 3 ms: $out"
grep -Eq '^TPOT +mean +10\.000 ms ' <<<"$out" || fail "TPOT 10 ms: $out"
grep -q '^queue  (not in the measured file)' <<<"$out" || fail "no queueing delay: $out"
"$kvsim" trace stats "$d/aiperf.jsonl" | grep -q '^requests: 3$' || fail "aiperf read as a trace"

# kvsim calibrate takes all three.
"$kvsim" calibrate --gpu h100-sxm --fit frontend_us --measured "$d/vllm-aggregates.json" --scenario "$syn" \
  --measured "$d/sglang-bench.jsonl" --scenario "$syn" --measured "$d/aiperf.jsonl" --scenario "$d/scenario.json" \
  --out "$tmp/fit.json" >/dev/null || fail "calibrate on the three formats exited $?"
grep -q '"source": "kvsim calibrate (3 per-request run' "$tmp/fit.json" || fail "calibrate used 3 runs: $(grep source "$tmp/fit.json")"

# A bad run: exit 2, one line naming file and line.
printf '{"mean_ttft_ms": 5, "completed": 1}\n{"mean_ttft_ms": "slow", "completed": 1}\n' >"$tmp/bad.json"
err=$("$kvsim" validate --measured "$tmp/bad.json" "$syn" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "bad run: exit $rc"
[ "$(wc -l <<<"$err")" -eq 1 ] && grep -q 'bad.json:2: "mean_ttft_ms": not a number' <<<"$err" || fail "message: $err"
echo "benchmark results: vLLM aggregates, SGLang appended runs, aiperf records read, replayed and calibrated"
