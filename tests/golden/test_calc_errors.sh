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

# Out-of-range values (found by fuzzing): one line naming the flag or key and
# its range, where they used to overflow into negative GiB, negative block
# counts or a plan that "fits".
expect_error "--weights-gib: 1e\+10 GiB is out of range \[0, 4096\]" calc --weights-gib 1e10
expect_error "--activation-gib: .* is out of range \[0, 4096\]" calc --activation-gib 1e12
expect_error "--gpu-memory-gib \(hardware.gpu_memory_gib\): 100000 GiB is outside \[1/1024, 4096\]" calc --gpu-memory-gib 1e5
expect_error "--gpu-memory-gib \(hardware.gpu_memory_gib\): 1e\+12 GiB is outside \[1/1024, 4096\]" calc --gpu-memory-gib 1e12
# One range, named alike by calc and run (calc accepted 0.0005 where run
# refused it; run named [1/1024, 65536] past 65536 and calc (0, 4096]).
for g in 0.0005 5000 65537; do
  expect_error "--gpu-memory-gib \(hardware.gpu_memory_gib\): $g GiB is outside \[1/1024, 4096\]" calc --gpu-memory-gib $g
  expect_error "hardware.gpu_memory_gib: $g GiB is outside \[1/1024, 4096\]" \
    run "$src/tests/golden/data/small-synthetic.json" --set hardware.gpu_memory_gib=$g --out "$tmp/run"
done
expect_error "--num-gpu-blocks-override: 9223372036854775807 is out of range \[1, 2147483647\]" \
  calc --num-gpu-blocks-override 9223372036854775807
expect_error "--kv-cache-memory-bytes: 9223372036854775807 is out of range \[1, 4398046511104\]" \
  calc --kv-cache-memory-bytes 9223372036854775807
expect_error "--target-concurrency: 9223372036854775807 is out of range" \
  calc --target-concurrency 9223372036854775807 --seq-len 8192
base='"model_type": "llama", "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 2048, "vocab_size": 1000, "num_hidden_layers": 2'
printf '{%s, "hidden_size": 1e12}\n' "$base" >"$tmp/hidden.json"
expect_error "hidden.json: hidden_size: 1000000000000 is out of range \[1, 1048576\]" calc --model "$tmp/hidden.json"
printf '{%s, "hidden_size": 1024, "sliding_window": 1e74}\n' "$base" >"$tmp/window.json"
expect_error "window.json: sliding_window: 1e\+74 is out of range \[0, 1073741824\]" calc --model "$tmp/window.json"
printf '{%s, "hidden_size": 1024, "max_position_embeddings": 9223372036854775807}\n' "$base" >"$tmp/mpe.json"
expect_error "mpe.json: max_position_embeddings: 9.22.*e\+18 is out of range \[0, 1073741824\]" calc --model "$tmp/mpe.json"
printf '{"name": "g", "generation": "hopper", "memory_total_bytes": 1e18, "hbm_bandwidth_GBps": 3350, "bf16_tflops": 989}\n' >"$tmp/gpu.json"
expect_error "gpu.json: memory_total_bytes: 1e\\+18 is out of range \[1073741824, 4398046511104\]" \
  calc --gpu "$tmp/gpu.json"
# A CPU tier of 1e12 GiB once printed "CPU blocks: -4398046511104": the plan
# sizes the tier with checked arithmetic, for calc and run alike.
expect_error "--swap-space \(engine.swap_space\): 1e\+12 GiB is out of range \[0, 4096\]" \
  calc --swap-space 1e12
# A scenario's error names its key and file rather than the flag.
expect_error "small-synthetic.json: engine.kv_offloading_size: 1e\+12 GiB is out of range" \
  run "$src/tests/golden/data/small-synthetic.json" --set engine.kv_offloading_size=1e12 --out "$tmp/run"
expect_error "small-synthetic.json: engine.swap_space: 1e\+12 GiB" \
  run "$src/tests/golden/data/small-synthetic.json" --set engine.profile=vllm-v0 --set engine.swap_space=1e12 --out "$tmp/run"
[ ! -e "$tmp/run" ] || fail "a refused run wrote outputs"
# Values range-checked before they narrow to the plan's fields (1e12 GiB
# overflowed the byte count; 1e15 truncated to an unrelated int).
expect_error "--kv-quant-group: 1000000000000000 is out of range \[1, 1048576\]" \
  calc --kv-quant-group 1000000000000000
expect_error "engine.kv_quant_group: 1000000000000000 is out of range \[1, 1048576\]" \
  run "$src/tests/golden/data/small-synthetic.json" --set engine.kv_quant_group=1e15 --out "$tmp/run"
