#!/usr/bin/env bash
# Plots a kvsim deployment search (kvsim compare on a study with a search
# block), from its search.csv and search_frontier.csv:
#   frontier.png   output tokens/s per GPU against tokens/s per user
#                  (1 / mean TPOT) of every simulated point that meets the
#                  SLO, one colour per GPU, and the Pareto frontier as a line
# Title from the study's name (KVSIM_PLOT_NAME, set by kvsim compare; run by
# hand it reads REPORT.md's title).
# Usage: scripts/plot_search.sh DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=plot_lib.sh
. "$here/plot_lib.sh"
dir=${1:?usage: plot_search.sh DIR}
command -v gnuplot >/dev/null || { echo "plot_search.sh: gnuplot not found" >&2; exit 2; }
for f in search.csv search_frontier.csv; do
  [ -f "$dir/$f" ] || { echo "plot_search.sh: $dir/$f: not found (not a search folder)" >&2; exit 2; }
done
name=${KVSIM_PLOT_NAME:-$(sed -n 's/^# Deployment search: //p' "$dir/REPORT.md" 2>/dev/null | head -1 | sed 's/\\\(.\)/\1/g')}
rm -f "$dir/frontier.png"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The SLO-meeting points by GPU and layout (the columns before status
# hold no comma, nor does the last, layout, which older files lack):
# tokens/s per user (16), output tokens/s per GPU (15).
awk -F, -v d="$tmp" 'NR > 1 && $9 == "true" && $16 != "" {
  g = $1; if ($NF == "disaggregated") g = g " disaggregated"
  print $16, $15 > (d "/gpu_" g) }' "$dir/search.csv"
awk -F, 'NR > 1 { print $1, $2 }' "$dir/search_frontier.csv" > "$tmp/frontier"
[ -s "$tmp/frontier" ] || exit 0 # nothing met the SLO: no figure
plots=""
for f in "$tmp"/gpu_*; do
  g=${f##*/gpu_}
  plots="$plots'$(gq "$f")' using 1:2 with points pt 7 ps 1.2 title '$(gq "$g")', "
done
gnuplot <<GP
$(gp_head "$dir/frontier.png" 560)
set title '$(gq "$name"): SLO-meeting deployments at the target rate, and their Pareto frontier'
set xlabel 'tokens/s per user (1 / mean TPOT)'
set ylabel 'output tokens/s per GPU'
set grid
set key outside right top
plot $plots '$(gq "$tmp/frontier")' using 1:2 with linespoints lw 2 lc rgb 'black' pt 6 ps 2 title 'Pareto frontier'
GP
check_png "$dir/frontier.png"
