#!/usr/bin/env bash
# kvsim calc --engine tgi --tgi-version 2.x: TGI 2.x's warmup (the room
# times what cuda_memory_fraction leaves of the free memory, the 2.x
# launcher's 4096-token defaults, the warmup's prefill-logprob logits),
# the golden text for Meta-Llama-3.1-8B-Instruct on an A10(G) with TGI
# 2.2.0's defaults (a public log of that setup reads "Setting max batch
# total tokens to 19056"; see docs/ACCURACY.md, "TGI and SGLang start-up logs"), the JSON
# keys and the errors. $1 = kvsim binary, $2 = source dir.
set -u
command -v jq >/dev/null || { echo "SKIP: jq is not installed (scripts/deps.sh --test installs it)"; exit 77; }
kvsim=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$kvsim" calc --engine tgi --tgi-version 2.2.0 --model llama-3.1-8b --gpu a10) ||
  fail "calc exited $?"
diff <(echo "$out") "$src/tests/golden/data/calc-tgi-2.2-llama-3.1-8b-a10.txt" || fail "golden text moved"
grep -q '^Default `max_batch_prefill_tokens` to 4145$' <<<"$out" || fail "2.x launcher default: $out"
grep -q '(2 requests x 256 blocks)' <<<"$out" || fail "the warmup batch: $out"

# Measured terms make the arithmetic exact: 80 - 15 - 1 - 0.5 - 1 (warmup
# batch) = 62.5 GiB free, x 0.95 = 30,400 blocks of 2 MiB, + 512.
m="--gpu-memory-gib 80 --weights-gib 15 --activation-gib 1 --non-torch-gib 0.5"
out=$("$kvsim" calc --engine tgi --tgi-version 2.2 $m) || fail "measured exited $?"
grep -q '^Setting max batch total tokens to 494592$' <<<"$out" || fail "30,912 blocks x 16: $out"
# 2.4.0: TGI_WIGGLE_ROOM 0.90 (globals.py), same launcher: 28,800 + 512.
out=$("$kvsim" calc --engine tgi --tgi-version 2.4.0 --attention paged $m) || fail "2.4.0 exited $?"
grep -q '^Setting max batch total tokens to 468992$' <<<"$out" || fail "2.4.0: $out"
grep -q '^KV-cache blocks: 29312, size: 16$' <<<"$out" || fail "2.4.0 logs its blocks: $out"

js=$("$kvsim" calc --engine tgi --tgi-version 2.2.0 --model llama-3.1-8b --gpu a10 --json) ||
  fail "json exited $?"
jq -e '.tgi_version == "2.2" and .attention == "paged" and .warmup_requests == 2
       and .warmup_blocks == 512 and .prefill_logits_bytes == 2126484480
       and .kv_cache_tokens == .max_batch_total_tokens' <<<"$js" >/dev/null || fail "JSON keys: $js"
# 2.4.0 computes the prefill log_softmax in place (#2661): one [4145 x 128256] tensor.
js=$("$kvsim" calc --engine tgi --tgi-version 2.4.0 --attention paged --model llama-3.1-8b --gpu a10 --json) ||
  fail "2.4.0 json exited $?"
jq -e '.prefill_logits_bytes == 1063242240' <<<"$js" >/dev/null || fail "2.4.0 in place: $js"

for bad in "--tgi-version 2.5" "--tgi-version 2.4.2" "--tgi-version 2.1 --attention flashinfer" \
           "--tgi-version 2.3 --kv-cache-dtype fp8_e5m2"; do
  # shellcheck disable=SC2086
  err=$("$kvsim" calc --engine tgi $bad 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "$bad: exit $rc"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "$bad: one line: $err"
done
echo ok
