#!/usr/bin/env bash
# scripts/calibrate.sh reproduces the shipped step-time fits of the GPUs
# whose data are per-request runs (RTX 4090, RTX PRO 6000: seconds each;
# the H100 and B200 silicon fits take minutes and are not rerun here): the
# "perf" it writes from today's generation defaults equals the catalog
# file's, but for the band figures, which scripts/validate_all.sh writes
# afterwards. A change to the step model or to the defaults that moves a
# fit fails here until the fit is rerun and shipped. Reads
# ../shared/validation (skipped when absent). $1 = kvsim binary, $2 =
# source dir. Exit non-zero on failure, 77 to skip.
set -u
kvsim=$1
src=$2
[ -d "$src/../shared/validation/llmservingsim" ] || { echo "skip: ../shared/validation is absent"; exit 77; }
command -v jq >/dev/null || { echo "skip: no jq"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$src/scripts/calibrate.sh" --kvsim "$kvsim" --shared "$src/../shared" --out "$tmp" rtx4090 rtx-pro-6000 \
  >"$tmp/log" 2>&1 || { echo "FAIL: calibrate.sh exited $?"; tail -5 "$tmp/log"; exit 1; }
fail=0
for g in rtx4090 rtx-pro-6000; do
  strip='.perf | del(.band_ttft_rel, .band_tpot_rel)'
  if ! diff <(jq -S "$strip" "$src/configs/gpus/$g.json") <(jq -S "$strip" "$tmp/$g.json") >"$tmp/diff"; then
    echo "FAIL: scripts/calibrate.sh $g does not reproduce configs/gpus/$g.json:"
    cat "$tmp/diff"
    fail=1
  fi
  # The rest of the file is left byte for byte.
  cmp -s <(jq 'del(.perf)' "$src/configs/gpus/$g.json") <(jq 'del(.perf)' "$tmp/$g.json") \
    || { echo "FAIL: calibrate.sh changed $g.json outside perf"; fail=1; }
done
((fail)) && exit 1
echo "calibrate.sh reproduces rtx4090 and rtx-pro-6000"
