#!/usr/bin/env bash
# Bad input to kvsim trace: exit code 2 and one line naming the problem.
# Usage: test_trace_errors.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect "pattern" args...: exit 2, exactly one stderr line matching pattern, no stdout.
expect() {
  local pat=$1
  shift
  "$kvsim" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "'$*': exit $rc, want 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*': want one line, got: $(cat "$tmp/err")"
  grep -q -- "$pat" "$tmp/err" || fail "'$*': '$(cat "$tmp/err")' lacks '$pat'"
  [ ! -s "$tmp/out" ] || fail "'$*': printed to stdout"
}

printf 'arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,abc,5\n' >"$tmp/bad.csv"
printf 'arrival_s,prompt_tokens,output_tokens\n2,10,5\n1,10,5\n' >"$tmp/back.csv"
printf '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0]}\n{"timestamp": 1,\n' >"$tmp/bad.jsonl"
printf 'a,b\n1,2\n' >"$tmp/what.csv"
printf '{"synthetic": {"requests": 5, "arival": {"process": "poisson", "rate": 1},\n "prompt_tokens": 10, "output_tokens": 10}}\n' >"$tmp/typo.json"

expect "bad.csv:3: column 'prompt_tokens': bad value 'abc'" trace stats "$tmp/bad.csv"
expect "back.csv:3: column 'arrival_s': bad value 1.000000000 s (goes backwards" trace stats "$tmp/back.csv"
expect "bad.jsonl:2: invalid JSON" trace stats "$tmp/bad.jsonl"
expect "what.csv:1: unknown trace format, header 'a,b'" trace stats "$tmp/what.csv"
expect "cannot open" trace stats "$tmp/nope.csv"
expect "unknown flag '--jsn' (did you mean '--json'?)" trace stats "$tmp/bad.csv" --jsn
expect "\-\-limit: expected an integer, got 'x'" trace stats "$tmp/bad.csv" --limit x
expect "\-\-time-scale: bad value -1" trace stats "$tmp/bad.csv" --time-scale -1
expect "\-\-format: bad value 'csv'" trace stats "$tmp/bad.csv" --format csv
expect "\-\-lru-blocks: needs --prefix-block-size" trace stats "$tmp/bad.csv" --lru-blocks 10
expect "unknown subcommand 'stat'" trace stat "$tmp/bad.csv"
expect "\-\-out: missing" trace convert "$tmp/bad.csv"
expect "typo.json: workload.synthetic.arival: unknown key (did you mean 'arrival'?)" trace gen \
  "$tmp/typo.json" --out "$tmp/x.csv"

# skip-bad-rows turns the error into a count.
"$kvsim" trace stats "$tmp/bad.csv" --skip-bad-rows >"$tmp/out" 2>&1 || fail "--skip-bad-rows failed"
grep -q '^requests: 1 (1 bad rows skipped)$' "$tmp/out" || fail "skip count: $(cat "$tmp/out")"

# A failed convert leaves no output file and no temporary behind.
"$kvsim" trace convert "$tmp/bad.csv" --out "$tmp/conv.csv" 2>/dev/null && fail "convert of a bad trace"
[ ! -e "$tmp/conv.csv" ] || fail "half-written output left"
ls "$tmp" | grep -q 'conv.csv.tmp' && fail "temporary file left"
echo "ok"
