#!/usr/bin/env bash
# kvsim calc --model <Hugging Face checkpoint id>: the precision and variant
# suffixes of the id decide the weights and the context (docs/engines.md,
# "Checkpoints: what the HF id says"); what the id cannot settle is a note on stderr
# or an error, never a silent bf16 base model.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib_expect_error.sh
. "$2/tests/golden/lib_expect_error.sh"
# shellcheck source=lib_error_cases.sh
. "$2/tests/golden/lib_error_cases.sh"

# Qwen2.5-32B-Instruct-AWQ on an L40S: 4-bit AWQ weights (18.01 GiB =
# 19.34 GB, where the bf16 base model is 61 GiB and does not fit) and the
# Instruct config's 32,768-token context.
"$kvsim" calc --model Qwen/Qwen2.5-32B-Instruct-AWQ --gpu l40s >"$tmp/out" 2>"$tmp/err" \
  || fail "AWQ calc exited $?: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "an exact id prints no note: $(cat "$tmp/err")"
grep -q "max_model_len 32,768, .*, quantization awq$" "$tmp/out" || fail "AWQ header: $(head -1 "$tmp/out")"
grep -q "^model weights take 18.01GiB" "$tmp/out" || fail "AWQ weights: $(sed -n 4p "$tmp/out")"
"$kvsim" calc --model Qwen/Qwen2.5-32B-Instruct-AWQ --gpu l40s --json >"$tmp/json" || fail "json exit $?"
grep -Eq '"weights_bytes":[[:space:]]*193[0-9]{8},' "$tmp/json" || fail "AWQ weights ~19.3 GB: $(grep weights_bytes "$tmp/json")"
grep -Eq '"fits":[[:space:]]*true' "$tmp/json" || fail "the AWQ checkpoint fits an L40S"

# FP8: 8.50 GiB, as --quantization fp8 plans it (the bf16 model is 14.99).
"$kvsim" calc --model meta-llama/Llama-3.1-8B-Instruct-FP8 --gpu h100-sxm >"$tmp/fp8" || fail "fp8 exit $?"
"$kvsim" calc --model llama-3.1-8b --quantization fp8 --gpu h100-sxm >"$tmp/flag" || fail "flag exit $?"
grep -q "^model weights take 8.50GiB" "$tmp/fp8" || fail "FP8 weights: $(sed -n 4p "$tmp/fp8")"
cmp -s <(sed 1d "$tmp/fp8") <(sed 1d "$tmp/flag") || fail "the -FP8 id plans what --quantization fp8 plans"

# -Instruct keeps the Instruct context; the base id the base one.
"$kvsim" calc --model Qwen/Qwen2.5-7B-Instruct --gpu h100-sxm | grep -q "max_model_len 32,768," \
  || fail "Qwen2.5-7B-Instruct is a 32k model"
"$kvsim" calc --model Qwen/Qwen2.5-7B --gpu h100-sxm | grep -q "max_model_len 131,072," \
  || fail "Qwen2.5-7B base is a 128k model"

# An assumption is stated once on stderr; the plan still goes to stdout.
"$kvsim" calc --model Qwen/Qwen3-8B-Base --gpu h100-sxm >"$tmp/out" 2>"$tmp/err" || fail "Base exit $?"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "one note line: $(cat "$tmp/err")"
grep -q "^note: Qwen/Qwen3-8B-Base resolved to qwen3-8b (assumed" "$tmp/err" || fail "note: $(cat "$tmp/err")"
grep -q "^Model qwen3-8b on h100-sxm" "$tmp/out" || fail "plan printed"

# What kvsim does not model is an error naming the id
# (errors/calc_checkpoints.cases).
run_error_cases "$2/tests/golden/errors/calc_checkpoints.cases"
echo "ok"
