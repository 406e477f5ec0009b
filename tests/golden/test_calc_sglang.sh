#!/usr/bin/env bash
# kvsim calc --engine sglang: SGLang's start-up lines for the vllm#21348
# setup (Qwen3-235B-A22B-FP8 on 4 x H100, --tp 4 --mem-fraction-static
# 0.93, whose log reads "KV Cache is allocated. #tokens: 367404, K size:
# 8.23 GB, V size: 8.23 GB"), the golden text of that command, the JSON
# keys, the measured overrides and the errors; and for a 4 x L4 (TP 4) log.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
command -v jq >/dev/null || { echo "SKIP: jq is not installed (scripts/deps.sh --test installs it)"; exit 77; }
kvsim=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
must=(calc --engine sglang --model qwen3-235b-a22b --quantization fp8 --tensor-parallel-size 4
      --gpu h100-sxm --mem-fraction-static 0.93)

out=$("$kvsim" "${must[@]}") || fail "calc exited $?"
diff <(echo "$out") "$src/tests/golden/data/calc-sglang-qwen3-235b-tp4.txt" || fail "golden text moved"
grep -q 'K 24,064 + V 24,064: 94 layers x 1 KV heads x 128 head_dim x 2 bytes' <<<"$out" \
  || fail "the cell is 24,064 bytes of K per token per rank: $out"
grep -Eq '^vLLM V1, same model and GPUs at gpu_memory_utilization 0.90: GPU KV cache size: [0-9,]+ tokens' <<<"$out" \
  || fail "vLLM's pool beside it: $out"

# The log's pool: 367,404 tokens are 8.23 GB of K (the padded page included).
out=$("$kvsim" "${must[@]}" --mem-fraction-static 0.95 --max-total-tokens 367404) || fail "capped calc exited $?"
grep -q '^KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB$' <<<"$out" \
  || fail "367,404 tokens should log 8.23 GB of K: $out"

# Measured avail mem: rest = 63.2 - 78.5 x 0.15 = 51.425 GiB over 131,072 B/token.
out=$("$kvsim" calc --engine sglang --model llama-3.1-8b --mem-fraction-static 0.85 \
  --avail-gib-before-load 78.5 --avail-gib-after-load 63.2) || fail "measured calc exited $?"
grep -q '#tokens: 421273,' <<<"$out" || fail "int(51.425 x 2^30) // 131072 = 421273: $out"
grep -q '(measured)' <<<"$out" || fail "says the figures are measured: $out"

# QwQ-32B on 4 x L4 (TP 4, PCIe), whose public log reads "Load weight begin.
# avail mem=21.63 GB", "Load weight end. ... avail mem=6.09 GB" and "KV Cache
# is allocated. #tokens: 46611": the predicted golden text, then the log's
# own figures reproduced to their rounding (int((6.09 - 21.63 x 0.15) x
# 2^30) // 65,536 = 46,620; 0.005 GB of rounding is 94 tokens).
l4=(calc --engine sglang --model qwen2.5-32b --gpu l4 --tensor-parallel-size 4
    --mem-fraction-static 0.85 --context-length 131072)
out=$("$kvsim" "${l4[@]}") || fail "L4 calc exited $?"
diff <(echo "$out") "$src/tests/golden/data/calc-sglang-qwq-32b-l4-tp4.txt" || fail "L4 golden text moved"
out=$("$kvsim" "${l4[@]}" --avail-gib-before-load 21.63 --avail-gib-after-load 6.09) ||
  fail "L4 measured calc exited $?"
grep -q '#tokens: 46620,' <<<"$out" || fail "the L4 log's figures give 46,620 tokens: $out"

# The automatic fraction reads nvidia-smi's total when given (L4: 23,034 MiB):
# round((23034 - 4256) / 23034, 3) = 0.815, against 0.811 of the runtime's.
out=$("$kvsim" calc --engine sglang --model qwen2.5-32b --gpu l4 --tensor-parallel-size 4 \
  --context-length 131072 --gpu-memory-capacity-mib 23034) || fail "capacity calc exited $?"
grep -q '^mem_fraction_static=0.815 (automatic: 4256 MB reserved of 23034 MB (nvidia-smi),' <<<"$out" \
  || fail "nvidia-smi's total: $out"

# JSON: kv_cache_tokens beside SGLang's own max_total_num_tokens.
out=$("$kvsim" "${must[@]}" --json) || fail "json calc exited $?"
jq -e '.engine == "sglang" and .kv_cache_tokens == .max_total_num_tokens and .cell_size == 48128
       and .mem_fraction_static == 0.93 and (.vllm_v1_kv_cache_tokens > 0)' <<<"$out" >/dev/null \
  || fail "JSON keys: $out"

# Errors: one line, exit 2.
for bad in "--mem-fraction-static 1.2" "--avail-gib-before-load 70" "--schedule-policy dfs" \
           "--kv-cache-dtype int4" "--page-size -3"; do
  # shellcheck disable=SC2086
  err=$("$kvsim" calc --engine sglang $bad 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "$bad: exit $rc"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "$bad: one line: $err"
done
echo ok
