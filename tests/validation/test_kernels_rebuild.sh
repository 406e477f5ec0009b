#!/usr/bin/env bash
# configs/kernels/<gpu>.json are derived from the measured kernel tables in
# ../shared/kernels (skipped when absent) by scripts/kernels_reduce.py: the
# script must rebuild them byte for byte, twice in a row. $1 = kvsim binary
# (unused), $2 = source dir.
set -euo pipefail
src=$2
[ -d "$src/../shared/kernels" ] || { echo "SKIP: ../shared/kernels not found"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: needs python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for run in a b; do
  python3 "$src/scripts/kernels_reduce.py" --shared "$src/../shared/kernels" --out "$tmp/$run" >"$tmp/$run.log"
done
diff -rq "$tmp/a" "$tmp/b" || { echo "two runs of kernels_reduce.py differ"; exit 1; }
diff -rq --exclude=README.md "$tmp/a" "$src/configs/kernels" \
  || { echo "configs/kernels is stale: rerun scripts/kernels_reduce.py"; exit 1; }
n=$(ls "$tmp/a" | wc -l)
[ "$n" = 6 ] || { echo "expected 6 profiles, got $n"; exit 1; }
echo "ok: $n profiles rebuilt byte for byte"
