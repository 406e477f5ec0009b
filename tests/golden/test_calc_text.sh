#!/usr/bin/env bash
# kvsim calc text output: the engine's start-up lines ("Available KV cache
# memory", "GPU KV cache size", "Maximum concurrency" of vLLM V1).
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --max-model-len 8192) || fail "calc exited $?"
grep -Eq '^Available KV cache memory: [0-9]+\.[0-9]{2} GiB$' <<<"$out" || fail "no 'Available KV cache memory' line: $out"
grep -Eq '^GPU KV cache size: [0-9]{1,3}(,[0-9]{3})* tokens$' <<<"$out" || fail "no 'GPU KV cache size' line: $out"
grep -Eq '^Maximum concurrency for 8,192 tokens per request: [0-9]+\.[0-9]{2}x$' <<<"$out" \
  || fail "no 'Maximum concurrency' line: $out"
grep -q 'KV cache per token: 131,072 bytes' <<<"$out" || fail "Llama-3.1-8B is 131,072 B/token: $out"

# The measured overheads of vllm#10511 (V0, H100 79.22 GiB) give its 53.29 GiB.
out=$("$kvsim" calc --model llama-3-8b --engine vllm-v0 --gpu-memory-gib 79.22 --weights-gib 14.96 \
  --non-torch-gib 1.79 --activation-gib 1.26) || fail "V0 calc exited $?"
grep -q '^Available KV cache memory: 53.29 GiB$' <<<"$out" || fail "V0 overrides should give 53.29 GiB: $out"
grep -Eq '^# cuda blocks: [0-9]+$' <<<"$out" || fail "V0 prints its block count: $out"
grep -Eq '^Maximum concurrency for 8,192 tokens per request: [0-9]+\.[0-9]{2}x$' <<<"$out" \
  || fail "V0 concurrency line: $out"

# A plan that does not fit says so in the engine's words, and how long would fit.
out=$("$kvsim" calc --model llama-3.1-8b --gpu rtx4090 --max-model-len 131072) || fail "non-fitting calc must exit 0 without --strict"
grep -q "ValueError: To serve at least one request with the models's max seq len (131072)" <<<"$out" \
  || fail "no engine error text: $out"
grep -Eq '^Largest max_model_len that fits: [0-9,]+$' <<<"$out" || fail "no largest fitting length: $out"

# Reverse mode.
out=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --target-concurrency 64 --seq-len 8192) \
  || fail "reverse calc exited $?"
grep -q '^Reverse: 64 requests x 8192 tokens need 64.00 GiB of KV cache per GPU at TP 1' <<<"$out" \
  || fail "reverse line: $out"
grep -q '^Smallest TP on h100-sxm that fits: 2$' <<<"$out" || fail "min GPUs line: $out"
echo "ok"
