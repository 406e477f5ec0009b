#!/usr/bin/env bash
# Plots a kvsim sweep folder (sweep.csv): one PNG per summary figure,
# sweep_<figure>.png, against the sweep's first grid axis, one line per
# combination of the other axes (a zip sweep, each first-axis value at one
# point, is one line labelled with every value). Points that did not fit or failed are
# left out (their error is in sweep.csv). A text axis (GPU names, KV
# dtypes) is drawn as categories in the order of the grid.
# Usage: scripts/plot_sweep.sh SWEEP_DIR [OUT_DIR]   (scripts/plot.sh calls it)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:?usage: scripts/plot_sweep.sh SWEEP_DIR [OUT_DIR]}
out=${2:-$dir}
csv=$dir/sweep.csv
[ -f "$csv" ] || { echo "plot: $csv: not found" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "plot: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 2; }
# shellcheck source=plot_lib.sh
. "$here/plot_lib.sh"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
header=$(head -1 "$csv")
IFS=, read -r -a cols <<<"$header"
# Grid axes sit between "run" and "fits"; the figures between "fits" and "error".
fits=-1
for i in "${!cols[@]}"; do [ "${cols[$i]}" = fits ] && fits=$i; done
[ "$fits" -ge 2 ] || { echo "plot: $csv: no grid axis before the 'fits' column" >&2; exit 2; }
axes=("${cols[@]:1:fits-1}")
first=${axes[0]}
ncols=${#cols[@]}
# What the sweep ran: the first run's summary (model, GPU) when kept.
about=""
s0=$(ls "$dir"/run*/summary.json 2>/dev/null | head -1 || true)
if [ -n "$s0" ]; then
  # The model and GPU when the sweep does not vary them.
  case " ${axes[*]} " in *" model "*) ;; *) about=" - $(json_get "$s0" memory_plan model)" ;; esac
  case " ${axes[*]} " in
  *" hardware.gpu "*) ;;
  *) if [ -n "$about" ]; then about+=" on "; else about=" - "; fi
     about+=$(json_get "$s0" memory_plan gpu) ;;
  esac
fi
name=$(basename "$(cd "$dir" && pwd)")
# Series: one file per combination of the other axes; x is the first
# axis's value, or its index among the grid's values when not a number.
awk -F, -v d="$tmp" -v fits=$((fits + 1)) -v n="$ncols" '
  NR == 1 { next }
  {
    x = $2
    if (!(x in xi)) { xi[x] = nx++; xs[nx - 1] = x; if (x !~ /^-?[0-9.eE+-]+$/) text = 1 }
    key = ""
    for (i = 3; i < fits; i++) key = key (key == "" ? "" : ", ") i ":" $i
    if (!(key in si)) { si[key] = ns++; sk[ns - 1] = key }
    row[NR] = si[key] " " x
    all = $2
    for (i = 3; i < fits; i++) all = all " | " $i
    whole[NR] = all
    # An empty cell (no figure: a point where no request finished) is NaN
    # too: left empty it would shift the columns after it.
    for (i = fits + 1; i < n; i++) v[NR, i] = ($fits == "true" && $n == "" && $i != "") ? $i : "NaN"
    last = NR
  }
  END {
    # Each value of the first axis at one point only (a zip sweep: the axes
    # vary together): one line over the points, each labelled with all
    # its values.
    zip = nx == last - 1 && fits > 3
    if (zip) {
      nx = 0; ns = 1; sk[0] = ""; text = 1
      for (r = 2; r <= last; r++) { xs[nx] = whole[r]; xi[whole[r]] = nx; row[r] = "0 " nx; nx++ }
    }
    print zip + 0 > (d "/zip")
    for (r = 2; r <= last; r++) {
      split(row[r], a, " ")
      line = (zip ? a[2] : text ? xi[a[2]] : a[2])
      for (i = fits + 1; i < n; i++) line = line " " v[r, i]
      print line > (d "/s" a[1] ".dat")
    }
    for (s = 0; s < ns; s++) print s "\t" sk[s] > (d "/series.txt")
    for (k = 0; k < nx; k++) print k "\t" xs[k] > (d "/xs.txt")
    print text + 0 > (d "/text")
  }' "$csv"
text=$(cat "$tmp/text")
xaxis=$first
if [ "$(cat "$tmp/zip")" = 1 ]; then
  xaxis=$(IFS='|'; echo "${axes[*]}" | sed 's/|/ | /g')
fi
# Series names: "axis=value, ..." of the other axes ("all points" with one axis).
declare -a snames
while IFS=$'\t' read -r s key; do
  label=""
  IFS=',' read -r -a parts <<<"$key"
  for p in "${parts[@]}"; do
    p=${p# }
    [ -n "$p" ] || continue
    idx=${p%%:*}
    label+="${label:+, }${cols[$((idx - 1))]}=${p#*:}"
  done
  snames[$s]=${label:-all points}
done <"$tmp/series.txt"
xtics=""
if [ "$text" = 1 ]; then
  xtics="set xtics ("
  while IFS=$'\t' read -r k v; do xtics+="'$(gq "$v")' $k, "; done <"$tmp/xs.txt"
  xtics="${xtics%, })"
fi
made=()
for ((i = fits + 1; i < ncols - 1; i++)); do
  fig=${cols[$i]}
  c=$((i - fits + 1)) # column in the .dat files
  plot=""
  for s in "${!snames[@]}"; do
    plot+="${plot:+, }'$tmp/s$s.dat' using 1:$c with linespoints lw 2 pt 7 title '$(gq "${snames[$s]}")'"
  done
  unit=""
  case $fig in
  requests_per_s) unit=" (req/s)" ;;
  *tokens_per_s) unit=" (tokens/s)" ;;
  *_s) unit=" (s)" ;;
  kv_cache_tokens) unit=" (tokens)" ;;
  num_gpu_blocks) unit=" (blocks)" ;;
  requests | finished | rejected) unit=" (requests)" ;;
  preemptions) unit=" (count)" ;;
  kv_usage_* | *fraction | *rate | slo_attainment) unit=" (fraction)" ;;
  esac
  state=$(cat "$tmp"/s*.dat | awk -v c="$c" '$c != "NaN" { n++; if ($c + 0 != 0) nz++ } END { print (n ? (nz ? "data" : "zero") : "none") }')
  if [ "$state" = none ]; then
    empty_plot "$out/sweep_$fig.png" "$fig against $xaxis: no point ran (see the error column of sweep.csv) - sweep $name$about"
    made+=("sweep_$fig.png")
    continue
  fi
  note=""
  [ "$state" = zero ] && note=" (0 at every point)"
  gnuplot <<GP 2>/dev/null
$(gp_head "$out/sweep_$fig.png")
set title '$(gq "$fig$note against $xaxis - sweep $name$about")'
set xlabel '$(gq "$xaxis")'
set ylabel '$(gq "$fig$unit")'
set grid
set key below
set yrange [0:*]
$xtics
set offsets 0.2, 0.2, 0, 0
plot $plot
GP
  check_png "$out/sweep_$fig.png"
  made+=("sweep_$fig.png")
done
echo "plots in $out: ${made[*]}"
