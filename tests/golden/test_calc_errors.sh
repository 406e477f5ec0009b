#!/usr/bin/env bash
# Bad input: exactly one line on stderr, exit 2, naming what is wrong.
# --strict: exit 1 on a plan that does not fit.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_error PATTERN ARGS...: exit 2, one stderr line matching PATTERN, nothing on stdout.
expect_error() {
  local pattern=$1; shift
  "$kvsim" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "'$*' exited $rc, want 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*' printed $(wc -l <"$tmp/err") lines on stderr: $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "'$*' printed on stdout: $(cat "$tmp/out")"
  grep -Eq -- "$pattern" "$tmp/err" || fail "'$*' stderr does not match /$pattern/: $(cat "$tmp/err")"
}

expect_error "unknown model 'llama-3.1-8x'.*closest: .*llama-3.1-8b" calc --model llama-3.1-8x
expect_error "unknown GPU 'h1000'" calc --gpu h1000

printf '{"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8,\n "num_hidden_layers": "32",\n "intermediate_size": 2048, "vocab_size": 1000}\n' >"$tmp/wrong.json"
expect_error "num_hidden_layers: expected an integer" calc --model "$tmp/wrong.json"
printf '{"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8,\n "intermediate_size": 2048, "vocab_size": 1000}\n' >"$tmp/missing.json"
expect_error "missing field 'num_hidden_layers'" calc --model "$tmp/missing.json"
printf '{"model_type": "llama",\n "hidden_size": 1024,,\n}\n' >"$tmp/bad.json"
expect_error "bad.json:2: invalid JSON" calc --model "$tmp/bad.json"
mkdir "$tmp/empty"
expect_error "config.json: cannot open" calc --model "$tmp/empty"

expect_error "--gpu-memory-utilization: 1.5 is outside \(0, 1\]" calc --gpu-memory-utilization 1.5
expect_error "--gpu-memory-utilization: 0 is outside \(0, 1\]" calc --gpu-memory-utilization 0
expect_error "--tensor-parallel-size: 3 does not divide the model's 32 attention heads" calc --tensor-parallel-size 3
expect_error "--kv-cache-dtype: unknown dtype 'fp7'" calc --kv-cache-dtype fp7
expect_error "unknown flag '--max-model-length' \(did you mean '--max-model-len'\?\)" calc --max-model-length 8192
expect_error "--max-model-len: expected an integer, got 'abc'" calc --max-model-len abc
expect_error "--engine: unknown engine 'vllm-v3'" calc --engine vllm-v3

# --strict turns "does not fit" into exit 1; without it the plan is a result.
"$kvsim" calc --gpu rtx4090 --max-model-len 131072 --strict >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || fail "--strict on a plan that does not fit exited $rc, want 1"
"$kvsim" calc --gpu rtx4090 --max-model-len 8192 --strict >/dev/null 2>&1 || fail "--strict on a fitting plan must exit 0"
echo "ok"