expect_error "engine.kv_residual_tokens: 1000000000000000 is out of range \[0, 1073741824\]" \
  run "$src/tests/golden/data/small-synthetic.json" --set engine.kv_residual_tokens=1e15 --out "$tmp/run"

# A flag's default (-1: predict, 0: the engine's) is not a value to give:
# given, it is out of range and named, never silently taken for "unset".
for f in --gpu-memory-gib; do
  expect_error "^kvsim calc: error: $f \(hardware.gpu_memory_gib\): -1 GiB is outside \[1/1024, 4096\]$" calc $f -1
  expect_error "^kvsim calc: error: $f \(hardware.gpu_memory_gib\): 0 GiB is outside \[1/1024, 4096\]$" calc $f 0
done
for f in --weights-gib --activation-gib --non-torch-gib --cuda-graph-gib; do
  expect_error "^kvsim calc: error: $f: -1 GiB is out of range \[0, 4096\]$" calc $f -1
  expect_error "^kvsim calc: error: $f: -2 GiB is out of range \[0, 4096\]$" calc $f -2
done
for e in sglang tgi hf-transformers; do
  expect_error "^kvsim calc: error: --gpu-memory-gib \(hardware.gpu_memory_gib\): -1 GiB is outside \[1/1024, 4096\]$" \
    calc --engine $e --gpu-memory-gib -1
done
expect_error "^kvsim calc: error: --gpu-memory-gib \(hardware.gpu_memory_gib\): -1 GiB is outside \[1/1024, 4096\]$" \
  calc --compare-engines --gpu-memory-gib -1
for e in tgi hf-transformers; do
  for f in --weights-gib --activation-gib --non-torch-gib; do
    expect_error "^kvsim calc: error: $f: -1 GiB is out of range \[0, 4096\]$" calc --engine $e $f -1
  done
done
expect_error "^kvsim calc: error: --mem-fraction-static: -1 is outside \(0, 1\)$" \
  calc --engine sglang --mem-fraction-static -1
expect_error "^kvsim calc: error: --avail-gib-before-load: -1 GiB is out of range \[0, 4096\]$" \
  calc --engine sglang --avail-gib-before-load -1 --avail-gib-after-load 10
expect_error "^kvsim calc: error: --target-concurrency: -1 is out of range \[1, 1073741824\]$" \
  calc --target-concurrency -1
expect_error "^kvsim calc: error: --target-concurrency: -9223372036854775808 is out of range" \
  calc --target-concurrency -9223372036854775808 --seq-len 8192
expect_error "^kvsim calc: error: --target-concurrency: 0 is out of range \[1, 1073741824\]$" \
  calc --target-concurrency 0
expect_error "^kvsim calc: error: --seq-len: 0 is out of range \[1, 1073741824\]$" \
  calc --target-concurrency 4 --seq-len 0
expect_error "^kvsim calc: error: --max-model-len: 0 is out of range \[1, 1073741824\]$" calc --max-model-len 0
# Each count names its flag and range, whether 0, negative (once "lengths,
# sizes and counts must be >= 0") or beyond int (--block-size 4294967312
# once wrapped to 16).
for v in 0 -1 4097 4294967312 4294967297; do
  expect_error "^kvsim calc: error: --block-size: $v is out of range \[1, 4096\]$" calc --block-size $v
done
for v in 0 -1; do
  expect_error "^kvsim calc: error: --max-num-seqs: $v is out of range \[1, 1048576\]$" calc --max-num-seqs $v
  expect_error "^kvsim calc: error: --max-num-batched-tokens: $v is out of range \[1, 1073741824\]$" \
    calc --max-num-batched-tokens $v
  expect_error "^kvsim calc: error: --kv-cache-memory-bytes: $v is out of range \[1, 4398046511104\]$" \
    calc --kv-cache-memory-bytes $v
  expect_error "^kvsim calc: error: --num-gpu-blocks-override: $v is out of range \[1, 2147483647\]$" \
    calc --num-gpu-blocks-override $v
done
expect_error "^kvsim calc: error: --max-num-seqs: 4294967297 is out of range \[1, 1048576\]$" \
  calc --max-num-seqs 4294967297
# SGLang's counts likewise, each named (once "lengths, sizes and counts must
# be >= 0"); --chunked-prefill-size -1 stays "off".
for v in 0 -3 4294967297; do
  expect_error "^kvsim calc: error: --page-size: $v is out of range \[1, 4096\]$" calc --engine sglang --page-size $v
