#!/usr/bin/env bash
# scripts/plot.sh on a run, a multi-replica run (and one with more than 4
# replicas: panels), an offload run (CPU tier), a grid and a zip sweep: gnuplot exits 0
# and every PNG is written; a folder that is neither says so (exit 2).
# scripts/plot_compare.sh keeps every candidate, also one without a p99.
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
# preemptions.png only for a run that preempted (no plot of a constant 0).
run_pngs=(kv_cache.png queue.png latency_cdf.png)
"$kvsim" run "$src/tests/golden/cases/v1-preemption/scenario.json" --quiet --out "$tmp/one" --no-verify-advice
bash "$plot" "$tmp/one" "$tmp/one.png" >/dev/null || { echo "plot failed on a run"; fail=1; }
expect "$tmp/one.png" "${run_pngs[@]}" preemptions.png
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
# scripts/plot_compare.sh keeps every candidate: one where no request
# finished at any rate (empty p99 cells) was dropped from the TTFT plot, and
# its KV line with it; a gap where some rates have none; a label with a
# comma or a quote; no candidate swept at all. The gnuplot script is kept
# (a gnuplot on PATH that copies its input) to see what is drawn.
real_gp=$(command -v gnuplot)
mkdir -p "$tmp/shim"
printf '#!/bin/sh\ntee -a "%s" | "%s" "$@"\n' "$tmp/gp.log" "$real_gp" >"$tmp/shim/gnuplot"
chmod +x "$tmp/shim/gnuplot"
cat >"$tmp/cut-study.json" <<'JSON'
{ "name": "cut *plot* _x_", "scenario": { "name": "cut-chat", "seed": 3, "model": "llama-3.2-1b",
    "hardware": { "gpu": "l4" }, "engine": { "max_model_len": 4096, "max_num_seqs": 32 },
    "workload": { "synthetic": { "requests": 40, "arrival": { "process": "poisson", "rate": 10 },
      "prompt_tokens": { "dist": "lognormal", "mean": 500, "sigma": 0.5, "max": 3000 },
      "output_tokens": { "dist": "uniform", "min": 20, "max": 200 } } } },
  "slo": { "ttft_p99_s": 1.0 }, "target_rate": 5, "cost_per_gpu_hour": { "l4": 0.8 },
  "candidates": [ { "label": "L4", "set": {} },
    { "label": "L4 cut", "set": { "output.max_time_s": 0.001 } } ] }
JSON
"$kvsim" compare "$tmp/cut-study.json" --out "$tmp/cmp" --quiet >/dev/null
grep -q '^L4 cut,[0-9.]*,,,' "$tmp/cmp/compare_sweep.csv" ||
  { echo "plot_compare: the study has no candidate without a p99:"; cat "$tmp/cmp/compare_sweep.csv"; fail=1; }
cmp_plot() { # DIR: plot_compare.sh on it, its gnuplot input in $tmp/gp.log
  rm -f "$tmp/gp.log" "$1"/compare_*.png
  PATH=$tmp/shim:$PATH bash "$src/scripts/plot_compare.sh" "$1" >/dev/null 2>"$tmp/cmp.err" ||
    { echo "plot_compare failed on $1: $(cat "$tmp/cmp.err")"; fail=1; }
  expect "$1" compare_ttft.png compare_kv.png compare_goodput_per_dollar.png
  ! grep -q 'no valid points' "$tmp/cmp.err" || { echo "plot_compare: $1: a candidate drew nothing: $(cat "$tmp/cmp.err")"; fail=1; }
}
cmp_plot "$tmp/cmp"
grep -q "keyentry .* title 'L4 cut (no requests finished)'" "$tmp/gp.log" ||
  { echo "plot_compare: the candidate where nothing finished is not in the TTFT plot's key"; fail=1; }
grep -q "index 1 using 1:3 .* title 'L4 cut'" "$tmp/gp.log" ||
  { echo "plot_compare: the candidate where nothing finished lost its KV line"; fail=1; }
# REPORT.md's title escapes the name's Markdown; the plots show the name.
grep -qF 'cut *plot* _x_' "$tmp/gp.log" && ! grep -qF 'cut \*plot' "$tmp/gp.log" ||
  { echo "plot_compare: the study name is not read back from REPORT.md's escaped title"; fail=1; }
# Some rates without a p99 (a gap), and a label with a comma and quotes.
cp -R "$tmp/cmp" "$tmp/gap"
awk -F, 'NR == 3 || NR == 5 { $3 = ""; $4 = "" } 1' OFS=, "$tmp/cmp/compare_sweep.csv" >"$tmp/gap/compare_sweep.csv"
for f in compare.csv compare_sweep.csv; do
  sed -i 's/^L4,/"L4, ""big"" one",/' "$tmp/gap/$f"
done
cmp_plot "$tmp/gap"
grep -q "index 0 using (\$1 \* [0-9.]*):2:4:5 .* title 'L4, \"big\" one (no requests finished at 2 of 7 rates)'" "$tmp/gp.log" ||
  { echo "plot_compare: the partly missing candidate is not drawn with its gaps said"; fail=1; }
# No p99 at any rate, and no candidate swept at all (none fits): figures that say so.
cp -R "$tmp/cmp" "$tmp/nop99"
awk -F, 'NR > 1 { $3 = ""; $4 = "" } 1' OFS=, "$tmp/cmp/compare_sweep.csv" >"$tmp/nop99/compare_sweep.csv"
cmp_plot "$tmp/nop99"
grep -qs "no request finished at any rate tried" "$tmp/gp.log" || { echo "plot_compare: no p99 anywhere is not said"; fail=1; }
cp -R "$tmp/cmp" "$tmp/none"
head -1 "$tmp/cmp/compare_sweep.csv" >"$tmp/none/compare_sweep.csv"
cmp_plot "$tmp/none"
grep -qs "no candidate was swept" "$tmp/gp.log" || { echo "plot_compare: no candidate swept is not said"; fail=1; }
mkdir -p "$tmp/empty"
rc=0
bash "$plot" "$tmp/empty" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "timeseries.csv: not found" "$tmp/err" || { echo "empty folder: rc $rc, $(cat "$tmp/err")"; fail=1; }
exit $fail
