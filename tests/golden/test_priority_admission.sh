#!/usr/bin/env bash
# Issue 5: under overload the priority policy gives high-priority requests
# (lower value) a lower p99 TTFT than low-priority ones; admission control
# rejects over-long prompts with a reason, counts them, and lists them in
# requests.csv with status rejected; max_wait_s rejects requests that wait
# too long, also with a reason.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/tests/golden/data/priority-overload.json"
"$kvsim" run "$scen" --quiet --out "$tmp/p" --check-invariants
p99() { # summary priority -> p99 TTFT of that level
  awk -v want="$2" '/"by_priority"/ { in_by = 1 } in_by && /"priority":/ { v = $2; gsub(/,/, "", v); cur = v }
    in_by && cur == want && /"ttft_s"/ { t = 1 } t && /"p99"/ { v = $2; gsub(/,/, "", v); print v; t = 0; cur = "" }' "$1"
}
hi=$(p99 "$tmp/p/summary.json" 0)
lo=$(p99 "$tmp/p/summary.json" 1)
long=$(awk -F, 'NR > 1 && $7 > 4000' "$tmp/p/requests.csv" | wc -l)
rej=$(awk -F, 'NR > 1 && $7 > 4000 && $14 == "rejected"' "$tmp/p/requests.csv" | wc -l)
other_rej=$(awk -F, 'NR > 1 && $7 <= 4000 && $14 == "rejected"' "$tmp/p/requests.csv" | wc -l)
reason=$(grep -c '"admission: prompt_tokens > max_prompt_tokens":' "$tmp/p/summary.json" || true)
echo "p99 TTFT: priority 0 $hi s, priority 1 $lo s; $long prompts over 4000 tokens, $rej rejected"
awk -v h="$hi" -v l="$lo" 'BEGIN { exit !(h > 0 && l > 2 * h) }' || { echo "priority does not protect the high level"; exit 1; }
[ "$long" -gt 0 ] && [ "$long" = "$rej" ] && [ "$other_rej" = 0 ] || { echo "admission rejected the wrong requests"; exit 1; }
[ "$reason" = 1 ] || { echo "summary lacks the rejection reason"; exit 1; }
# max_wait_s: the same overload, fcfs, a 20 s wait limit.
"$kvsim" run "$scen" --quiet --out "$tmp/w" --set engine.scheduling_policy=fcfs \
  --set admission.max_wait_s=20
waited=$(grep '"admission: waited longer than max_wait_s":' "$tmp/w/summary.json" | sed 's/.*://; s/[^0-9]//g')
late=$(awk -F, 'NR > 1 && $14 == "finished" && $4 - $3 > 20.000001' "$tmp/w/requests.csv" | wc -l)
echo "max_wait_s 20: $waited rejected for waiting; $late finished requests were scheduled after 20 s"
[ "${waited:-0}" -gt 0 ] && [ "$late" = 0 ] || { echo "max_wait_s not enforced"; exit 1; }
