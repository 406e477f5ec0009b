#!/usr/bin/env bash
# Reproduces the vLLM rows of AIConfigurator's fixed-concurrency table
# (../shared/validation/aiconfigurator/silicon_vllm.csv) for the dense models
# (Qwen3-32B, Llama-3.1-70B, Llama-3.1-8B) and prints the median absolute
# error of mean TTFT and mean TPOT per system and model.
#
#   scripts/validate_silicon.sh [--kvsim BIN] [--shared DIR] [--no-heldout] [--refit]
#
# Sections:
#   shipped   the catalog's calibrated coefficients, fitted on these very
#             rows (scripts/calibrate.sh): in-sample error;
#   held-out  generalisation, each fit on part of the data, error on the rest:
#             by model: H100 fitted on the Qwen3-32B rows only -> Llama-3.1-70B
#                       rows, and fitted on Llama-3.1-70B only -> Qwen3-32B;
#             by GPU:   the H100 coefficients on the B200 rows (B200 hardware,
#                       H100 efficiencies), and the B200 ones on the H100 rows.
# The held-out fits take ~15 minutes and are kept in results/fidelity/
# (--refit redoes them). Targets (issue 6): median |error| TPOT <= 10 %,
# TTFT <= 15 %. This script reports; tests/validation checks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kvsim=$root/build/kvsim
shared=$root/../shared
heldout=1
refit=0
while (($#)); do
  case $1 in
  --kvsim) kvsim=$2; shift 2 ;;
  --shared) shared=$2; shift 2 ;;
  --no-heldout) heldout=0; shift ;;
  --refit) refit=1; shift ;;
  -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
  *) echo "unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$kvsim" ] || { echo "no kvsim binary at $kvsim (build first, or --kvsim BIN)" >&2; exit 2; }
csv=$shared/validation/aiconfigurator/silicon_vllm.csv
[ -f "$csv" ] || { echo "no $csv" >&2; exit 2; }
dense=(--filter model=qwen3-32b --filter model=llama-3.1-70b --filter model=llama-3.1-8b)
res=$root/results/fidelity
mkdir -p "$res"

# Per (system, model): rows and median |error|, from validate's text output.
summary() { # label, then validate arguments
  local label=$1
  shift
  "$kvsim" validate --silicon "$csv" "$@" | awk -v label="$label" '
    / \/ / && NF == 3 { sys = $1; model = $3 }
    /median \|error\| over/ { gsub(/[,%]/, ""); printf "%-34s %-10s %-14s %5s %8s%% %8s%%\n", label, sys, model, $4, $7, $9 }
    /^skipped/ { skipped = skipped $0 "\n" }
    END { if (skipped != "") printf "%s", skipped }'
}

printf "%-34s %-10s %-14s %5s %9s %9s\n" coefficients system model rows "TTFT" "TPOT"
summary "shipped (in-sample)" "${dense[@]}"

if ((heldout)); then
  fit() { # name, calibrate arguments
    local name=$1
    shift
    if ((refit)) || [ ! -f "$res/$name.json" ]; then
      echo "fitting $name (kvsim calibrate $*) ..." >&2
      "$kvsim" calibrate "$@" --silicon "$csv" --out "$res/$name.json" >"$res/$name.txt"
    fi
  }
  fit h100-qwen3-32b --gpu h100-sxm --filter model=qwen3-32b --filter system=h100_sxm
  fit h100-llama-3.1-70b --gpu h100-sxm --filter model=llama-3.1-70b --filter system=h100_sxm
  summary "held-out: H100 fit on Qwen3-32B" --filter model=llama-3.1-70b --filter system=h100_sxm \
    --gpu "$res/h100-qwen3-32b.json" | grep -v '^skipped'
  summary "held-out: H100 fit on Llama-3.1-70B" --filter model=qwen3-32b --filter system=h100_sxm \
    --gpu "$res/h100-llama-3.1-70b.json" | grep -v '^skipped'
  summary "held-out: H100 coefficients" "${dense[@]}" --filter system=b200_sxm --perf h100-sxm | grep -v '^skipped'
  summary "held-out: B200 coefficients" "${dense[@]}" --filter system=h100_sxm --perf b200 | grep -v '^skipped'
fi
echo "TTFT / TPOT: median |error| of the rows' mean TTFT / mean TPOT (targets: TTFT <= 15 %, TPOT <= 10 %)."
