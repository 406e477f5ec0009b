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

# The per-token line multiplies out, with each cache dtype's own element size.
grep -q '^KV cache per token: 131,072 bytes (32 layers x 8 KV heads x 128 head_dim x 2 (K,V) x 2 bytes); block: 2,097,152 bytes$' <<<"$out" \
  || fail "per-token factors: $out"
line() { "$kvsim" calc "$@" | sed -n 2p; }
[ "$(line --kv-cache-dtype fp8)" = "KV cache per token: 65,536 bytes (32 layers x 8 KV heads x 128 head_dim x 2 (K,V) x 1 byte); block: 1,048,576 bytes" ] \
  || fail "fp8 per-token line: $(line --kv-cache-dtype fp8)"
# int4: 128 x 0.5 byte + 2 groups of 64 x (fp16 scale + fp16 zero) = 72 bytes a head vector.
[ "$(line --kv-cache-dtype int4)" = "KV cache per token: 36,864 bytes (32 layers x 8 KV heads x 2 (K,V) x 72 bytes per head vector: 128 head_dim x 0.5 byte + 2 scale groups (of 64) x 4 bytes (fp16 scale, zero point)); block: 589,824 bytes" ] \
  || fail "int4 per-token line: $(line --kv-cache-dtype int4)"
# MLA: one latent of kv_lora_rank 512 + rope 64; V0 pads it to 256 bytes.
[ "$(line --model deepseek-v2-lite)" = "KV cache per token: 31,104 bytes (27 layers x 576 latent width x 1 (latent) x 2 bytes); block: 1,990,656 bytes" ] \
  || fail "MLA per-token line: $(line --model deepseek-v2-lite)"
grep -q '(27 layers x 576 latent width padded to 640 x 1 (latent) x 2 bytes)' <<<"$(line --model deepseek-v2-lite --engine vllm-v0)" \
  || fail "V0 MLA padding: $(line --model deepseek-v2-lite --engine vllm-v0)"