done
expect_error "^kvsim calc: error: --context-length: 0 is out of range \[1, 1073741824\]$" \
  calc --engine sglang --context-length 0
expect_error "^kvsim calc: error: --max-running-requests: -1 is out of range \[1, 1048576\]$" \
  calc --engine sglang --max-running-requests -1
expect_error "^kvsim calc: error: --chunked-prefill-size: 0 is out of range \(-1 for off, or \[1, 1073741824\]\)$" \
  calc --engine sglang --chunked-prefill-size 0
"$kvsim" calc --engine sglang --chunked-prefill-size -1 >/dev/null || fail "--chunked-prefill-size -1 (off) was refused"
# --gpu-memory-utilization (the vLLM side-by-side's) outside (0, 1] once
# silently dropped the side-by-side; TP and PP name the value at fault.
for v in 0 -1 1.5; do
  expect_error "^kvsim calc: error: --gpu-memory-utilization: $v is outside \(0, 1\]$" \
    calc --engine sglang --gpu-memory-utilization $v
done
"$kvsim" calc --engine sglang --gpu-memory-utilization 0.5 | grep -q "^vLLM V1, same model and GPUs at gpu_memory_utilization 0.50: " \
  || fail "--gpu-memory-utilization 0.5: no vLLM side-by-side"
# TP named as typed: SGLang's --tp-size is its own spelling (it was
# reported as --tensor-parallel-size); of both, the one given last holds the value.
expect_error "^kvsim calc: error: --tp-size: 0 is out of range \[1, 1024\]$" calc --engine sglang --tp-size 0
expect_error "^kvsim calc: error: --tp-size: 0 is out of range \[1, 1024\]$" \
  calc --engine sglang --tensor-parallel-size 2 --tp-size 0
expect_error "^kvsim calc: error: --tensor-parallel-size: 0 is out of range \[1, 1024\]$" \
  calc --engine sglang --tp-size 2 --tensor-parallel-size 0
"$kvsim" calc --engine sglang --tp-size 0 --tensor-parallel-size 1 >/dev/null || fail "the last of two TP aliases did not win"
# --compare-engines' TGI row names the flag typed, not TGI's --num-shard.
"$kvsim" calc --compare-engines --tensor-parallel-size 3 | grep -Eq '^tgi .*  --tensor-parallel-size: 3 does not divide' \
  || fail "the TGI row does not name --tensor-parallel-size: $("$kvsim" calc --compare-engines --tensor-parallel-size 3)"
expect_error "^kvsim calc: error: --pipeline-parallel-size: 2000 is out of range \[1, 1024\]$" \
  calc --engine sglang --pipeline-parallel-size 2000
# TGI's token limits: 0 is only the launcher's default (absent); given, it
# was silently that default.
for f in --max-input-tokens --max-total-tokens --max-batch-prefill-tokens --max-batch-total-tokens; do
  for v in 0 -1 1073741825; do
    expect_error "^kvsim calc: error: $f: $v is out of range \[1, 1073741824\]$" calc --engine tgi $f $v
  done
done
# The launcher's max_input_tokens < max_total_tokens: --max-total-tokens 1
# left a default input limit of 0 and a plan that "fit"; both given and
# equal was a plan that did not fit rather than the launcher's refusal.
expect_error "^kvsim calc: error: --max-total-tokens: 1 leaves max_input_tokens \(max_total_tokens - 1\) at 0; it must be >= 1 and < max_total_tokens$" \
  calc --engine tgi --max-total-tokens 1
for v in 4096 5000; do
  expect_error "^kvsim calc: error: --max-input-tokens: $v must be < --max-total-tokens 4096$" \
    calc --engine tgi --max-total-tokens 4096 --max-input-tokens $v
done
"$kvsim" calc --engine tgi --max-total-tokens 2 | grep -q "^max_total_tokens 2, max_input_tokens 1$" \
  || fail "--max-total-tokens 2 did not leave an input limit of 1"
"$kvsim" calc --engine tgi --max-total-tokens 8192 --max-input-tokens 4096 --max-batch-prefill-tokens 4096 \
  --json >"$tmp/tgi.json" || fail "in-range TGI limits were refused"
grep -Eq '"max_total_tokens":[[:space:]]+8192,' "$tmp/tgi.json" || fail "--max-total-tokens 8192 not applied: $(cat "$tmp/tgi.json")"
# HF Transformers: --max-cache-len 0 was silently max_position_embeddings;
# --nbits 0 or 3 was kept without --cache quantized, and 1000 was reported
# as -1; the cache's counts shared one message naming no value.
for v in 0 -1 1073741825; do
  expect_error "^kvsim calc: error: --max-cache-len: $v is out of range \[1, 1073741824\]$" \
    calc --engine hf-transformers --max-cache-len $v
