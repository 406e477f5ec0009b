#!/usr/bin/env bash
# Garbage and extreme input to kvsim trace: every case ends (no hang), with
# exit 2 and one escaped line naming the line and the allowed range, or a
# clean count of skipped rows. Each case is a defect that once slipped by.
# Usage: test_trace_hardening.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
H='arrival_s,prompt_tokens,output_tokens'

# expect "fixed string" args...: exit 2, one stderr line containing it, within 20 s.
expect() {
  local want=$1
  shift
  timeout 20 "$kvsim" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "'$*': exit $rc, want 2 ($(head -c 300 "$tmp/err"))"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*': want one line, got: $(cat -A "$tmp/err")"
  grep -qF -- "$want" "$tmp/err" || fail "'$*': '$(cat "$tmp/err")' lacks '$want'"
}

# 1. A bare carriage return inside a row, with --skip-bad-rows: once looped
# for ever. Now both halves of the cut row are skipped and counted.
printf '%s\n0,10,5\n1,1\r0,5\n2,10,5\n' "$H" >"$tmp/cr.csv"
timeout 20 "$kvsim" trace stats "$tmp/cr.csv" --skip-bad-rows >"$tmp/out" 2>&1 ||
  fail "bare CR with --skip-bad-rows: exit $? $(head -c 300 "$tmp/out")"
grep -qx 'requests: 2 (2 bad rows skipped)' "$tmp/out" || fail "bare CR: $(cat "$tmp/out")"
expect "cr.csv:3: a bare carriage return ends the row" trace stats "$tmp/cr.csv"

# 2. Rows wider or narrower than the header: once accepted silently.
printf '%s\n0,10,5\n1,10,5,7\n' "$H" >"$tmp/wide.csv"
expect "wide.csv:3: row has 4 fields, the header has 3" trace stats "$tmp/wide.csv"
printf 'arrival_s,prompt_tokens,output_tokens,tenant\n0,10,5,1\n1,10,5\n' >"$tmp/narrow.csv"
expect "narrow.csv:3: row has 3 fields, the header has 4" trace stats "$tmp/narrow.csv"
printf '%s\n0,10,5\n1,10,5,7\n2,10,5\n' "$H" >"$tmp/wide2.csv"
"$kvsim" trace stats "$tmp/wide2.csv" --skip-bad-rows | grep -qx 'requests: 2 (1 bad rows skipped)' ||
  fail "a wide row is skipped and counted"

# 3. A quoted cell with newlines: one line, naming the line where the cell
# starts (not the record's last line), the newlines escaped.
printf '%s\n0,10,5\n1,"1\n2\n3",5\n' "$H" >"$tmp/quoted.csv"
expect "quoted.csv:3: column 'prompt_tokens': bad value '1\\x0a2\\x0a3'" trace stats "$tmp/quoted.csv"
printf '%s\n0,10,5\n1,"7",\n"2\n",5,5\n' "$H" >"$tmp/quoted2.csv"
expect "quoted2.csv:3: column 'output_tokens': bad value ''" trace stats "$tmp/quoted2.csv"

# 4. Binary bytes are escaped, long values cut.
printf '%s\n0,\001\002\377zz,5\n' "$H" >"$tmp/bin.csv"
expect "bad value '\\x01\\x02\\xffzz'" trace stats "$tmp/bin.csv"
printf '%s\n0,%s,5\n' "$H" "$(printf 'x%.0s' $(seq 1 300))" >"$tmp/long.csv"
expect "bad value 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'" \
  trace stats "$tmp/long.csv"
printf '\001\002,\003\n1,2\n' >"$tmp/garbage.csv"
expect "unknown trace format, header '\\x01\\x02,\\x03'" trace stats "$tmp/garbage.csv"

# 5. Azure timestamps outside what int64 nanoseconds hold (after 2262,
# before 1678): once an integer overflow.
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,5\n2300-01-01 00:00:00,10,5\n' >"$tmp/az.csv"
expect "az.csv:3: column 'TIMESTAMP': bad value '2300-01-01 00:00:00' (expected a date in the years 1678..2261)" \
  trace stats "$tmp/az.csv"
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n1600-01-01 00:00:00,10,5\n' >"$tmp/az2.csv"
expect "(expected a date in the years 1678..2261)" trace stats "$tmp/az2.csv"

