#!/usr/bin/env bash
# Golden end-to-end runs: each tests/golden/cases/NAME/scenario.json is run
# and its outputs compared byte for byte with NAME/expected/. Regenerate
# with scripts/update_golden.sh after an intended change, and say why in
# the commit. Usage: test_golden.sh KVSIM SOURCE_DIR
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for dir in "$src"/tests/golden/cases/*/; do
  name=$(basename "$dir")
  "$kvsim" run "$dir/scenario.json" --out "$tmp/$name" --quiet --check-invariants
  # A disaggregated case has its hand-off's series too.
  files="requests.csv timeseries.csv summary.json"
  [ -f "$dir/expected/transfer.csv" ] && files+=" transfer.csv"
  for f in $files; do
    # The version string may change, and a resolved trace path depends on
    # the folder kvsim was started from.
    if ! diff <(grep -Ev '"(kvsim_version|trace)"' "$dir/expected/$f") \
              <(grep -Ev '"(kvsim_version|trace)"' "$tmp/$name/$f") >"$tmp/diff"; then
      echo "golden $name/$f differs:"; head -20 "$tmp/diff"; fail=1
    fi
  done
  # Determinism: a second run is byte-identical.
  "$kvsim" run "$dir/scenario.json" --out "$tmp/$name.again" --quiet
  for f in $files; do
    cmp -s "$tmp/$name/$f" "$tmp/$name.again/$f" || { echo "golden $name/$f: second run differs"; fail=1; }
  done
done
exit $fail
