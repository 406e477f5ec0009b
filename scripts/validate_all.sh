#!/usr/bin/env bash
# The leave-one-group-out table over every dev source (kvsim validate
# --all), and with --write-bands the band figures it gives each fitted GPU:
# band_ttft_rel / band_tpot_rel in configs/gpus/<gpu>.json "perf" = the
# table's "bands" (90th percentile, linear interpolation, of the held-out
# median |error| of that GPU's latency groups but the MoE groups no fit
# saw, which take a borrowed band), so that the band covers the groups'
# truth; the rest of the file is left byte for byte. It prints what a
# borrowed band (gpu.h KVSIM_GPU_BAND_BORROWED_*) must reach.
#
#   scripts/validate_all.sh [--kvsim BIN] [--write-bands] [--no-refit]
#
# kvsim validate --all reads ../shared/validation beside the checkout.
#
# The held-out fits (one per dense silicon group on a GPU with other
# groups) take minutes each on a shared machine. Needs jq.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kvsim=$root/build/kvsim
write=0
extra=()
while (($#)); do
  case $1 in
  --kvsim) kvsim=$2; shift 2 ;;
  --write-bands) write=1; shift ;;
  --no-refit) extra+=(--no-refit); shift ;;
  -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
  *) echo "unknown argument '$1'" >&2; exit 2 ;;
  esac
done
command -v jq >/dev/null || { echo "validate_all.sh needs jq" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
kvsim=$(cd "$(dirname "$kvsim")" && pwd)/$(basename "$kvsim")
(cd "$root" && "$kvsim" validate --all --json "${extra[@]}") >"$tmp/logo.json"
jq -r '.groups[] | select(.source != "startup") |
  [.gpu, .model, .precision, .source, .rows, .held_out.ttft, .held_out.tpot, .held_out.e2e,
   .shipped.ttft, .shipped.tpot, .shipped.e2e, .held_out_from] | @tsv' "$tmp/logo.json"
((write)) || exit 0
echo "a borrowed band must reach: $(jq -r '.bands.borrowed | "TTFT \(.ttft), TPOT \(.tpot) (\(.groups) groups)"' "$tmp/logo.json")"
for g in h100-sxm b200 rtx4090 rtx-pro-6000; do
  f=$root/configs/gpus/$g.json
  t=$(jq -r --arg g "$g" '.bands[$g].ttft // empty' "$tmp/logo.json")
  d=$(jq -r --arg g "$g" '.bands[$g].tpot // empty' "$tmp/logo.json")
  [ -n "$t" ] && [ -n "$d" ] || continue
  # Replace (or add after tpot_rel_sigma) the two band lines of "perf".
  awk -v t="$t" -v d="$d" '
    /"band_ttft_rel"|"band_tpot_rel"/ { next }
    { print }
    /"tpot_rel_sigma":/ { printf "    \"band_ttft_rel\": %.4f,\n    \"band_tpot_rel\": %.4f,\n", t, d }
  ' "$f" >"$tmp/g.json"
  "$kvsim" calc --model llama-3.1-8b --gpu "$tmp/g.json" >/dev/null || { echo "bad result for $g" >&2; exit 1; }
  mv "$tmp/g.json" "$f"
  echo "$g: band_ttft_rel $t, band_tpot_rel $d"
done
