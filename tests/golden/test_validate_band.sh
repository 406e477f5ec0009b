#!/usr/bin/env bash
# kvsim validate --band (docs/GUIDE.md, "Ranges through the queue"): per measured run or
# silicon row, is the measured mean inside the range of the runs at the
# band's edge step times; the coverage fractions, in-sample and held-out;
# --perf NAME swaps in another GPU's kernel tables (held out), and a host
# term in a GPU file slows the steps.
set -euo pipefail
kvsim=$1
src=$2
d="$src/tests/golden/fidelity"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --band >"$tmp/own.txt" || fail "--measured --band"
# The scales are 1 -/+ the kernels status's bands (gpu.h), printed to two places.
band() { sed -n "s/^#define KVSIM_GPU_BAND_KERNELS_$1 \\([0-9.]*\\).*/\\1/p" "$src/sim/include/kvsim/gpu.h"; }
scales=$(awk -v p="$(band TPOT)" -v t="$(band TTFT)" \
  'BEGIN { printf "step-time scales %.2f and %.2f, prefill %.2f and %.2f", 1 - p, 1 + p, 1 - t, 1 + t }')
grep -q "^coefficients: kernel tables of h100-sxm (kernels); $scales" "$tmp/own.txt" \
  || fail "own tables not labelled with their status and band: $(cat "$tmp/own.txt")"
grep -Eq '^  held-out :  TTFT [01]/1 ' "$tmp/own.txt" || fail "no coverage fraction: $(cat "$tmp/own.txt")"
# --perf NAME: another GPU's kernel profile replaces the H100's tables; the
# result changes and is labelled held out (with the borrowed band).
"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --band --perf h200 >"$tmp/held.txt"
grep -q "h200's kernel tables, held out from h100-sxm (kernels-borrowed band)" "$tmp/held.txt" \
  || fail "held-out label: $(cat "$tmp/held.txt")"
grep -Eq '^  held-out :  TTFT [01]/1 ' "$tmp/held.txt" || fail "no held-out fraction"
tpot() { awk '$1 == "TPOT" && $2 == "mean" { print $7; exit }' "$1"; }
[ -n "$(tpot "$tmp/own.txt")" ] && [ "$(tpot "$tmp/own.txt")" != "$(tpot "$tmp/held.txt")" ] \
  || fail "--perf h200 left the simulated TPOT at $(tpot "$tmp/own.txt") ms"
"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --band --perf h200 --json >"$tmp/held.json"
grep -q '"in_sample":[[:space:]]*false' "$tmp/held.json" || fail "--perf h200 JSON not held out"
# A host term in the GPU file adds to every step: 5 ms of host time per
# step slows the simulated TPOT by more than half of it (+4.0 ms measured
# at this commit, over 7.9 ms with the catalog H100).
{ echo "{"
  grep -E '^  "(name|description|vendor|generation|memory_total_bytes|hbm_bandwidth_GBps|bf16_tflops|fp8_tflops|gpu_link_GBps|tdp_w)":' \
    "$src/configs/gpus/h100-sxm.json"
  echo '  "perf": {"kernels": "h100-sxm", "host_us": 5000}'
  echo "}"; } >"$tmp/host.json"
"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --band --set "hardware.gpu=$tmp/host.json" >"$tmp/host.txt" \
  || fail "host_us GPU file"
awk -v a="$(tpot "$tmp/host.txt")" -v b="$(tpot "$tmp/own.txt")" 'BEGIN { exit !(a > b + 2.5) }' \
  || fail "host_us 5000 TPOT $(tpot "$tmp/host.txt") ms, not 2.5 ms above $(tpot "$tmp/own.txt") ms"
# The generation defaults are gone: default:GEN is not a kernel profile,
# nor is an unknown name; each is one line and exit 2.
for bad in default:hopper h999; do
  rc=0; "$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --perf $bad 2>"$tmp/err" >/dev/null || rc=$?
  [ $rc = 2 ] && grep -q "^kvsim validate: error: --perf: unknown kernel profile '$bad'" "$tmp/err" \
    && [ "$(wc -l <"$tmp/err")" = 1 ] || fail "--perf $bad: rc $rc, $(cat "$tmp/err")"
done
rc=0; "$kvsim" validate --all --perf b200 2>"$tmp/err" || rc=$?
[ $rc = 2 ] && grep -q -- '--perf goes with --measured or --silicon' "$tmp/err" || fail "--all --perf: rc $rc"
# Far slower steps: the measured TPOT falls outside every run.
"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --band --set perf.step_time_scale=8 >"$tmp/slow.txt"
grep -q 'TPOT mean .*OUTSIDE' "$tmp/slow.txt" || fail "8x slower steps still cover TPOT: $(cat "$tmp/slow.txt")"
"$kvsim" validate --silicon "$d/silicon.csv" --band --json >"$tmp/sil.json" || fail "--silicon --band --json"
grep -q '"mode":[[:space:]]*"band-coverage"' "$tmp/sil.json" || fail "silicon JSON"
grep -q '"e2e_mean_s"' "$tmp/sil.json" && fail "silicon rows have no E2E"
rc=0; "$kvsim" validate --startup "$d/requests.jsonl" --band 2>"$tmp/err" || rc=$?
[ $rc = 2 ] || fail "--startup --band exits $rc, want 2"
grep -q -- '--band goes with --measured or --silicon' "$tmp/err" || fail "error: $(cat "$tmp/err")"
echo "validate --band: ok"
