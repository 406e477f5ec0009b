#!/usr/bin/env bash
# A length distribution's and a popularity picker's numbers out of range:
# one line naming the key and the range of workload/dist.c's one table,
# exit 2, nothing written. The cases are data (errors/dist_fields.cases);
# here, the in-range edges that must still be taken.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib_expect_error.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib_error_cases.sh"
run_error_cases "$src/tests/golden/errors/dist_fields.cases"

# The edges of each range are taken (a short run of the embedded default).
for v in '{"dist":"lognormal","mean":300,"sigma":10,"max":4000}' '{"dist":"normal","mean":300,"std":0}' \
  '{"dist":"uniform","min":1,"max":1}' '{"dist":"zipf","s":1e-9,"max":100}'; do
  "$kvsim" run --set "workload.synthetic.prompt_tokens=$v" --set workload.synthetic.requests=20 --no-band \
    --no-verify-advice --quiet --out "$tmp/ok" >/dev/null 2>"$tmp/err" ||
    fail "in range, refused: $v: $(cat "$tmp/err")"
done
echo ok