# 6. INT64_MAX lengths and block sizes: once overflowed in the clipping and
# the prefix blocks. Lengths are range-checked where they are read.
printf '%s\n0,9223372036854775807,5\n' "$H" >"$tmp/big.csv"
expect "big.csv:2: column 'prompt_tokens': bad value '9223372036854775807' (expected an integer 1..2147483647)" \
  trace stats "$tmp/big.csv" --max-total-tokens 100
printf '%s\n0,2147483647,2147483647\n' "$H" >"$tmp/max.csv"
"$kvsim" trace stats "$tmp/max.csv" --max-total-tokens 9223372036854775807 \
  --prefix-block-size 9223372036854775807 >"$tmp/out" 2>&1 || fail "largest lengths: $(cat "$tmp/out")"
grep -qx 'prefix blocks of 9223372036854775807 tokens: 1 in all, 1 distinct' "$tmp/out" ||
  fail "one block of INT64_MAX tokens: $(cat "$tmp/out")"
printf '{"timestamp": 1e300, "input_length": 10, "output_length": 1}\n' >"$tmp/ts.jsonl"
expect "column 'timestamp': bad value '1e+300' (expected a number 0..9000000000000)" \
  trace stats "$tmp/ts.jsonl"
printf '%s\n1e15,10,5\n' "$H" >"$tmp/late.csv"
expect "column 'arrival_s': bad value '1e15' (expected seconds 0..9000000000)" \
  trace stats "$tmp/late.csv"

# 7. Synthetic arrival parameters out of range: once inf to int64.
w='"prompt_tokens": 10, "output_tokens": 10'
echo "{\"synthetic\": {\"requests\": 5, \"arrival\": {\"process\": \"constant\", \"rate\": 1e-300}, $w}}" >"$tmp/rate.json"
expect "workload.synthetic.arrival.rate: bad value 1e-300 (expected 1e-06..1e+09)" \
  trace gen "$tmp/rate.json" --out "$tmp/rate.csv"
echo "{\"synthetic\": {\"duration_s\": 1e15, \"arrival\": {\"process\": \"poisson\", \"rate\": 1}, $w}}" >"$tmp/dur.json"
expect "workload.synthetic.duration_s: bad value 1e+15 (expected > 0 and <= 9e+09)" \
  trace gen "$tmp/dur.json" --out "$tmp/dur.csv"
echo "{\"synthetic\": {\"requests\": 3, \"arrival\": {\"process\": \"closed_loop\", \"clients\": 1, \"think_s\": 1e15}, $w}}" >"$tmp/think.json"
expect "workload.synthetic.arrival.think_s: bad value 1e+15 (expected 0..9e+09)" \
  trace gen "$tmp/think.json" --out "$tmp/think.csv"

# 8. Outputs replace regular files only: never a pipe, a device or a
# directory (`--out /dev/full` as root once replaced the device).
printf '%s\n0,10,5\n' "$H" >"$tmp/ok.csv"
mkfifo "$tmp/fifo"
expect "fifo: not a regular file (a device, pipe or socket)" trace convert "$tmp/ok.csv" --out "$tmp/fifo"
[ -p "$tmp/fifo" ] || fail "the pipe was replaced"
mkdir "$tmp/dir"
expect "dir: not a regular file (a directory)" trace convert "$tmp/ok.csv" --out "$tmp/dir"
echo "{\"synthetic\": {\"requests\": 3, \"arrival\": {\"process\": \"poisson\", \"rate\": 1}, $w}}" >"$tmp/ok.json"
expect "dir: not a regular file (a directory)" trace gen "$tmp/ok.json" --out "$tmp/dir"
ls "$tmp" | grep -q '\.tmp\.' && fail "a temporary file was left behind"
"$kvsim" trace convert "$tmp/ok.csv" --out "$tmp/ok2.csv" 2>/dev/null || fail "a plain path converts"
"$kvsim" trace convert "$tmp/ok.csv" --out "$tmp/ok2.csv" 2>/dev/null || fail "over a regular file"
echo "ok"
