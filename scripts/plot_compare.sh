#!/usr/bin/env bash
# Plots a kvsim compare folder (gnuplot, PNG), from its compare_sweep.csv
# and compare.csv:
#   compare_ttft.png               p99 TTFT against offered rate, one line per
#                                  candidate, the SLO and the target rate marked
#   compare_kv.png                 peak KV cache usage against offered rate
#   compare_goodput_per_dollar.png goodput per dollar-hour, one bar per candidate
# Usage: scripts/plot_compare.sh DIR   (kvsim compare runs it when gnuplot is present)
set -euo pipefail
dir=${1:?usage: plot_compare.sh DIR}
command -v gnuplot >/dev/null || { echo "plot_compare.sh: gnuplot not found" >&2; exit 2; }
for f in compare.csv compare_sweep.csv REPORT.md; do
  [ -f "$dir/$f" ] || { echo "plot_compare.sh: $dir/$f: not found (not a compare folder)" >&2; exit 2; }
done
# The SLO and target from REPORT.md's question line, the study name from its
# title (Markdown-escaped there: each backslash pair is the character).
slo=$(sed -n 's/.*p99 TTFT <= \([0-9.e+-]*\) s.*/\1/p' "$dir/REPORT.md" | head -1)
# compare.csv's columns by name (labels are plain words: quoted only with a comma).
col() { awk -F, -v n="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == n) print i; exit }' "$dir/compare.csv"; }
c_target=$(col target_rate) c_fits=$(col fits) c_gpd=$(col goodput_per_dollar)
target=$(awk -F, -v c="$c_target" 'NR == 2 { print $c }' "$dir/compare.csv")
name=$(sed -n '1s/^# Capacity review: //p' "$dir/REPORT.md" | sed 's/\\\(.\)/\1/g')
model=$(awk -F, 'NR == 2 { print $3 }' "$dir/compare.csv")
slo_lines=""
if [ -n "$slo" ]; then
  slo_lines="set arrow from graph 0, first $slo to graph 1, first $slo nohead dt 2 lw 2 lc rgb 'red'
set label 'SLO $slo s' at graph 0.01, first $slo offset 0,0.7 tc rgb 'red'"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One data block per candidate (gnuplot's "index"), labels in a list.
# Candidate labels are plain words in compare.csv (quoted only when they hold a comma).
awk -F, -v d="$tmp" 'NR > 1 { if ($1 != last) { if (n) print "\n" >> (d "/sweep.dat"); n++; last = $1; print $1 > (d "/labels") }
  if ($3 != "") print $2, $3, $5 >> (d "/sweep.dat") }' "$dir/compare_sweep.csv"
n=$(wc -l <"$tmp/labels")
# Bars: goodput per dollar-hour, with a note where there is none (no fit, no price).
awk -F, -v g="$c_gpd" -v f="$c_fits" 'NR > 1 { v = $g; note = $f == "false" ? "does not fit" : $f != "true" ? "failed" : v == "" ? "no price" : ""
  print NR - 1, (v == "" ? 0 : v), "\"" $1 "\"", "\"" note "\"" }' "$dir/compare.csv" >"$tmp/gpd.dat"
have_price=$(awk -F, -v g="$c_gpd" 'NR > 1 && $g != "" { n++ } END { print n + 0 }' "$dir/compare.csv")

gnuplot <<GP
set terminal pngcairo noenhanced size 1000,520 font ",10"
set datafile separator whitespace
set key outside right top
set grid
set output '$dir/compare_ttft.png'
set title sprintf("%s (%s): p99 TTFT against offered rate, one deployment per line", "$name", "$model")
set xlabel "offered rate (req/s)"
set ylabel "p99 TTFT (s, log scale)"
set logscale y
$slo_lines
# The target is for the whole fleet: marked when one deployment's sweep
# reaches it, else said in the title (the replicas it takes are in REPORT.md).
stats '$tmp/sweep.dat' using 1 nooutput
if ($target <= STATS_max * 1.05) {
  set arrow from first $target, graph 0 to first $target, graph 1 nohead dt 3 lw 2 lc rgb "black"
  set label "target $target req/s" at first $target, graph 0.95 offset 0.5,0
} else {
  set title sprintf("%s (%s): p99 TTFT against offered rate, one deployment per line\n(target $target req/s is beyond one deployment: replicas in REPORT.md)", "$name", "$model")
}
plot for [i=0:$n-1] '$tmp/sweep.dat' index i using 1:2 with linespoints lw 2 title system("sed -n " . (i + 1) . "p '$tmp/labels'")
unset logscale y
unset arrow
unset label
set output '$dir/compare_kv.png'
set title sprintf("%s (%s): peak KV cache usage against offered rate", "$name", "$model")
set ylabel "peak KV cache usage (fraction of the pool)"
# Room above a full pool (1.0) for the target's label, which would sit on
# the saturated curves at the top of a [0, 1] range.
set yrange [0:1.15]
set ytics 0, 0.2, 1
if ($target <= STATS_max * 1.05) {
  set arrow from first $target, graph 0 to first $target, graph 1 nohead dt 3 lw 2 lc rgb "black"
  set label "target $target req/s" at first $target, first 1.09 offset 0.5,0
} else {
  set title sprintf("%s (%s): peak KV cache usage against offered rate\n(target $target req/s is beyond one deployment: replicas in REPORT.md)", "$name", "$model")
}
plot for [i=0:$n-1] '$tmp/sweep.dat' index i using 1:3 with linespoints lw 2 title system("sed -n " . (i + 1) . "p '$tmp/labels'")
unset arrow
unset label
set output '$dir/compare_goodput_per_dollar.png'
set title ($have_price > 0 ? sprintf("%s (%s): goodput per dollar-hour of one deployment (the study's prices)", "$name", "$model") : "$name: no prices given (cost_per_gpu_hour): nothing to show")
set ylabel "goodput per dollar-hour ((req/s) / (\$/h))"
set xlabel "candidate"
set autoscale y
set yrange [0:*]
set ytics autofreq
set style fill solid 0.6
set boxwidth 0.6
set xtics rotate by -30
unset key
plot '$tmp/gpd.dat' using 1:2:xtic(3) with boxes lc rgb "#4477aa", '' using 1:2:4 with labels offset 0,1
GP
echo "plots: $dir/compare_ttft.png $dir/compare_kv.png $dir/compare_goodput_per_dollar.png"
