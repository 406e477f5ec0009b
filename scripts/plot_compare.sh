#!/usr/bin/env bash
# Plots a kvsim compare folder (gnuplot, PNG), from its compare_sweep.csv
# and compare.csv:
#   compare_ttft.png               p99 TTFT against offered rate, one line per
#                                  candidate, the band's range at each rate as
#                                  error bars, the SLO and the target rate marked
#   compare_tpot.png               p99 TPOT likewise (none when no candidate
#                                  has a TPOT, or all are one constant)
#   compare_kv.png                 peak KV cache usage against offered rate
#                                  (none when it is one constant)
#   compare_goodput_per_dollar.png goodput per dollar-hour, one bar per candidate
#                                  with its band range (none without prices)
# Titles from the study's name. kvsim compare runs it (compiled in) with
# KVSIM_PLOT_NAME, KVSIM_PLOT_TTFT_SLO and KVSIM_PLOT_TPOT_SLO set; run by
# hand it reads them from REPORT.md.
# Usage: scripts/plot_compare.sh DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=plot_lib.sh
. "$here/plot_lib.sh"
dir=${1:?usage: plot_compare.sh DIR}
command -v gnuplot >/dev/null || { echo "plot_compare.sh: gnuplot not found" >&2; exit 2; }
for f in compare.csv compare_sweep.csv; do
  [ -f "$dir/$f" ] || { echo "plot_compare.sh: $dir/$f: not found (not a compare folder)" >&2; exit 2; }
done
if [ -n "${KVSIM_PLOT_NAME:-}" ]; then
  name=$KVSIM_PLOT_NAME slo=${KVSIM_PLOT_TTFT_SLO:-} tpot_slo=${KVSIM_PLOT_TPOT_SLO:-}
else
  [ -f "$dir/REPORT.md" ] || { echo "plot_compare.sh: $dir/REPORT.md: not found (not a compare folder)" >&2; exit 2; }
  # The SLO from REPORT.md's question line, the study name from its title
  # (Markdown-escaped there: each backslash pair is the character).
  slo=$(sed -n 's/.*p99 TTFT <= \([0-9.e+-]*\) s.*/\1/p' "$dir/REPORT.md" | head -1)
  tpot_slo=$(sed -n 's/.*p99 TPOT <= \([0-9.e+-]*\) s.*/\1/p' "$dir/REPORT.md" | head -1)
  name=$(sed -n 's/^# Capacity review: //p' "$dir/REPORT.md" | head -1 | sed 's/\\\(.\)/\1/g')
fi
rm -f "$dir"/compare_*.png # an older run's figures: only this one's stay
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
c_glo=$(col goodput_lo) c_ghi=$(col goodput_hi)
target=$(awk "$csv_awk"' NR == 2 { csv($0, f); print f[c] }' c="$c_target" "$dir/compare.csv")
model=$(awk "$csv_awk"' NR == 2 { csv($0, f); print f[c] }' c="$c_model" "$dir/compare.csv")
who=$(gq "$name ($model)") out=$(gq "$dir")
# slo_line VALUE: the SLO as a red dashed line (nothing without one).
slo_line() {
  [ -n "$1" ] || return 0
  printf "set arrow from graph 0, first %s to graph 1, first %s nohead dt 2 lw 2 lc rgb 'red'\n" "$1" "$1"
  printf "set label 'SLO %s s' at graph 0.01, first %s offset 0,0.7 tc rgb 'red'\n" "$1" "$1"
}
slo_lines=$(slo_line "$slo") tpot_lines=$(slo_line "$tpot_slo")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One data block per candidate (gnuplot's "index"): rate, p99 TTFT, KV peak.
# A rate where no request finished has no p99 (an empty cell): NaN, a gap
# in its line, and the candidate stays, its key saying so. cands: label,
# then the rates with a p99 and all its rates, one tab-separated line each.
awk "$csv_awk"' function nan(v) { return v == "" || v == "inf" ? "NaN" : v }
  NR > 1 { csv($0, f)
  if (f[1] != last) { if (n) { print "\n" >> (d "/sweep.dat"); print label "\t" ok "\t" all >> (d "/cands") }
    n++; last = f[1]; label = f[1]; ok = all = 0 }
  all++; ok += f[3] != ""
  print f[2], nan(f[3]), nan(f[5]), nan(f[6]), nan(f[7]), nan(f[4]), nan(f[8]), nan(f[9]) >> (d "/sweep.dat") }
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
ttft_plot="" tpot_plot="" kv_plot="" i=0
while IFS=$'\t' read -r label ok all; do
  case $ok in
    "$all") note="" ;;
    0) note=" (no requests finished)" ;;
    *) note=" (no requests finished at $((all - ok)) of $all rates)" ;;
  esac
  style="with linespoints lw 2 lt $((i + 1))"
  # The band's range at each rate as error bars (yerrorlines: y, low, high),
  # each candidate's rates nudged by up to +-1.5 % so that equal lines and
  # their bars stay apart.
  ranged="with yerrorlines lw 2 lt $((i + 1))"
  x=$(awk -v i="$i" -v n="$n" 'BEGIN { printf "($1 * %.4f)", 1 + (n > 1 ? 0.03 * (i / (n - 1) - 0.5) : 0) }')
  if [ "$ok" = 0 ]; then
    ttft_plot+="${ttft_plot:+, }keyentry $style title '$(gq "$label$note")'"
    tpot_plot+="${tpot_plot:+, }keyentry $style title '$(gq "$label$note")'"
  else
    ttft_plot+="${ttft_plot:+, }'$tmp/sweep.dat' index $i using $x:2:4:5 $ranged title '$(gq "$label$note")'"
    tpot_plot+="${tpot_plot:+, }'$tmp/sweep.dat' index $i using $x:6:7:8 $ranged title '$(gq "$label$note")'"
  fi
  kv_plot+="${kv_plot:+, }'$tmp/sweep.dat' index $i using 1:3 $style title '$(gq "$label")'"
  i=$((i + 1))
