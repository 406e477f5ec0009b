#!/usr/bin/env bash
# kvsim trace stats on the real traces in ../shared (read in place).
# Exit 77 (skipped) when ../shared is absent.
# Usage: test_trace_shared.sh KVSIM_BINARY SOURCE_DIR
set -euo pipefail
kvsim=$1
src=$2
traces="$src/../shared/traces"
mc="$traces/mooncake_fast25/conversation_trace.jsonl"
az="$traces/azure_llm_2023/AzureLLMInferenceTrace_conv.csv"
vi="$traces/vidur_processed/splitwise_conv.csv"
if [ ! -r "$mc" ] || [ ! -r "$az" ] || [ ! -r "$vi" ]; then
  echo "skipped: $traces is absent"
  exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$kvsim" trace stats --prefix-block-size 512 "$mc")
for line in 'requests: 12,031' 'prefix blocks of 512 tokens: 288,500 in all, 182,790 distinct' \
            'ideal prefix hit rate: 36.64% of blocks, 37.36% of tokens' \
            'LRU hit rate at 1,000 blocks: 4.45%' 'LRU hit rate at 5,000 blocks: 11.04%' \
            'LRU hit rate at 20,000 blocks: 28.75%' 'LRU hit rate at 50,000 blocks: 35.46%'; do
  grep -qxF "$line" <<<"$out" || fail "Mooncake: missing '$line' in:
$out"
done

out=$("$kvsim" trace stats "$az")
for line in 'requests: 19,366' 'duration: 3501.7 s' 'rate: 5.53 req/s'; do
  grep -qxF "$line" <<<"$out" || fail "Azure conv: missing '$line'"
done
# Vidur's splitwise_conv is the same trace.
diff <(tail -n +2 <<<"$out") <("$kvsim" trace stats "$vi" | tail -n +2) || fail "splitwise differs"
echo "ok"
