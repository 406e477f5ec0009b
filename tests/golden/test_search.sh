#!/usr/bin/env bash
# kvsim compare on a study with a search block (tests/golden/search/
# tiny-search.json): search.csv (one row per simulated point) and REPORT.md
# equal to the golden ones and byte-identical with --jobs 1 and 2; the
# decision first, the winner's vllm serve line, the frontier; a bad search
# block is one error line naming the key, exit 2, nothing written; the
# frontier figure drawn when gnuplot is present.
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
study=tests/golden/search/tiny-search.json
"$kvsim" compare "$study" --jobs 1 --out "$tmp/a" --quiet
"$kvsim" compare "$study" --jobs 2 --out "$tmp/b" >"$tmp/b.out"
for f in search.csv search_frontier.csv; do
  cmp "$tmp/a/$f" "$tmp/b/$f" || { echo "$f depends on --jobs"; exit 1; }
done
strip() { grep -Ev '^(Reproduce: |!\[|No plots: )' "$1"; }
diff <(strip "$tmp/a/REPORT.md") <(strip "$tmp/b/REPORT.md") || { echo "REPORT.md depends on --jobs"; exit 1; }
diff tests/golden/search/tiny-search.search.csv "$tmp/a/search.csv" >"$tmp/d" ||
  { echo "search.csv differs from the golden one:"; head -20 "$tmp/d"; exit 1; }
diff <(strip tests/golden/search/tiny-search.REPORT.md) <(strip "$tmp/a/REPORT.md") >"$tmp/d" ||
  { echo "REPORT.md differs from the golden one:"; head -20 "$tmp/d"; exit 1; }
head -1 "$tmp/a/REPORT.md" | grep -Eq '^\*\*Deploy [0-9]+ x [a-z0-9-]+ TP[0-9]+ \([0-9]+ GPUs' ||
  { echo "REPORT.md does not open with the decision:"; head -1 "$tmp/a/REPORT.md"; exit 1; }
grep -Eq '^vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size [0-9]+ --max-num-seqs [0-9]+ --max-num-batched-tokens [0-9]+ --kv-cache-dtype [a-z0-9]+ --gpu-memory-utilization 0.9 --max-model-len 4096$' "$tmp/a/REPORT.md" ||
  { echo "no vllm serve line ready to paste"; exit 1; }
grep -q '  vllm serve ' "$tmp/b.out" || { echo "the terminal lacks the serve line"; cat "$tmp/b.out"; exit 1; }
# Every simulated point is a row: as many as the terminal's simulations.
n=$(grep -o '[0-9]* simulations' "$tmp/b.out" | head -1 | cut -d' ' -f1)
rows=$(awk -F, 'NR > 1 && $7 != ""' "$tmp/a/search.csv" | wc -l)
[ "$n" = "$rows" ] || { echo "$rows point rows for $n simulations"; exit 1; }
if command -v gnuplot >/dev/null; then
  [ -s "$tmp/a/frontier.png" ] || { echo "frontier.png not drawn"; exit 1; }
  grep -q '^!\[frontier.png\](frontier.png)$' "$tmp/a/REPORT.md" || { echo "frontier.png not linked"; exit 1; }
fi

# A bad search block: one line naming the key, exit 2, no folder
# (errors/search.cases).
bad() { # EDIT (python on s, the study, and b, its search block) -> its file, outside $tmp
  rm -f "$studies/bad.json" # (an EDIT that fails leaves no file, not the last case's)
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); b=s['search']; $1; json.dump(s, open(sys.argv[2], 'w'))" \
    "$study" "$studies/bad.json"
  printf '%s' "$studies/bad.json"
}
run_error_cases tests/golden/errors/search.cases
echo ok
