#!/usr/bin/env bash
# Regenerates the expected outputs of the golden end-to-end tests and shows
# what changed: a diff of every expected file against the previous one
# (files added or gone included), then `git diff --stat` of the cases.
# Review the diff before committing it: a golden that moves is a behaviour
# change and its commit says why.
# Usage: scripts/update_golden.sh [KVSIM]   (default ./build/kvsim)
set -euo pipefail
cd "$(dirname "$0")/.."
kvsim=${1:-./build/kvsim}
old=$(mktemp -d)
trap 'rm -rf "$old"' EXIT
changed=0
for dir in tests/golden/cases/*/; do
  # $dir keeps its trailing slash: the resolved trace path in summary.json
  # is printed as kvsim was given it.
  name=$(basename "$dir")
  shown=tests/golden/cases/$name/expected
  mkdir -p "$old/$name"
  [ -d "$dir/expected" ] && cp -R "$dir/expected/." "$old/$name/"
  rm -rf "$dir/expected"
  "$kvsim" run "$dir/scenario.json" --out "$dir/expected" --quiet --check-invariants
  if diff -ru "$old/$name" "$dir/expected" | sed -e "s|$old/$name|old/$name/expected|g"; then
    echo "unchanged $shown"
  else
    echo "UPDATED $shown"
    changed=$((changed + 1))
  fi
done
# The golden REPORT.md of a compare (tests/golden/test_compare.sh).
for study in tests/golden/compare/*.json; do
  rep=${study%.json}.REPORT.md
  "$kvsim" compare "$study" --out "$old/compare" --quiet
  # The reproducing command names the output folder, a temporary one here:
  # the golden says DIR (the test leaves that line out of its comparison).
  sed -i "s|--out $old/compare|--out DIR|" "$old/compare/REPORT.md"
  if [ -f "$rep" ] && diff -u "$rep" "$old/compare/REPORT.md"; then
    echo "unchanged $rep"
  else
    cp "$old/compare/REPORT.md" "$rep"
    echo "UPDATED $rep"
    changed=$((changed + 1))
  fi
done
# The golden search.csv and REPORT.md of a deployment search
# (tests/golden/test_search.sh).
for study in tests/golden/search/*.json; do
  base=${study%.json}
  rm -rf "$old/search"
  "$kvsim" compare "$study" --out "$old/search" --quiet
  sed -i "s|--out $old/search|--out DIR|" "$old/search/REPORT.md"
  for f in search.csv REPORT.md; do
    if [ -f "$base.$f" ] && diff -u "$base.$f" "$old/search/$f"; then
      echo "unchanged $base.$f"
    else
      cp "$old/search/$f" "$base.$f"
      echo "UPDATED $base.$f"
      changed=$((changed + 1))
    fi
  done
done
echo "$changed golden case(s) changed"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git --no-pager diff --stat -- tests/golden/cases
  git status --short --untracked-files=all -- tests/golden/cases
fi
