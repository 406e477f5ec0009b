#!/usr/bin/env bash
# scripts/plot.sh on a run, a multi-replica run (and one with more than 4
# replicas: panels), an offload run (CPU tier), a grid and a zip sweep: gnuplot exits 0
# and every PNG is written; a folder that is neither says so (exit 2).
# Skipped without gnuplot (scripts/deps.sh installs gnuplot-nox).
set -euo pipefail
kvsim=$1
src=$2
command -v gnuplot >/dev/null || { echo "SKIP: gnuplot is not installed (scripts/deps.sh installs gnuplot-nox)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
plot=$src/scripts/plot.sh
expect() { # DIR FILE...
  local d=$1
  shift
  for f in "$@"; do
    [ -s "$d/$f" ] || { echo "plot: $d/$f missing or empty"; fail=1; }
    head -c 8 "$d/$f" 2>/dev/null | grep -q PNG || { echo "plot: $d/$f is not a PNG"; fail=1; }
  done
}
run_pngs=(kv_cache.png queue.png preemptions.png latency_cdf.png)
"$kvsim" run "$src/tests/golden/cases/v1-preemption/scenario.json" --quiet --out "$tmp/one" --no-verify-advice
bash "$plot" "$tmp/one" "$tmp/one.png" >/dev/null || { echo "plot failed on a run"; fail=1; }
expect "$tmp/one.png" "${run_pngs[@]}"
[ ! -e "$tmp/one.png/replicas.png" ] || { echo "replica panels for one replica"; fail=1; }
two=$src/tests/golden/cases/v1-two-replicas/scenario.json
"$kvsim" run "$two" --quiet --out "$tmp/two" --no-verify-advice
bash "$plot" "$tmp/two" >/dev/null || { echo "plot failed on a 2-replica run"; fail=1; }
expect "$tmp/two" "${run_pngs[@]}"
"$kvsim" run "$two" --quiet --out "$tmp/six" --no-verify-advice --set hardware.replicas=6
bash "$plot" "$tmp/six" >/dev/null || { echo "plot failed on a 6-replica run"; fail=1; }
expect "$tmp/six" "${run_pngs[@]}" replicas.png
"$kvsim" run "$src/configs/scenarios/offload-multiturn-rtx4090.json" --quiet --out "$tmp/cpu" \
  --no-verify-advice --set workload.synthetic.requests=60 --set engine.kv_offloading_size=64
bash "$plot" "$tmp/cpu" >/dev/null || { echo "plot failed on an offload run"; fail=1; }
expect "$tmp/cpu" "${run_pngs[@]}"
"$kvsim" sweep "$src/tests/golden/data/small-sweep.json" --quiet --out "$tmp/sweep" >/dev/null
bash "$plot" "$tmp/sweep" >"$tmp/sweep.out" || { echo "plot failed on a sweep"; fail=1; }
expect "$tmp/sweep" sweep_ttft_p99_s.png sweep_requests_per_s.png sweep_kv_usage_peak.png sweep_preemptions.png
n=$(ls "$tmp/sweep"/sweep_*.png | wc -l)
[ "$n" -eq 18 ] || { echo "sweep: $n figures plotted, expected the 18 of sweep.csv"; fail=1; }
# A zip sweep (GPU with its TP): one line over the points.
"$kvsim" sweep "$src/configs/sweeps/gpu-tp-zip.json" --quiet --out "$tmp/zip" >/dev/null
bash "$plot" "$tmp/zip" >/dev/null || { echo "plot failed on a zip sweep"; fail=1; }
expect "$tmp/zip" sweep_ttft_p99_s.png sweep_num_gpu_blocks.png
mkdir -p "$tmp/empty"
rc=0
bash "$plot" "$tmp/empty" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "timeseries.csv: not found" "$tmp/err" || { echo "empty folder: rc $rc, $(cat "$tmp/err")"; fail=1; }
exit $fail
