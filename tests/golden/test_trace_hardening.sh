#!/usr/bin/env bash
# Garbage and extreme input to kvsim trace: every case ends (no hang), with
# exit 2 and one escaped line naming the line and the allowed range, or a
# clean count of skipped rows. Each case is a defect that once slipped by.
# The error cases are data (errors/trace_hardening.cases); this script
# writes their fixtures and checks the counts and outputs.
# Usage: test_trace_hardening.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib_expect_error.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib_error_cases.sh"
H='arrival_s,prompt_tokens,output_tokens'
w='"prompt_tokens": 10, "output_tokens": 10'

# Fixtures of the cases, by section of errors/trace_hardening.cases.
# 1. A bare carriage return inside a row.
printf '%s\n0,10,5\n1,1\r0,5\n2,10,5\n' "$H" >"$tmp/cr.csv"
# 2. Rows wider or narrower than the header.
printf '%s\n0,10,5\n1,10,5,7\n' "$H" >"$tmp/wide.csv"
printf 'arrival_s,prompt_tokens,output_tokens,tenant\n0,10,5,1\n1,10,5\n' >"$tmp/narrow.csv"
# 3. Quoted cells with newlines.
printf '%s\n0,10,5\n1,"1\n2\n3",5\n' "$H" >"$tmp/quoted.csv"
printf '%s\n0,10,5\n1,"7",\n"2\n",5,5\n' "$H" >"$tmp/quoted2.csv"
# 4. Binary bytes, a 300-byte value, a binary header.
printf '%s\n0,\001\002\377zz,5\n' "$H" >"$tmp/bin.csv"
printf '%s\n0,%s,5\n' "$H" "$(printf 'x%.0s' $(seq 1 300))" >"$tmp/long.csv"
printf '\001\002,\003\n1,2\n' >"$tmp/garbage.csv"
# 5. Azure timestamps in 2300 and 1600.
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,5\n2300-01-01 00:00:00,10,5\n' >"$tmp/az.csv"
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n1600-01-01 00:00:00,10,5\n' >"$tmp/az2.csv"
# 6. INT64_MAX and 1e300 lengths and times.
printf '%s\n0,9223372036854775807,5\n' "$H" >"$tmp/big.csv"
printf '{"timestamp": 1e300, "input_length": 10, "output_length": 1}\n' >"$tmp/ts.jsonl"
printf '%s\n1e15,10,5\n' "$H" >"$tmp/late.csv"
# 7. Synthetic arrival parameters out of range.
echo "{\"synthetic\": {\"requests\": 5, \"arrival\": {\"process\": \"constant\", \"rate\": 1e-300}, $w}}" >"$tmp/rate.json"
echo "{\"synthetic\": {\"duration_s\": 1e15, \"arrival\": {\"process\": \"poisson\", \"rate\": 1}, $w}}" >"$tmp/dur.json"
echo "{\"synthetic\": {\"requests\": 3, \"arrival\": {\"process\": \"closed_loop\", \"clients\": 1, \"think_s\": 1e15}, $w}}" >"$tmp/think.json"
# 8. A pipe and a folder as --out.
printf '%s\n0,10,5\n' "$H" >"$tmp/ok.csv"
echo "{\"synthetic\": {\"requests\": 3, \"arrival\": {\"process\": \"poisson\", \"rate\": 1}, $w}}" >"$tmp/ok.json"
mkfifo "$tmp/fifo"
mkdir "$tmp/dir"

run_error_cases "$src/tests/golden/errors/trace_hardening.cases"

# 1. The bare carriage return with --skip-bad-rows: once looped for ever.
# Now both halves of the cut row are skipped and counted.
timeout 20 "$kvsim" trace stats "$tmp/cr.csv" --skip-bad-rows >"$tmp/out" 2>&1 ||
  fail "bare CR with --skip-bad-rows: exit $? $(head -c 300 "$tmp/out")"
grep -qx 'requests: 2 (2 bad rows skipped)' "$tmp/out" || fail "bare CR: $(cat "$tmp/out")"

# 2. A wide row is skipped and counted.
printf '%s\n0,10,5\n1,10,5,7\n2,10,5\n' "$H" >"$tmp/wide2.csv"
"$kvsim" trace stats "$tmp/wide2.csv" --skip-bad-rows | grep -qx 'requests: 2 (1 bad rows skipped)' ||
  fail "a wide row is skipped and counted"

# 6. The largest lengths and block sizes still read.
printf '%s\n0,2147483647,2147483647\n' "$H" >"$tmp/max.csv"
"$kvsim" trace stats "$tmp/max.csv" --max-total-tokens 9223372036854775807 \
  --prefix-block-size 9223372036854775807 >"$tmp/out" 2>&1 || fail "largest lengths: $(cat "$tmp/out")"
grep -qx 'prefix blocks of 9223372036854775807 tokens: 1 in all, 1 distinct' "$tmp/out" ||
  fail "one block of INT64_MAX tokens: $(cat "$tmp/out")"

# 8. The refused outputs left the pipe a pipe and no temporary behind; a
# plain path converts, also over a regular file.
[ -p "$tmp/fifo" ] || fail "the pipe was replaced"
ls "$tmp" | grep -q '\.tmp\.' && fail "a temporary file was left behind"
"$kvsim" trace convert "$tmp/ok.csv" --out "$tmp/ok2.csv" 2>/dev/null || fail "a plain path converts"
"$kvsim" trace convert "$tmp/ok.csv" --out "$tmp/ok2.csv" 2>/dev/null || fail "over a regular file"
echo "ok"
