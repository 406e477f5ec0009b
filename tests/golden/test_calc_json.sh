#!/usr/bin/env bash
# kvsim calc --json: the keys of the stable contract (summary.json's memory
# plan carries the same, docs/scenario.md "Outputs").
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --max-model-len 8192 --json) || fail "calc --json exited $?"
for key in per_token_kv_bytes block_bytes num_layers kv_heads_per_rank head_dim total_memory_bytes \
  requested_bytes weights_bytes activation_bytes non_torch_bytes cuda_graph_bytes available_kv_bytes \
  num_gpu_blocks kv_cache_tokens max_concurrency fits max_model_len_fit; do
  grep -Eq "^[[:space:]]*\"$key\":" <<<"$out" || fail "key $key missing: $out"
done
grep -Eq '"per_token_kv_bytes":[[:space:]]*131072,' <<<"$out" || fail "per_token_kv_bytes should be 131072"
grep -Eq '"fits":[[:space:]]*true' <<<"$out" || fail "8k Llama-3.1-8B fits an H100"
grep -Eq '"vllm_version":[[:space:]]*"0\.20\.0"' <<<"$out" || fail "the release whose rules apply: $out"
out2=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --max-model-len 8192 --json --vllm-version v0.9.1) || fail "exit $?"
grep -Eq '"vllm_version":[[:space:]]*"0\.9\.1"' <<<"$out2" || fail "--vllm-version shown: $out2"
[ "$(head -c1 <<<"$out")" = "{" ] || fail "output is one JSON object"
[ "$(tail -n1 <<<"$out")" = "}" ] || fail "output is one JSON object"

out=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --json --target-concurrency 8 --seq-len 4096) \
  || fail "reverse --json exited $?"
for key in required_kv_bytes required_memory_bytes min_gpus; do
  grep -Eq "^[[:space:]]*\"$key\":" <<<"$out" || fail "reverse key $key missing"
done
grep -Eq '"required_kv_bytes":[[:space:]]*4294967296,' <<<"$out" || fail "8 x 4096 tokens x 128 KiB = 4 GiB"

out=$("$kvsim" calc --model llama-3.1-8b --gpu rtx4090 --max-model-len 131072 --json) || fail "exit $?"
grep -Eq '"fits":[[:space:]]*false' <<<"$out" || fail "128k on a 4090 does not fit"
grep -Eq '"error":[[:space:]]*"To serve at least one request' <<<"$out" || fail "error text in JSON"
echo "ok"
