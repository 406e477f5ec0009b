#!/usr/bin/env bash
# Plots a kvsim run for a capacity review (gnuplot, PNG):
#   kv_cache.png   KV cache usage and cached-but-free blocks over time
#   queue.png      running and waiting requests over time
#   preemptions.png cumulative preemptions over time
#   latency_cdf.png CDF of TTFT and end-to-end latency
# Usage: scripts/plot.sh RUN_DIR [OUT_DIR]   (RUN_DIR holds timeseries.csv
# and requests.csv from `kvsim run`; OUT_DIR defaults to RUN_DIR)
set -euo pipefail
run=${1:?usage: scripts/plot.sh RUN_DIR [OUT_DIR]}
out=${2:-$run}
for f in timeseries.csv requests.csv; do
  [ -f "$run/$f" ] || { echo "plot: $run/$f: not found (is this a kvsim run folder?)" >&2; exit 2; }
done
command -v gnuplot >/dev/null || { echo "plot: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 2; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Replicas go to separate series; gnuplot reads whitespace columns.
replicas=$(awk -F, 'NR > 1 { r[$2] = 1 } END { print length(r) }' "$run/timeseries.csv")
awk -F, -v d="$tmp" 'NR > 1 {
  total = $4 + $5 + $6
  print $1, 100 * $3, (total ? 100 * $5 / total : 0), $7, $8, $10 > (d "/r" $2 ".dat") }' "$run/timeseries.csv"
# CDFs: sorted latencies with their rank.
awk -F, 'NR > 1 && $14 == "finished" { print $11 }' "$run/requests.csv" | sort -g |
  awk '{ a[NR] = $1 } END { for (i = 1; i <= NR; i++) print a[i], i / NR }' >"$tmp/ttft.dat"
awk -F, 'NR > 1 && $14 == "finished" { print $13 }' "$run/requests.csv" | sort -g |
  awk '{ a[NR] = $1 } END { for (i = 1; i <= NR; i++) print a[i], i / NR }' >"$tmp/e2e.dat"

plot_series() { # FILE TITLE YLABEL COLUMN LABEL [COLUMN LABEL]
  local file=$1 title=$2 ylabel=$3
  shift 3
  local cmd="" sep=""
  for ((r = 0; r < replicas; r++)); do
    local args=("$@") suffix=""
    if [ "$replicas" -gt 1 ]; then suffix=" (replica $r)"; fi
    while ((${#args[@]})); do
      cmd+="$sep'$tmp/r$r.dat' using 1:${args[0]} with lines title '${args[1]}$suffix'"
      sep=", "
      args=("${args[@]:2}")
    done
  done
  gnuplot 2>/dev/null <<GP
set terminal pngcairo noenhanced size 1000,420 font ",10"
set output '$file'
set title '$title'
set xlabel 'simulated time (s)'
set ylabel '$ylabel'
set grid
set key outside right
set yrange [0:1<*]
plot $cmd
GP
  # gnuplot's stderr is silenced (it warns about flat series); check the result.
  [ -s "$file" ] || { echo "plot: gnuplot did not write $file" >&2; exit 1; }
}
plot_series "$out/kv_cache.png" "KV cache (vllm:kv_cache_usage_perc)" "% of blocks" 2 "used" 3 "cached, free"
plot_series "$out/queue.png" "Requests" "requests" 4 "running" 5 "waiting"
plot_series "$out/preemptions.png" "Preemptions (cumulative)" "preemptions" 6 "preemptions"
gnuplot <<GP
set terminal pngcairo noenhanced size 1000,420 font ",10"
set output '$out/latency_cdf.png'
set title 'Latency of finished requests'
set xlabel 'seconds'
set ylabel 'fraction of requests'
set logscale x
set grid
set key bottom right
plot '$tmp/ttft.dat' using 1:2 with lines title 'TTFT', '$tmp/e2e.dat' using 1:2 with lines title 'end to end'
GP
echo "plots in $out: kv_cache.png queue.png preemptions.png latency_cdf.png"
