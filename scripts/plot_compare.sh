#!/usr/bin/env bash
# Plots a kvsim compare folder (gnuplot, PNG), from its compare_sweep.csv
# and compare.csv:
#   compare_ttft.png               p99 TTFT against offered rate, one line per
#                                  candidate, the SLO and the target rate marked
#   compare_kv.png                 peak KV cache usage against offered rate
#   compare_goodput_per_dollar.png goodput per dollar-hour, one bar per candidate
# Usage: scripts/plot_compare.sh DIR   (kvsim compare runs it when gnuplot is present)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=plot_lib.sh
. "$here/plot_lib.sh"
dir=${1:?usage: plot_compare.sh DIR}
command -v gnuplot >/dev/null || { echo "plot_compare.sh: gnuplot not found" >&2; exit 2; }
for f in compare.csv compare_sweep.csv REPORT.md; do
  [ -f "$dir/$f" ] || { echo "plot_compare.sh: $dir/$f: not found (not a compare folder)" >&2; exit 2; }
done
# The SLO and target from REPORT.md's question line, the study name from its
# title (Markdown-escaped there: each backslash pair is the character).
slo=$(sed -n 's/.*p99 TTFT <= \([0-9.e+-]*\) s.*/\1/p' "$dir/REPORT.md" | head -1)
name=$(sed -n '1s/^# Capacity review: //p' "$dir/REPORT.md" | sed 's/\\\(.\)/\1/g')
# CSV fields, quoted ones included (a label may hold a comma or a quote):
# csv(line, f) fills f[1..n] and returns n.
csv_awk='function csv(line, f,   n, c, q, i, ch) {
  n = 1; f[1] = ""; q = 0
  for (i = 1; i <= length(line); i++) {
    ch = substr(line, i, 1)
    if (q && ch == "\"" && substr(line, i + 1, 1) == "\"") { f[n] = f[n] "\""; i++ }
    else if (ch == "\"") q = !q
    else if (ch == "," && !q) f[++n] = ""
    else f[n] = f[n] ch
  }
  return n
}'
# compare.csv's columns by name.
col() { awk -F, -v n="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == n) print i; exit }' "$dir/compare.csv"; }
c_target=$(col target_rate) c_fits=$(col fits) c_gpd=$(col goodput_per_dollar) c_model=$(col model) c_goodput=$(col goodput_rps)
target=$(awk "$csv_awk"' NR == 2 { csv($0, f); print f[c] }' c="$c_target" "$dir/compare.csv")
model=$(awk "$csv_awk"' NR == 2 { csv($0, f); print f[c] }' c="$c_model" "$dir/compare.csv")
who=$(gq "$name ($model)") out=$(gq "$dir")
slo_lines=""
if [ -n "$slo" ]; then
  slo_lines="set arrow from graph 0, first $slo to graph 1, first $slo nohead dt 2 lw 2 lc rgb 'red'
set label 'SLO $slo s' at graph 0.01, first $slo offset 0,0.7 tc rgb 'red'"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One data block per candidate (gnuplot's "index"): rate, p99 TTFT, KV peak.
# A rate where no request finished has no p99 (an empty cell): NaN, a gap
# in its line, and the candidate stays, its key saying so. cands: label,
# then the rates with a p99 and all its rates, one tab-separated line each.
awk "$csv_awk"' NR > 1 { csv($0, f)
  if (f[1] != last) { if (n) { print "\n" >> (d "/sweep.dat"); print label "\t" ok "\t" all >> (d "/cands") }
    n++; last = f[1]; label = f[1]; ok = all = 0 }
  all++; ok += f[3] != ""
  print f[2], (f[3] == "" ? "NaN" : f[3]), (f[5] == "" ? "NaN" : f[5]) >> (d "/sweep.dat") }
  END { if (n) print label "\t" ok "\t" all >> (d "/cands") }' d="$tmp" "$dir/compare_sweep.csv"
touch "$tmp/cands"
n=$(wc -l <"$tmp/cands")
if [ "$n" = 0 ]; then
  # No candidate was swept (none fits, or every one failed): nothing to draw
  # against rate, said in the figures instead of an error.
  empty_plot "$dir/compare_ttft.png" "$name ($model): no candidate was swept (none fits or ran): no p99 TTFT to plot"
  empty_plot "$dir/compare_kv.png" "$name ($model): no candidate was swept (none fits or ran): no KV usage to plot"
