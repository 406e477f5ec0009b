#!/usr/bin/env bash
# Regenerates the expected outputs of the golden end-to-end tests.
# Usage: scripts/update_golden.sh [KVSIM]   (default ./build/kvsim)
set -euo pipefail
cd "$(dirname "$0")/.."
kvsim=${1:-./build/kvsim}
for dir in tests/golden/cases/*/; do
  rm -rf "$dir/expected"
  "$kvsim" run "$dir/scenario.json" --out "$dir/expected" --quiet --check-invariants
  echo "updated $dir/expected"
done