# Every per-token line of the catalog multiplies out (the product of its factors).
command -v python3 >/dev/null || { echo "python3 missing: the rest needs it" >&2; exit 77; }
lines=$(for m in "$2"/configs/models/*.json; do
  for d in auto fp8 int8 int4; do
    line --model "$(basename "$m" .json)" --kv-cache-dtype "$d" --max-model-len 4096
  done
done)
[ "$(wc -l <<<"$lines")" -ge 100 ] || fail "too few per-token lines: $lines"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%s\n' "$lines" >"$tmp"
python3 - "$tmp" <<'PY' || fail "a per-token line does not multiply out"
import re, sys
for l in open(sys.argv[1]).read().splitlines():
    total = int(re.match(r"KV cache per token: ([\d,]+) bytes", l).group(1).replace(",", ""))
    inner = l[l.index("(") + 1:l.rindex("); block")]
    if "vector:" in inner:
        head, vec = inner.split(" bytes per ")
        nums = [int(x) for x in re.findall(r"(\d+) (?:layers|KV heads|\(K,V\)|\(latent\))", head)]
        nums.append(int(head.rsplit(" x ", 1)[1]))
        w, e, g = re.findall(r": (\d+) \S+(?: width)? x ([\d.]+) byte \+ (\d+) scale groups?", vec)[0]
        assert int(w) * float(e) + int(g) * 4 == nums[-1], (l, w, e, g, nums)
    else:
        inner = re.sub(r"\d+ padded to ", "", inner)
        nums = [int(x) for x in re.findall(r"(\d+) (?:layers|KV heads|head_dim|latent width|\(K,V\)|\(latent\)|bytes?)", inner)]
    p = 1
    for n in nums:
        p *= n
    assert p == total, (l, p, total, nums)
PY

# Beside the engine's concurrency, the naive estimate and where the difference goes.
out=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --max-model-len 4096) || fail "calc 4096 exited $?"
grep -Eq '^Naive estimate: 71\.28 GiB \(total x utilization\) / 0\.50 GiB of KV per 4,096-token request = ~142 requests; the engine.s pool is smaller by weights 14\.99 GiB, activation peak [0-9.]+ GiB, non-torch memory [0-9.]+ GiB, CUDA graphs 0\.00 GiB \(not subtracted\)$' <<<"$out" \
  || fail "naive estimate line: $out"
out=$("$kvsim" calc --model llama-3.1-8b --max-model-len 4096 --estimate-cudagraphs) || fail "calc cudagraphs exited $?"
grep -Eq 'CUDA graphs [0-9.]+ GiB$' <<<"$out" || fail "subtracted graphs have no '(not subtracted)': $out"

# Reverse mode: --seq-len is the concurrency line's length, and the answer
# counts GPUs over TP degrees and replicas.
out=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --target-concurrency 64 --seq-len 8192) \
  || fail "reverse calc exited $?"
grep -q '^Reverse: 64 requests x 8,192 tokens need 64.00 GiB of KV cache per GPU at TP 1' <<<"$out" \
  || fail "reverse line: $out"
grep -Eq '^Maximum concurrency for 8,192 tokens per request: 51\.[0-9]{2}x$' <<<"$out" || fail "concurrency at --seq-len: $out"
grep -q '^Smallest fit: 2 x h100-sxm as 2 replicas of TP 1 (each holds 51 requests of 8,192 tokens)$' <<<"$out" \
  || fail "smallest layout line: $out"
out=$("$kvsim" calc --model llama-3.1-8b --gpu l40s --target-concurrency 100 --seq-len 4k) || fail "l40s exited $?"
grep -q '^Smallest fit: 2 x l40s as TP 2 (one replica holds 127 requests of 4,000 tokens)$' <<<"$out" || fail "2 x L40S: $out"
out=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --target-concurrency 100 --seq-len 4k) || fail "h100 exited $?"
grep -q '^Smallest fit: 1 x h100-sxm as TP 1 ' <<<"$out" || fail "1 x H100: $out"
# One answer: a plan that does not fit says the same as the reverse answer.
out=$("$kvsim" calc --model llama-3.1-70b --gpu h100-sxm --target-concurrency 64 --seq-len 8192) || fail "70b exited $?"
grep -q '^To fit: 8 x h100-sxm as 2 replicas of TP 4 (each holds 53 requests of 8,192 tokens)$' <<<"$out" || fail "70b To fit: $out"
[ "$(grep -c 'tensor_parallel_size\|Smallest' <<<"$out")" -eq 0 ] || fail "a second answer is printed: $out"
json=$("$kvsim" calc --model llama-3.1-70b --gpu h100-sxm --target-concurrency 64 --seq-len 8192 --json) || fail "70b json exited $?"
python3 -c '
import json, sys
o = json.loads(sys.argv[1])
assert o["min_gpus"] == 8 and o["layout_tensor_parallel_size"] == 4 and o["layout_replicas"] == 2, o
assert o["advice"] == o["answer"], (o["advice"], o["answer"])
assert o["required_kv_bytes"] > 0 and o["required_memory_bytes"] > o["required_kv_bytes"], o' "$json" || fail "reverse JSON: $json"
# Without --seq-len: the longest max_model_len that N requests fit in, used by the concurrency line.
out=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --target-concurrency 64) || fail "concurrency-only exited $?"
len=$(sed -nE 's/^Reverse: 64 requests fit in max_model_len <= ([0-9,]+) tokens each at TP 1 on h100-sxm$/\1/p' <<<"$out")
[ -n "$len" ] || fail "longest length line: $out"
grep -Eq "^Maximum concurrency for $len tokens per request: 64\.[0-9]{2}x$" <<<"$out" || fail "concurrency at $len: $out"
n=${len//,/}
out=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --target-concurrency 64 --seq-len $((n + 16))) || fail "longer exited $?"
grep -q '^Smallest fit: 2 x' <<<"$out" || fail "16 tokens longer needs a second GPU: $out"

# MLA block size follows the attention backend vLLM picks for the GPU
# (vllm/platforms/cuda.py): Triton MLA 16 on L4 (8.9), FlashMLA 64 on H100
# (9.0), CUTLASS MLA 128 on B200 (10.0).
for gb in l4:16 h100-sxm:64 b200:128; do
  out=$("$kvsim" calc --model deepseek-v2-lite --gpu "${gb%%:*}" | head -1) || fail "MLA calc on ${gb%%:*}"
  grep -q "^Model deepseek-v2-lite on ${gb%%:*}: .*, block_size ${gb##*:}, " <<<"$out" \
    || fail "deepseek-v2-lite on ${gb%%:*} should use block_size ${gb##*:}: $out"
done

# The vLLM release whose sizing rules apply: the newest modelled by default;
# before V1 0.11 (vllm#25359) the NCCL buffers of TP 2 are charged, so the
# budget is smaller by the difference in non-torch memory.
nt() { sed -nE 's/.*non_torch_memory takes ([0-9.]+)GiB.*/\1/p' <<<"$1"; }
kv() { sed -nE 's/^Available KV cache memory: ([0-9.]+) GiB$/\1/p' <<<"$1"; }
new=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --tensor-parallel-size 2 --max-model-len 8192) || fail "TP2 calc"
grep -q '^vLLM 0.20.0 sizing rules: V1 0.11+ (vllm#25359): NCCL initialised before the memory snapshot' <<<"$new" \
  || fail "default release line: $new"
old=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --tensor-parallel-size 2 --max-model-len 8192 --vllm-version 0.10.1) \
  || fail "0.10.1 calc"
grep -q '^vLLM 0.10.1 sizing rules: V1 0.9.2-0.10.x (vllm#19312)' <<<"$old" || fail "0.10.1 release line: $old"
[ "$(nt "$new")" = "0.18" ] && [ "$(nt "$old")" = "1.97" ] || fail "non-torch 0.18 -> 1.97 GiB: $(nt "$new") $(nt "$old")"
python3 -c 'import sys; a, b = map(float, sys.argv[1:]); assert abs((a - b) - 1.79) < 0.011, (a, b)' \
  "$(kv "$new")" "$(kv "$old")" || fail "the budget moves by the NCCL buffers: $(kv "$new") vs $(kv "$old")"
v064=$("$kvsim" calc --model llama-3-8b --engine vllm-v0 --vllm-version 0.6.4.post1) || fail "0.6.4 calc"
grep -q '^vLLM 0.6.4 sizing rules: V0 0.6.4 (vllm#9352)' <<<"$v064" || fail "0.6.4 release line: $v064"
[ "$(nt "$v064")" = "0.44" ] || fail "0.6.4 charges the CUDA context: $(nt "$v064")"
echo "ok"
