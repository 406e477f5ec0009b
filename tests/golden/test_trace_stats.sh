#!/usr/bin/env bash
# kvsim trace stats / convert / gen on the tiny traces in workloads/.
# Usage: test_trace_stats.sh KVSIM_BINARY SOURCE_DIR
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cd "$src/workloads"

# 1. Text output on the tiny Mooncake trace, checked line by line. The
# prefix figures were worked out by hand (workloads/README.md's definitions): 16 blocks,
# 8 hits ideal (4,096 of 6,700 tokens), LRU(2) 1 hit, LRU(4) 6 hits.
"$kvsim" trace stats tiny_mooncake.jsonl --prefix-block-size 512 --lru-blocks 2,4 >"$tmp/out.txt"
cat >"$tmp/want.txt" <<'TXT'
trace: tiny_mooncake.jsonl (format mooncake)
requests: 6
duration: 6.0 s
rate: 1.00 req/s
inter-arrival: mean 1.200 s, CV 0.86, max gap 3.0 s
peak: 2 requests in one second
prompt tokens: mean 1116.7, p50 1150, p90 1750, p99 1975, min 300, max 2000
output tokens: mean 75.0, p50 75, p90 95, p99 100, min 50, max 100
prefix blocks of 512 tokens: 16 in all, 8 distinct
ideal prefix hit rate: 50.00% of blocks, 61.13% of tokens
LRU hit rate at 2 blocks: 6.25%
LRU hit rate at 4 blocks: 37.50%
TXT
diff -u "$tmp/want.txt" "$tmp/out.txt" || fail "trace stats text output differs"

# 2. JSON keys and values.
"$kvsim" trace stats tiny_mooncake.jsonl --prefix-block-size 512 --lru-blocks 2,4 --json >"$tmp/out.json"
for kv in '"requests":[[:space:]]*6,' '"duration_s":[[:space:]]*6,' '"rate_rps":[[:space:]]*1,' \
          '"ideal_prefix_hit_rate_blocks":[[:space:]]*0.5,' '"2":[[:space:]]*0.0625' \
          '"4":[[:space:]]*0.375' '"lru_hit_rate":'; do
  grep -q "$kv" "$tmp/out.json" || fail "JSON lacks $kv"
done

# 3. The same requests in Azure and Vidur format give the same stats.
"$kvsim" trace stats tiny_azure.csv | tail -n +2 >"$tmp/az.txt"
"$kvsim" trace stats tiny_vidur.csv | tail -n +2 >"$tmp/vi.txt"
diff -u "$tmp/az.txt" "$tmp/vi.txt" || fail "Azure and Vidur tiny traces differ"
grep -q '^requests: 5$' "$tmp/az.txt" || fail "tiny_azure has 5 requests"

# 4. Flags: --limit, --time-scale, --max-total-tokens.
"$kvsim" trace stats tiny_azure.csv --limit 3 --time-scale 2 --max-total-tokens 600 >"$tmp/f.txt"
grep -q '^requests: 3 (2 clipped)$' "$tmp/f.txt" || fail "--limit 3 and 2 clipped: $(cat "$tmp/f.txt")"
grep -q '^duration: 1.5 s$' "$tmp/f.txt" || fail "--time-scale 2 doubles 0.75 s"

# 5. convert: any format -> kvsim CSV, and back gives the same stats.
"$kvsim" trace convert tiny_mooncake.jsonl --out "$tmp/m.csv" 2>/dev/null
head -1 "$tmp/m.csv" | grep -qx 'arrival_s,prompt_tokens,output_tokens,segments' || fail "header"
sed -n 2p "$tmp/m.csv" | grep -qx '0.000000000,1200,50,0:512 1:512 2:176' || fail "first row"
"$kvsim" trace stats "$tmp/m.csv" --prefix-block-size 512 --lru-blocks 2,4 | tail -n +2 >"$tmp/rt.txt"
tail -n +2 "$tmp/want.txt" | diff -u - "$tmp/rt.txt" || fail "round trip changed the stats"
ls "$tmp" | grep -q tmp && fail "a temporary file was left behind"