done
for cache in dynamic quantized; do
  for v in 0 3 -1 1000; do
    expect_error "^kvsim calc: error: --nbits: $v is out of range \(2 or 4: transformers' quanto QuantizedCache\)$" \
      calc --engine hf-transformers --cache $cache --nbits $v
  done
done
# A scenario's engine.nbits likewise (1 and 5 once read "[2, 4]", as if 3 were allowed).
for v in 3 1; do
  expect_error "^kvsim run: error: .*scenario.json: engine.nbits: $v is out of range \(2 or 4: transformers' quanto QuantizedCache\)$" \
    run "$src/tests/golden/cases/hf-quantized/scenario.json" --set engine.nbits=$v --out "$tmp/hfrun"
done
[ ! -e "$tmp/hfrun" ] || fail "a refused engine.nbits wrote outputs"
expect_error "^kvsim calc: error: --q-group-size: 0 is out of range \[1, 1048576\]$" \
  calc --engine hf-transformers --cache quantized --q-group-size 0
expect_error "^kvsim calc: error: --residual-length: -1 is out of range \[0, 1073741824\]$" \
  calc --engine hf-transformers --cache quantized --residual-length -1
"$kvsim" calc --engine hf-transformers --cache quantized --nbits 2 --max-cache-len 4096 --residual-length 0 \
  --json >"$tmp/hf.json" || fail "in-range HF flags were refused"
grep -Eq '"nbits":[[:space:]]+2,' "$tmp/hf.json" || fail "--nbits 2 not applied: $(cat "$tmp/hf.json")"
grep -Eq '"max_cache_len":[[:space:]]+4096,' "$tmp/hf.json" || fail "--max-cache-len 4096 not applied: $(cat "$tmp/hf.json")"
# In range, each is taken as given.
"$kvsim" calc --block-size 32 --max-num-seqs 64 --max-num-batched-tokens 4096 --max-model-len 8192 \
  --weights-gib 0 --target-concurrency 2 --json >"$tmp/ok.json" || fail "in-range flags were refused"
grep -Eq '"block_size":[[:space:]]+32,' "$tmp/ok.json" || fail "--block-size 32 not applied: $(cat "$tmp/ok.json")"
grep -Eq '"max_num_seqs":[[:space:]]+64,' "$tmp/ok.json" || fail "--max-num-seqs 64 not applied"

# An empty --quantization= was silently "the model's own quantization",
# which only an absent flag means.
for e in vllm-v1 sglang tgi hf-transformers; do
  expect_error "^kvsim calc: error: --quantization: empty value \(omit the flag for the model's own, or give none, fp8, int8, awq, gptq, int4, mxfp4\)$" \
    calc --engine $e --quantization=
  expect_error "^kvsim calc: error: --quantization: empty value " calc --engine $e --quantization ""
  "$kvsim" calc --engine $e --quantization fp8 >/dev/null || fail "--engine $e --quantization fp8 was refused"
done
expect_error "^kvsim calc: error: --quantization: empty value " calc --compare-engines --quantization=

# --strict turns "does not fit" into exit 1; without it the plan is a result.
# --vllm-version: unparseable, or not a release whose sizing rules are modelled.
expect_error "^kvsim calc: error: --vllm-version: 'latest' is not a vLLM release X\.Y\.Z \(modelled: vllm-v1 0\.8\.0 to 0\.20\.x, vllm-v0 0\.6\.4 to 0\.10\.x\)$" \
  calc --vllm-version latest
expect_error "--vllm-version \(engine\.vllm_version\): 0\.7\.3 is not modelled for vllm-v1 \(modelled: 0\.8\.0 to 0\.20\.x\)" \
  calc --vllm-version 0.7.3
expect_error "0\.21\.0 is not modelled for vllm-v1 .*CUDA-graph estimate by default" calc --vllm-version 0.21.0
expect_error "0\.6\.3 is not modelled for vllm-v0 \(modelled: 0\.6\.4 to 0\.10\.x\)" \
  calc --engine vllm-v0 --vllm-version 0.6.3
"$kvsim" calc --gpu rtx4090 --max-model-len 131072 --strict >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || fail "--strict on a plan that does not fit exited $rc, want 1"
"$kvsim" calc --gpu rtx4090 --max-model-len 8192 --strict >/dev/null 2>&1 || fail "--strict on a fitting plan must exit 0"
echo "ok"
