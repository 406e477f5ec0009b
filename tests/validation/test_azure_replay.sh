#!/usr/bin/env bash
# Replaying the Azure conv trace on Llama-3.1-8B / H100: all 19,366 requests
# finish, requests.csv has one row each, the summary has TTFT/TPOT/E2E.
set -euo pipefail
kvsim=$1
src=$2
trace="$src/../shared/traces/azure_llm_2023/AzureLLMInferenceTrace_conv.csv"
[ -f "$trace" ] || { echo "SKIP: $trace is absent"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kvsim" run "$src/configs/scenarios/azure-conv-llama-3.1-8b-h100.json" --out "$tmp" --quiet --no-band
rows=$(($(wc -l <"$tmp/requests.csv") - 1))
finished=$(grep -c ',finished$' "$tmp/requests.csv" || true)
[ "$rows" = 19366 ] || { echo "requests.csv has $rows rows, want 19366"; exit 1; }
[ "$finished" = 19366 ] || { echo "$finished finished, want 19366"; exit 1; }
ids=$(cut -d, -f1 "$tmp/requests.csv" | tail -n +2 | sort -un | wc -l)
[ "$ids" = 19366 ] || { echo "$ids distinct request ids, want 19366"; exit 1; }
for key in ttft_s tpot_s e2e_s queue_s; do
  grep -q "\"$key\"" "$tmp/summary.json" || { echo "summary.json lacks latency.$key"; exit 1; }
done
# The series spans the trace (3,501.7 s of arrivals) at one row per second.
last=$(tail -1 "$tmp/timeseries.csv" | cut -d, -f1)
awk -v t="$last" 'BEGIN { exit !(t >= 3501.7) }' || { echo "time series ends at $last s"; exit 1; }
echo "ok: 19366 requests replayed, series to $last s"
