#!/usr/bin/env bash
# Bad input to kvsim trace: exit code 2 and one line naming the problem
# (the cases are data: errors/trace_errors.cases).
# Usage: test_trace_errors.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib_expect_error.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib_error_cases.sh"

# Fixtures of the error cases (errors/trace_errors.cases).
printf 'arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,abc,5\n' >"$tmp/bad.csv"
printf 'arrival_s,prompt_tokens,output_tokens\n2,10,5\n1,10,5\n' >"$tmp/back.csv"
printf '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0]}\n{"timestamp": 1,\n' >"$tmp/bad.jsonl"
printf 'a,b\n1,2\n' >"$tmp/what.csv"
printf '{"synthetic": {"requests": 5, "arival": {"process": "poisson", "rate": 1},\n "prompt_tokens": 10, "output_tokens": 10}}\n' >"$tmp/typo.json"

# The error cases, one per line: errors/trace_errors.cases.
run_error_cases "$src/tests/golden/errors/trace_errors.cases"

# skip-bad-rows turns the error into a count.
"$kvsim" trace stats "$tmp/bad.csv" --skip-bad-rows >"$tmp/out" 2>&1 || fail "--skip-bad-rows failed"
grep -q '^requests: 1 (1 bad rows skipped)$' "$tmp/out" || fail "skip count: $(cat "$tmp/out")"

# A failed convert leaves no output file and no temporary behind.
"$kvsim" trace convert "$tmp/bad.csv" --out "$tmp/conv.csv" 2>/dev/null && fail "convert of a bad trace"
[ ! -e "$tmp/conv.csv" ] || fail "half-written output left"
ls "$tmp" | grep -q 'conv.csv.tmp' && fail "temporary file left"
echo "ok"
