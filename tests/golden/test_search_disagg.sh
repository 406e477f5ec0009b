#!/usr/bin/env bash
# A deployment search with disaggregated layouts (tests/golden/search/
# tiny-disagg-search.json): aggregated L4 instances against units of 1-2
# prefill and 1-2 decode instances. search.csv and REPORT.md equal the
# golden ones and do not depend on --jobs; the 2P:2D unit is listed, not
# run (two units of 1P:1D); REPORT.md says whether disaggregation pays
# (here it does) and gives both sides' launch lines; bad disaggregation
# keys are one error line each (tests/golden/errors/search_disagg.cases).
# Regenerate the goldens with scripts/update_golden.sh.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
studies=$(mktemp -d)
trap 'rm -rf "$tmp" "$studies"' EXIT
cd "$src"
# shellcheck source=lib_expect_error.sh
. tests/golden/lib_expect_error.sh
# shellcheck source=lib_error_cases.sh
. tests/golden/lib_error_cases.sh
study=tests/golden/search/tiny-disagg-search.json
"$kvsim" compare "$study" --jobs 1 --out "$tmp/a" --quiet
"$kvsim" compare "$study" --jobs 2 --out "$tmp/b" >"$tmp/b.out"
for f in search.csv search_frontier.csv; do
  cmp "$tmp/a/$f" "$tmp/b/$f" || fail "$f depends on --jobs"
done
strip() { grep -Ev '^(Reproduce: |!\[|No plots: )' "$1"; }
diff <(strip "$tmp/a/REPORT.md") <(strip "$tmp/b/REPORT.md") || fail "REPORT.md depends on --jobs"
diff tests/golden/search/tiny-disagg-search.search.csv "$tmp/a/search.csv" >"$tmp/d" ||
  { head -20 "$tmp/d"; fail "search.csv differs from the golden one"; }
diff <(strip tests/golden/search/tiny-disagg-search.REPORT.md) <(strip "$tmp/a/REPORT.md") >"$tmp/d" ||
  { head -20 "$tmp/d"; fail "REPORT.md differs from the golden one"; }
csv=$tmp/a/search.csv
# Both kinds are searched; the layout is the last column.
head -1 "$csv" | grep -q ',status,prefill_replicas,prefill_tp,decode_replicas,decode_tp,layout$' ||
  fail "search.csv lacks the layout columns: $(head -1 "$csv")"
grep -q ',aggregated$' "$csv" && grep -q ',disaggregated$' "$csv" || fail "not both kinds in search.csv"
# A unit's GPUs are both sides': 1P TP1 : 2D TP1 is 3 GPUs a unit.
awk -F, '$NF == "disaggregated" && $21 == 1 && $23 == 2 && $7 != "" && $8 != 3 * $7 { bad = 1 } END { exit bad }' "$csv" ||
  fail "a 1P:2D unit of TP1 is not 3 GPUs"
grep -q '"not run: 2P:2D is 2 units of 1P:1D, which the search runs",2,1,2,1,disaggregated$' "$csv" ||
  fail "the 2P:2D unit is not listed as covered"
# Every simulated point is a row: as many as the terminal's simulations.
n=$(grep -o '[0-9]* simulations' "$tmp/b.out" | head -1 | cut -d' ' -f1)
rows=$(awk -F, 'NR > 1 && $7 != ""' "$csv" | wc -l)
[ "$n" = "$rows" ] || fail "$rows point rows for $n simulations"
rep=$tmp/a/REPORT.md
grep -q '^## Aggregated or disaggregated$' "$rep" || fail "REPORT.md has no aggregated-or-disaggregated section"
grep -Eq '^Disaggregation (pays|does not pay|neither saves nor costs) here' "$rep" || fail "REPORT.md does not say whether it pays"
grep -Eq '^\| aggregated \| [0-9]+ x l4 TP1 \| [0-9]+ \|' "$rep" && grep -Eq '^\| disaggregated \| [0-9]+ x l4 \([0-9]P TP1 : [0-9]D TP1\) \|' "$rep" ||
  fail "the two cheapest are not side by side"
# The winner here is disaggregated: both sides' lines, with the connector.
head -1 "$rep" | grep -Eq '^\*\*Deploy [0-9]+ x \([0-9]P TP1 : [0-9]D TP1\) on l4 \([0-9]+ GPUs' ||
  fail "REPORT.md does not open with a disaggregated decision: $(head -1 "$rep")"
[ "$(grep -c "^vllm serve meta-llama/Llama-3.1-8B .* --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'$" "$rep")" = 2 ] ||
  fail "not two vllm serve lines with the NIXL connector"
grep -q '^# prefill: [0-9] instance(s) a unit$' "$rep" && grep -q '^# decode: [0-9] instance(s) a unit$' "$rep" ||
  fail "the launch lines do not name their sides"
grep -q '^Disaggregation pays here' "$tmp/b.out" || fail "the terminal does not say whether it pays"

bad() { # EDIT -> the tiny study with EDIT applied, outside $tmp
  local f
  f=$studies/$(printf '%s' "$1" | md5sum | cut -c1-12).json
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); d=s['search']['disaggregation']; $1; json.dump(s, open(sys.argv[2], 'w'))" \
    "$study" "$f"
  printf '%s' "$f"
}
set +e # expect_error reads each refusal's exit status
run_error_cases tests/golden/errors/search_disagg.cases
set -e
echo ok