done <"$tmp/cands"
any_p99=$(awk -F'\t' '$2 > 0 { n++ } END { print n + 0 }' "$tmp/cands")
# How many distinct values a column of sweep.dat takes (NaN left out): a
# plot of one constant says nothing, and is not drawn.
distinct() {
  [ -f "$tmp/sweep.dat" ] || { echo 0; return; }
  awk -v c="$1" 'NF && $c != "NaN" && !seen[$c]++ { n++ } END { print n + 0 }' "$tmp/sweep.dat"
}
tpot_values=$(distinct 6) kv_values=$(distinct 3)
# Bars: goodput per dollar-hour, with a note where there is none (no fit,
# no rate met, no price).
awk "$csv_awk"' NR > 1 { csv($0, f); v = f[g]; note = f[fi] == "false" ? "does not fit" : f[fi] != "true" ? "failed" : f[gp] == "" ? "no goodput" : v == "" ? "no price" : ""
  # The range: goodput per dollar at the band edges (the same price).
  lo = v != "" && f[gl] != "" ? v * f[gl] / f[gp] : (v == "" ? 0 : v)
  hi = v != "" && f[gh] != "" ? v * f[gh] / f[gp] : (v == "" ? 0 : v)
  gsub(/"/, "'"'"'", f[1]); print NR - 1, (v == "" ? 0 : v), "\"" f[1] "\"", "\"" note "\"", lo, hi }' \
  g="$c_gpd" fi="$c_fits" gp="$c_goodput" gl="$c_glo" gh="$c_ghi" "$dir/compare.csv" >"$tmp/gpd.dat"
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
# Every rate swept on the axis (a candidate without any p99 too), and a
# target below them all.
lo = STATS_min < $target ? STATS_min : $target
set xrange [lo * 0.95 : STATS_max * 1.05]
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
GP
)
  if [ "$tpot_values" -gt 1 ]; then
    rate_plots+=$(cat <<GP

set output '$out/compare_tpot.png'
set title '$who: p99 TPOT against offered rate, one deployment per line'
set ylabel "p99 TPOT (s)"
set yrange [0:*]
$tpot_lines
if ($target <= STATS_max * 1.05) {
  set arrow from first $target, graph 0 to first $target, graph 1 nohead dt 3 lw 2 lc rgb "black"
  set label "target $target req/s" at first $target, graph 0.95 offset 0.5,0
}
plot $tpot_plot
unset arrow
unset label
set autoscale y
GP
)
  fi
  if [ "$kv_values" -gt 1 ]; then
    rate_plots+=$(cat <<GP

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
set autoscale y
set ytics autofreq
GP
)
  fi
fi

# Goodput per dollar-hour: bars with the band's range, only when a price
# was given (no figure of nothing).
gpd_plot=""
if [ "$have_price" -gt 0 ]; then
  gpd_plot="set output '$out/compare_goodput_per_dollar.png'
set title '$who: goodput per dollar-hour of one deployment (the study''s prices; error bars: the band''s range)'
set ylabel \"goodput per dollar-hour ((req/s) / (\\\$/h))\"
set xlabel 'candidate'
set autoscale x
set xrange [0.3:*]
set offsets 0, 0.7, graph 0.1, 0
set autoscale y
set yrange [0:*]
set ytics autofreq
set style fill solid 0.6
set boxwidth 0.6
set xtics rotate by -30
unset key
plot '$tmp/gpd.dat' using 1:2:5:6:(0.6):xtic(3) with boxerrorbars lc rgb '#4477aa', '' using 1:2:4 with labels offset 0,1"
fi
gnuplot <<GP
set terminal pngcairo noenhanced size 1000,520 font ",10"
set datafile separator whitespace
set key outside right top
set grid
$rate_plots
$gpd_plot
GP
echo "plots:" "$dir"/compare_*.png
