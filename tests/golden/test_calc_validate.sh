#!/usr/bin/env bash
# kvsim validate --startup against ../shared/validation (skipped when absent):
# the per-row table, the median line, --json, --max-error, and input errors.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure, 77 to skip.
set -u
kvsim=$1
src=$2
shared=$src/../shared/validation
csv=$shared/vllm_startup_logs.csv
meta=$shared/llmservingsim/RTX4090/Llama-3.1-8B/vllm/meta.json
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ ! -r "$csv" ] || [ ! -r "$meta" ]; then
  echo "skip: $csv or $meta is absent"
  exit 77
fi

out=$("$kvsim" validate --startup "$csv" --meta "$meta") || fail "validate exited $?"
grep -q '^row ' <<<"$out" || fail "no table header: $out"
grep -Eq '^meta +meta vLLM 0.19.0 +V1 +llama-3.1-8b +rtx4090 ' <<<"$out" || fail "no RTX4090 run row: $out"
grep -Eq '^skipped row [0-9]+ \(.*\): ' <<<"$out" || fail "skipped rows carry a reason: $out"
grep -Eq '^Median absolute error of the prediction \(b\): [0-9.]+% over [0-9]+ rows$' <<<"$out" \
  || fail "no median line: $out"

# Issue 2's target: a median error of the pure prediction of at most 5 %.
"$kvsim" validate --startup "$csv" --meta "$meta" --max-error 5 >/dev/null || fail "median error above 5 %"

json=$("$kvsim" validate --startup "$csv" --meta "$meta" --json) || fail "validate --json exited $?"
grep -Eq '"median_abs_error_pct":[[:space:]]*[0-9.]+' <<<"$json" || fail "JSON median missing"
grep -Eq '"with_overrides":' <<<"$json" || fail "JSON rows with measured overrides missing"
grep -Eq '"skipped":' <<<"$json" || fail "JSON skipped rows missing"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kvsim" validate --startup "$tmp/none.csv" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "missing file must exit 2"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "--startup: $tmp/none.csv: cannot open" "$tmp/err" \
  || fail "missing file error: $(cat "$tmp/err")"
printf 'a,b\n1,2\n' >"$tmp/bad.csv"
"$kvsim" validate --startup "$tmp/bad.csv" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "missing column 'source_url'" "$tmp/err" || fail "bad header error: $(cat "$tmp/err")"
"$kvsim" validate >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "--startup FILE is required" "$tmp/err" || fail "no mode: $(cat "$tmp/err")"
echo "ok"
