#!/usr/bin/env bash
# kvsim calc --enable-lora: vLLM's LoRA adapter slots (vllm/lora/layers
# create_lora_weights) on Llama-3.1-8B / H100: the golden text of 4 slots
# of rank 64, the slots' bytes by hand, the pool they take, the JSON keys
# and the errors. $1 = kvsim binary, $2 = source dir.
set -u
command -v jq >/dev/null || { echo "SKIP: jq is not installed (scripts/deps.sh --test installs it)"; exit 77; }
kvsim=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$kvsim" calc --model llama-3.1-8b --gpu h100-sxm --enable-lora --max-loras 4 --max-lora-rank 64) ||
  fail "calc exited $?"
diff <(echo "$out") "$src/tests/golden/data/calc-vllm-lora-llama-3.1-8b.txt" || fail "golden text moved"

# One rank-16 slot: (qkv 294,912 + o 131,072 + gate_up 589,824 + down
# 294,912) elements x 32 layers x 2 bytes = 80 MiB; 4 x rank 64 is 16 times.
js=$("$kvsim" calc --enable-lora --json) || fail "json exited $?"
jq -e '.lora_bytes == 83886080 and .max_loras == 1 and .max_lora_rank == 16 and .max_cpu_loras == 1' \
  <<<"$js" >/dev/null || fail "default slot: $js"
on=$("$kvsim" calc --enable-lora --max-loras 4 --max-lora-rank 64 --json) || fail "on exited $?"
off=$("$kvsim" calc --json) || fail "off exited $?"
[ "$(jq '.lora_bytes' <<<"$on")" = 1342177280 ] || fail "16 x 80 MiB: $on"
[ "$(jq -n --argjson a "$off" --argjson b "$on" '$a.available_kv_bytes - $b.available_kv_bytes')" = 1342177280 ] ||
  fail "the KV budget shrinks by the slots"
jq -e 'has("lora_bytes") | not' <<<"$off" >/dev/null || fail "no LoRA keys without --enable-lora"

for bad in "--enable-lora --max-lora-rank 24" "--max-loras 2" "--enable-lora --max-loras 0" \
           "--enable-lora --max-loras 4 --max-cpu-loras 2" "--enable-lora --model qwen3-30b-a3b" \
           "--engine sglang --enable-lora"; do
  # shellcheck disable=SC2086
  err=$("$kvsim" calc $bad 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "$bad: exit $rc"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "$bad: one line: $err"
done
echo ok
