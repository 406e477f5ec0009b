#!/usr/bin/env bash
# Bad input: exactly one line on stderr, exit 2, naming what is wrong.
# --strict: exit 1 on a plan that does not fit.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib_expect_error.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib_error_cases.sh"

# Fixtures of the cases (errors/calc_errors.cases).
printf '{"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8,\n "num_hidden_layers": "32",\n "intermediate_size": 2048, "vocab_size": 1000}\n' >"$tmp/wrong.json"
printf '{"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8,\n "intermediate_size": 2048, "vocab_size": 1000}\n' >"$tmp/missing.json"
printf '{"model_type": "llama",\n "hidden_size": 1024,,\n}\n' >"$tmp/bad.json"
mkdir "$tmp/empty"
base='"model_type": "llama", "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 2048, "vocab_size": 1000, "num_hidden_layers": 2'
printf '{%s, "hidden_size": 1e12}\n' "$base" >"$tmp/hidden.json"
printf '{%s, "hidden_size": 1024, "sliding_window": 1e74}\n' "$base" >"$tmp/window.json"
printf '{%s, "hidden_size": 1024, "max_position_embeddings": 9223372036854775807}\n' "$base" >"$tmp/mpe.json"
printf '{"name": "g", "generation": "hopper", "memory_total_bytes": 1e18, "hbm_bandwidth_GBps": 3350, "bf16_tflops": 989}\n' >"$tmp/gpu.json"

"$kvsim" calc --engine sglang --chunked-prefill-size -1 >/dev/null || fail "--chunked-prefill-size -1 (off) was refused"
"$kvsim" calc --engine sglang --gpu-memory-utilization 0.5 | grep -q "^vLLM V1, same model and GPUs at gpu_memory_utilization 0.50: " \
  || fail "--gpu-memory-utilization 0.5: no vLLM side-by-side"
"$kvsim" calc --engine sglang --tp-size 0 --tensor-parallel-size 1 >/dev/null || fail "the last of two TP aliases did not win"
# --compare-engines' TGI row names the flag typed, not TGI's --num-shard.
"$kvsim" calc --compare-engines --tensor-parallel-size 3 | grep -Eq '^tgi .*  --tensor-parallel-size: 3 does not divide' \
  || fail "the TGI row does not name --tensor-parallel-size: $("$kvsim" calc --compare-engines --tensor-parallel-size 3)"
"$kvsim" calc --engine tgi --max-total-tokens 2 | grep -q "^max_total_tokens 2, max_input_tokens 1$" \
  || fail "--max-total-tokens 2 did not leave an input limit of 1"
"$kvsim" calc --engine tgi --max-total-tokens 8192 --max-input-tokens 4096 --max-batch-prefill-tokens 4096 \
  --json >"$tmp/tgi.json" || fail "in-range TGI limits were refused"
grep -Eq '"max_total_tokens":[[:space:]]+8192,' "$tmp/tgi.json" || fail "--max-total-tokens 8192 not applied: $(cat "$tmp/tgi.json")"
"$kvsim" calc --engine hf-transformers --cache quantized --nbits 2 --max-cache-len 4096 --residual-length 0 \
  --json >"$tmp/hf.json" || fail "in-range HF flags were refused"
grep -Eq '"nbits":[[:space:]]+2,' "$tmp/hf.json" || fail "--nbits 2 not applied: $(cat "$tmp/hf.json")"
grep -Eq '"max_cache_len":[[:space:]]+4096,' "$tmp/hf.json" || fail "--max-cache-len 4096 not applied: $(cat "$tmp/hf.json")"
# In range, each is taken as given.
"$kvsim" calc --block-size 32 --max-num-seqs 64 --max-num-batched-tokens 4096 --max-model-len 8192 \
  --weights-gib 0 --target-concurrency 2 --json >"$tmp/ok.json" || fail "in-range flags were refused"
grep -Eq '"block_size":[[:space:]]+32,' "$tmp/ok.json" || fail "--block-size 32 not applied: $(cat "$tmp/ok.json")"
grep -Eq '"max_num_seqs":[[:space:]]+64,' "$tmp/ok.json" || fail "--max-num-seqs 64 not applied"

# Every engine takes --quantization fp8 (an empty value is refused: the cases).
for e in vllm-v1 sglang tgi hf-transformers; do
  "$kvsim" calc --engine $e --quantization fp8 >/dev/null || fail "--engine $e --quantization fp8 was refused"
done

# The error cases, one per line: errors/calc_errors.cases.
run_error_cases "$src/tests/golden/errors/calc_errors.cases"

# --strict turns "does not fit" into exit 1; without it the plan is a result.
"$kvsim" calc --gpu rtx4090 --max-model-len 131072 --strict >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || fail "--strict on a plan that does not fit exited $rc, want 1"
"$kvsim" calc --gpu rtx4090 --max-model-len 8192 --strict >/dev/null 2>&1 || fail "--strict on a fitting plan must exit 0"
echo "ok"