# 6. gen: same seed, same file; another seed, another file.
"$kvsim" trace gen chat_sessions.json --out "$tmp/g1.csv" --seed 5 2>/dev/null
"$kvsim" trace gen chat_sessions.json --out "$tmp/g2.csv" --seed 5 2>/dev/null
"$kvsim" trace gen chat_sessions.json --out "$tmp/g3.csv" --seed 6 2>/dev/null
cmp -s "$tmp/g1.csv" "$tmp/g2.csv" || fail "gen is not deterministic"
cmp -s "$tmp/g1.csv" "$tmp/g3.csv" && fail "another seed gave the same file"
[ "$(wc -l <"$tmp/g1.csv")" -eq 5001 ] || fail "5,000 requests + header"
head -1 "$tmp/g1.csv" | grep -qx 'arrival_s,prompt_tokens,output_tokens,session,turn,segments' ||
  fail "gen header: $(head -1 "$tmp/g1.csv")"
# The generated file reads back (arrivals in order) with the same count.
"$kvsim" trace stats "$tmp/g1.csv" | grep -q '^requests: 5,000$' || fail "gen output reads back"

# 7. Closed loop with a 2 s server: 4 clients, 12 requests -> 3 waves.
cat >"$tmp/cl.json" <<'JSON'
{"synthetic": {"requests": 12, "arrival": {"process": "closed_loop", "clients": 4, "think_s": 0.5},
 "prompt_tokens": 100, "output_tokens": 10}}
JSON
"$kvsim" trace gen "$tmp/cl.json" --out "$tmp/cl.csv" --latency-s 2 2>/dev/null
[ "$(grep -c '^0.000000000,' "$tmp/cl.csv")" -eq 4 ] || fail "4 clients at t=0"
[ "$(grep -c '^2.500000000,' "$tmp/cl.csv")" -eq 4 ] || fail "4 at 2.5 s"
[ "$(grep -c '^5.000000000,' "$tmp/cl.csv")" -eq 4 ] || fail "4 at 5 s"

# 8. A run's requests.csv reads back as a trace (format requests): the
# same requests as the trace it ran, though written in finish order.
"$kvsim" run "$src/tests/golden/cases/v1-preemption/scenario.json" --quiet --out "$tmp/run" >/dev/null
"$kvsim" trace stats "$tmp/run/requests.csv" >"$tmp/rq.txt" || fail "trace stats requests.csv"
head -1 "$tmp/rq.txt" | grep -q '(format requests)$' || fail "requests.csv detected: $(head -1 "$tmp/rq.txt")"
"$kvsim" trace stats "$src/tests/golden/cases/v1-preemption/trace.csv" | tail -n +2 |
  diff -u - <(tail -n +2 "$tmp/rq.txt") || fail "requests.csv stats differ from the trace's"
"$kvsim" run "$src/tests/golden/cases/v1-two-replicas/scenario.json" --quiet --out "$tmp/run2" >/dev/null
"$kvsim" trace stats "$tmp/run2/requests.csv" --format requests | grep -q '^requests: 40$' ||
  fail "two replicas: 40 requests"

# 8b. A length table (no arrival times) gives its lengths and says what it
# cannot compute; convert (which writes arrivals) still refuses it.
printf 'prompt_tokens,output_tokens\n100,20\n300,40\n50,5\n' >"$tmp/len.csv"
"$kvsim" trace stats "$tmp/len.csv" >"$tmp/len.txt" || fail "trace stats of a length table exited $?"
grep -q '^requests: 3$' "$tmp/len.txt" || fail "length table: $(cat "$tmp/len.txt")"
grep -q '^arrival times: none (a length table): duration, rate, inter-arrival times and peak not computed' \
  "$tmp/len.txt" || fail "says what it cannot compute: $(cat "$tmp/len.txt")"
grep -q '^prompt tokens: mean 150.0' "$tmp/len.txt" || fail "prompt lengths: $(cat "$tmp/len.txt")"
! grep -q '^rate:' "$tmp/len.txt" || fail "no rate line for a length table"
"$kvsim" trace stats "$tmp/len.csv" --json | grep -Eq '"rate_rps":[[:space:]]*null' || fail "--json rate null"
rc=0; "$kvsim" trace convert "$tmp/len.csv" --out "$tmp/len-out.csv" 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "convert of a length table: exit $rc"

# 9. --help works for each subcommand.
"$kvsim" trace --help | grep -q 'kvsim trace stats' || fail "trace --help"
for s in stats convert gen; do
  "$kvsim" trace $s --help | grep -q -- '--' || fail "trace $s --help"
done
echo "ok"