fi
# The plot items: a candidate's line, or (no p99 at any rate) its key
# entry alone.
ttft_plot="" kv_plot="" i=0
while IFS=$'\t' read -r label ok all; do
  case $ok in
    "$all") note="" ;;
    0) note=" (no requests finished)" ;;
    *) note=" (no requests finished at $((all - ok)) of $all rates)" ;;
  esac
  style="with linespoints lw 2 lt $((i + 1))"
  if [ "$ok" = 0 ]; then
    ttft_plot+="${ttft_plot:+, }keyentry $style title '$(gq "$label$note")'"
  else
    ttft_plot+="${ttft_plot:+, }'$tmp/sweep.dat' index $i using 1:2 $style title '$(gq "$label$note")'"
  fi
  kv_plot+="${kv_plot:+, }'$tmp/sweep.dat' index $i using 1:3 $style title '$(gq "$label")'"
  i=$((i + 1))
done <"$tmp/cands"
any_p99=$(awk -F'\t' '$2 > 0 { n++ } END { print n + 0 }' "$tmp/cands")
# Bars: goodput per dollar-hour, with a note where there is none (no fit,
# no rate met, no price).
awk "$csv_awk"' NR > 1 { csv($0, f); v = f[g]; note = f[fi] == "false" ? "does not fit" : f[fi] != "true" ? "failed" : f[gp] == "" ? "no goodput" : v == "" ? "no price" : ""
  gsub(/"/, "'"'"'", f[1]); print NR - 1, (v == "" ? 0 : v), "\"" f[1] "\"", "\"" note "\"" }' \
  g="$c_gpd" fi="$c_fits" gp="$c_goodput" "$dir/compare.csv" >"$tmp/gpd.dat"
have_price=$(awk "$csv_awk"' NR > 1 { csv($0, f); if (f[g] != "") n++ } END { print n + 0 }' g="$c_gpd" "$dir/compare.csv")

# Against rate: p99 TTFT and KV peak (when a candidate was swept).
rate_plots=""
if [ "$n" != 0 ]; then
  # With no p99 anywhere the TTFT axis has nothing to scale to: a fixed
  # decade range and a note, the candidates still in the key.
  no_p99="" no_p99_x=""
  if [ "$any_p99" = 0 ]; then
    no_p99="set yrange [0.01:10]
set label 'no request finished at any rate tried: no p99 TTFT' at graph 0.5, graph 0.5 center"
    no_p99_x="set xrange [STATS_min * 0.95 : STATS_max * 1.05]"
    ttft_plot="NaN notitle, $ttft_plot" # key entries alone are no plot to gnuplot
  fi
  rate_plots=$(cat <<GP
set output '$out/compare_ttft.png'
set title '$who: p99 TTFT against offered rate, one deployment per line'
set xlabel "offered rate (req/s)"
set ylabel "p99 TTFT (s, log scale)"
set logscale y
$slo_lines
$no_p99
# The target is for the whole fleet: marked when one deployment's sweep
# reaches it, else said in the title (the replicas it takes are in REPORT.md).
stats '$tmp/sweep.dat' using 1 nooutput
$no_p99_x
if ($target <= STATS_max * 1.05) {
  set arrow from first $target, graph 0 to first $target, graph 1 nohead dt 3 lw 2 lc rgb "black"
  set label "target $target req/s" at first $target, graph 0.95 offset 0.5,0
} else {
  set title '$who: p99 TTFT against offered rate, one deployment per line' . "\n(target $target req/s is beyond one deployment: replicas in REPORT.md)"
}
plot $ttft_plot
unset logscale y
unset arrow
unset label
set output '$out/compare_kv.png'
set title '$who: peak KV cache usage against offered rate'
set ylabel "peak KV cache usage (fraction of the pool)"
# Room above a full pool (1.0) for the target's label, which would sit on
# the saturated curves at the top of a [0, 1] range.
set yrange [0:1.15]
set ytics 0, 0.2, 1
if ($target <= STATS_max * 1.05) {
  set arrow from first $target, graph 0 to first $target, graph 1 nohead dt 3 lw 2 lc rgb "black"
  set label "target $target req/s" at first $target, first 1.09 offset 0.5,0
} else {
  set title '$who: peak KV cache usage against offered rate' . "\n(target $target req/s is beyond one deployment: replicas in REPORT.md)"
}
plot $kv_plot
unset arrow
unset label
GP
)
fi

gnuplot <<GP
set terminal pngcairo noenhanced size 1000,520 font ",10"
set datafile separator whitespace
set key outside right top
set grid
$rate_plots
set output '$out/compare_goodput_per_dollar.png'
set title ($have_price > 0 ? '$who: goodput per dollar-hour of one deployment (the study''s prices)' : '$(gq "$name"): no prices given (cost_per_gpu_hour): nothing to show')
set ylabel "goodput per dollar-hour ((req/s) / (\$/h))"
set xlabel "candidate"
set autoscale x
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
