#!/usr/bin/env bash
# A KV-starved vllm-v0 with preemption_mode swap (configs/scenarios/
# swap-v0-starved.json): requests are swapped to the CPU tier and back
# (bytes out = bytes in > 0, steps wait on the copies, the time series
# shows swapped requests), none is lost, and the latencies differ from
# recompute mode's. The workload is synthetic: no ../shared needed.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scn="$src/configs/scenarios/swap-v0-starved.json"
for mode in swap recompute; do
  "$kvsim" run "$scn" --out "$tmp/$mode" --quiet --check-invariants --set "engine.preemption_mode=$mode"
  rows=$(($(wc -l <"$tmp/$mode/requests.csv") - 1))
  fin=$(grep -c ',finished$' "$tmp/$mode/requests.csv" || true)
  ids=$(tail -n +2 "$tmp/$mode/requests.csv" | cut -d, -f1 | sort -un | wc -l)
  [ "$rows" = 400 ] && [ "$fin" = 400 ] && [ "$ids" = 400 ] ||
    { echo "$mode: $rows rows, $fin finished, $ids distinct ids (want 400 each)"; exit 1; }
done
# summary FILE KEY: the first number after "KEY":
summary() { awk -v k="\"$2\":" '$1 == k { v = $2; gsub(/,/, "", v); print v; exit }' "$1"; }
ttft_mean() { awk '/"ttft_s"/ { f = 1 } f && /"mean"/ { v = $2; gsub(/,/, "", v); print v; exit }' "$1"; }
s="$tmp/swap/summary.json" r="$tmp/recompute/summary.json"
out=$(summary "$s" bytes_to_cpu) in=$(summary "$s" bytes_to_gpu) wait=$(summary "$s" step_wait_on_transfers_s)
pre=$(awk '/"preemptions"/ { f = 1 } f && /"total"/ { v = $2; gsub(/,/, "", v); print v; exit }' "$s")
swapped=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "num_requests_swapped") c = i; next }
                   $c > m { m = $c } END { print m + 0 }' "$tmp/swap/timeseries.csv")
ts=$(ttft_mean "$s") tr=$(ttft_mean "$r") rout=$(summary "$r" bytes_to_cpu)
echo "swap: $pre preemptions, $out bytes out, $in bytes in, steps waited $wait s, up to $swapped swapped; TTFT mean $ts s"
echo "recompute: $rout bytes out; TTFT mean $tr s"
awk -v p="$pre" -v o="$out" -v i="$in" -v w="$wait" -v n="$swapped" -v a="$ts" -v b="$tr" -v ro="$rout" 'BEGIN {
  ok = p > 0 && o > 0 && o == i && w > 0 && n > 0 && ro == 0 && a != b
  exit !ok }' || { echo "swap did not behave as expected"; exit 1; }
echo "ok: swapped out and back, none lost, latency differs from recompute"
