#!/usr/bin/env bash
# kvsim calc for the engines other than vLLM: TGI's warmup lines
# (flash_causal_lm.py "KV-cache blocks: N, size: B", the router's "Setting
# max batch total tokens to N"), HF Transformers' cache formula in GiB and
# GB, and --compare-engines agreeing with each engine's own calc.
# $1 = kvsim binary, $2 = source dir.
set -u
kvsim=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
jget() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }

# Measured terms make the warmup arithmetic exact: 80 - 15 - 1 - 0.5 GiB
# free, (1 - 1.0 x 0.90) x 80 = 8 GiB kept: 55.5 GiB of 128 KiB blocks.
m="--gpu-memory-gib 80 --weights-gib 15 --activation-gib 1 --non-torch-gib 0.5"
out=$("$kvsim" calc --engine tgi $m) || fail "tgi calc exited $?"
grep -q '^KV-cache blocks: 454656, size: 1$' <<<"$out" || fail "TGI 3.3 blocks: $out"
grep -q '^Setting max batch total tokens to 454656$' <<<"$out" || fail "router line: $out"
grep -q '^Default `max_batch_prefill_tokens` to 4096$' <<<"$out" || fail "launcher default: $out"
# TGI 3.0 kept 5%: 59.5 GiB.
out=$("$kvsim" calc --engine tgi $m --tgi-version 3.0) || fail "3.0 exited $?"
grep -q '^Setting max batch total tokens to 487424$' <<<"$out" || fail "TGI 3.0 wiggle room 0.95: $out"
# Half the memory: (1 - 0.5 x 0.9) x 80 = 44 GiB kept, 19.5 GiB of blocks.
out=$("$kvsim" calc --engine tgi $m --cuda-memory-fraction 0.5) || fail "fraction exited $?"
grep -q '^Setting max batch total tokens to 159744$' <<<"$out" || fail "fraction 0.5: $out"
# paged: BLOCK_SIZE 16, the warmup batch's blocks added back whole.
out=$("$kvsim" calc --engine tgi $m --attention paged --max-batch-prefill-tokens 8192 \
  --max-total-tokens 8192 --max-input-tokens 8000) || fail "paged exited $?"
grep -q '^KV-cache blocks: [0-9]*, size: 16$' <<<"$out" || fail "paged block size: $out"
grep -q 'prefix caching off' <<<"$out" || fail "paged has no prefix caching: $out"
# JSON: the engine's names beside kv_cache_tokens.
js=$("$kvsim" calc --engine tgi $m --json) || fail "json exited $?"
[ "$(jget "['kv_cache_tokens']" <<<"$js")" = "$(jget "['max_batch_total_tokens']" <<<"$js")" ] ||
  fail "kv_cache_tokens is max_batch_total_tokens: $js"
[ "$(jget "['engine']" <<<"$js")" = tgi ] || fail "engine name: $js"
# Refused settings, one line each, exit 2.
for bad in "--attention xformers" "--tgi-version 1.4" "--tgi-version 2.2 --attention flashinfer" "--cuda-memory-fraction 1.5" \
           "--kv-cache-dtype fp8_e5m2 --attention flashdecoding" "--num-shard 0" "--pipeline-parallel-size 2"; do
  err=$("$kvsim" calc --engine tgi $bad 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] || fail "tgi $bad: exit $rc"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "tgi $bad: one line, got: $err"
done

# HF: the seeds' formula at batch 8 x 8,192 is 8 GiB.
out=$("$kvsim" calc --engine hf-transformers --cache static --batch 8 --max-cache-len 8192) ||
  fail "hf calc exited $?"
grep -q '^KV cache = 2 x B 8 x L 32 x T 8,192 x Hkv 8 x D 128 x S 2 bytes$' <<<"$out" || fail "formula: $out"
grep -q '^KV cache: 8,589,934,592 bytes = 8.00 GiB (8.59 GB)$' <<<"$out" || fail "GiB and GB: $out"
out=$("$kvsim" calc --engine hf-transformers --cache quantized --batch 8 --max-cache-len 8192) ||
  fail "quantized exited $?"
grep -q '^Quantized KV: 2,147,483,648 bytes' <<<"$out" || fail "4 bits: $out"
grep -q '^Scale and zero-point bytes: 268,435,456 bytes' <<<"$out" || fail "scales: $out"
grep -q '^Residual bytes: 134,217,728 bytes' <<<"$out" || fail "residual: $out"
js=$("$kvsim" calc --engine hf-transformers --cache offloaded --batch 8 --max-cache-len 8192 --json) ||
  fail "offloaded exited $?"
[ "$(jget "['cache_gpu_bytes']" <<<"$js")" = 536870912 ] || fail "two layers on the GPU: $js"
for bad in "--cache sliding" "--cache quantized --nbits 3" "--batch 0" "--tensor-parallel-size 2"; do
  err=$("$kvsim" calc --engine hf-transformers $bad 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] || fail "hf $bad: exit $rc"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "hf $bad: one line, got: $err"
done

# --compare-engines: every engine's row, each the pool its own calc prints.
js=$("$kvsim" calc --compare-engines --memory-fraction 0.9 --seq-len 8192 --json) || fail "compare exited $?"
names=$(python3 -c "import json,sys; print(' '.join(e['engine'] for e in json.load(sys.stdin)['engines']))" <<<"$js")
[ "$names" = "vllm-v1 sglang tgi hf-transformers" ] || fail "compared engines: $names"
v1=$("$kvsim" calc --gpu-memory-utilization 0.9 --max-model-len 8192 --json | jget "['kv_cache_tokens']")
[ "$(jget "['engines'][0]['kv_cache_tokens']" <<<"$js")" = "$v1" ] || fail "vllm-v1 row = calc's $v1: $js"
tgi=$("$kvsim" calc --engine tgi --cuda-memory-fraction 0.9 --max-total-tokens 8192 --max-input-tokens 8191 --json |
      jget "['kv_cache_tokens']")
[ "$(jget "['engines'][2]['kv_cache_tokens']" <<<"$js")" = "$tgi" ] || fail "tgi row = calc's $tgi: $js"
sgl=$("$kvsim" calc --engine sglang --mem-fraction-static 0.9 --context-length 8192 --json | jget "['kv_cache_tokens']")
[ "$(jget "['engines'][1]['kv_cache_tokens']" <<<"$js")" = "$sgl" ] || fail "sglang row = calc's $sgl: $js"
out=$("$kvsim" calc --compare-engines) || fail "compare text exited $?"
grep -q 'cuda_memory_fraction 0.90 x TGI_WIGGLE_ROOM 0.90' <<<"$out" || fail "TGI's own settings named: $out"
grep -q 'gpu_memory_utilization 0.90' <<<"$out" || fail "vLLM's own settings named: $out"
grep -q 'mem_fraction_static 0.900' <<<"$out" || fail "SGLang's own settings named: $out"
err=$("$kvsim" calc --compare-engines --memory-fraction 2 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && grep -q -- '--memory-fraction' <<<"$err" || fail "bad fraction: $rc $err"
echo ok
