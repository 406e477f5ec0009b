#!/usr/bin/env bash
# Plots a kvsim run for a capacity review (gnuplot, PNG). Every title names
# the run, model, GPU, TP and gpu_memory_utilization (from summary.json).
#   kv_cache.png     KV cache usage and cached-but-free blocks (% of the
#                    pool) over time, and the CPU tier's usage when the run
#                    has one; with several replicas the mean over replicas
#                    and a thin line per replica (up to 4)
#   queue.png        running and waiting requests (the sum over replicas,
#                    and a thin line per replica up to 4)
#   replicas.png     more than 4 replicas: one panel per replica (first 16)
#   preemptions.png  cumulative preemptions (not drawn when none: a plot of
#                    a constant 0 says nothing)
#   latency_cdf.png  CDFs of TTFT, TPOT and end-to-end latency (the steady window) with their
#                    p50 and p99 marked and the SLO targets as lines
#   disaggregation.png  a disaggregated run (transfer.csv): both pools' usage,
#                    then the prefill side's waiting requests, the requests
#                    holding prefill KV for a hand-off, those waiting for
#                    decode blocks, and the KV on the link
# On a sweep folder (sweep.csv) it draws each summary figure against the
# first grid axis instead (scripts/plot_sweep.sh).
# Usage: scripts/plot.sh RUN_OR_SWEEP_DIR [OUT_DIR]   (OUT_DIR defaults to the folder)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run=${1:?usage: scripts/plot.sh RUN_OR_SWEEP_DIR [OUT_DIR]}
out=${2:-$run}
command -v gnuplot >/dev/null || { echo "plot: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 2; }
if [ -f "$run/sweep.csv" ]; then
  exec bash "$here/plot_sweep.sh" "$run" "$out"
fi
for f in timeseries.csv requests.csv summary.json; do
  [ -f "$run/$f" ] || { echo "plot: $run/$f: not found (is this a kvsim run or sweep folder?)" >&2; exit 2; }
done
# shellcheck source=plot_lib.sh
. "$here/plot_lib.sh"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sum=$run/summary.json
label=$(run_label "$sum")

# Per replica r<N>.dat and the cluster all.dat, whitespace columns:
#   time, KV used %, cached-free %, running, waiting, preemptions, CPU tier %
# all.dat: mean of the percentages, sum of the counts, each replica's last
# sample carried forward (a preemption adds a sample of one replica only).
replicas=$(awk -F, -v d="$tmp" '
  function flush(   i, n, s1, s2, s3, s4, s5, s6) {
    if (!started || seen < nr) return
    for (i in kv) { n++; s1 += kv[i]; s2 += ca[i]; s3 += ru[i]; s4 += wa[i]; s5 += pr[i]; s6 += cp[i] }
    print t, s1 / n, s2 / n, s3, s4, s5, s6 / n > (d "/all.dat")
  }
  NR == FNR { if (FNR > 1 && !($2 in known)) { known[$2] = 1; nr++ } next }
  FNR == 1 { next }
  !started || $1 != t { flush(); t = $1; started = 1 }
  {
    r = $2; tot = $4 + $5 + $6
    if (!(r in kv)) seen++
    kv[r] = 100 * $3; ca[r] = tot ? 100 * $5 / tot : 0; ru[r] = $7; wa[r] = $8; pr[r] = $10
    cp[r] = 100 * $15
    print $1, kv[r], ca[r], ru[r], wa[r], pr[r], cp[r] > (d "/r" r ".dat")
  }
  END { flush(); print nr + 0 }' "$run/timeseries.csv" "$run/timeseries.csv")
[ "$replicas" -gt 0 ] || { echo "plot: $run/timeseries.csv: no samples" >&2; exit 1; }
cpu_tier=0
grep -q '^	"cpu_tier":' "$sum" && cpu_tier=1

# series COLUMN TITLE COLOR: the cluster's line, then thin per-replica lines.
series() {
  local col=$1 title=$2 color=$3 agg=$4 cmd
  if [ "$replicas" -eq 1 ]; then
    printf "'%s/r0.dat' using 1:%s with lines lw 2 lc rgb '%s' title '%s'" "$tmp" "$col" "$color" "$title"
    return
  fi
  cmd=$(printf "'%s/all.dat' using 1:%s with lines lw 2.5 lc rgb '%s' title '%s (%s of %s replicas)'" \
    "$tmp" "$col" "$color" "$title" "$agg" "$replicas")
  if [ "$replicas" -le 4 ]; then
    for ((r = 0; r < replicas; r++)); do
      cmd+=$(printf ", '%s/r%s.dat' using 1:%s with lines lw 0.7 dt %s lc rgb '%s' title '%s, replica %s'" \
        "$tmp" "$r" "$col" "$((r + 2))" "$color" "$title" "$r")
    done
  fi
  printf '%s' "$cmd"
}

kv_plot="$(series 2 'KV blocks used' '#1f77b4' mean), $(series 3 'cached, free' '#2ca02c' mean)"
if [ "$cpu_tier" = 1 ]; then kv_plot+=", $(series 7 'CPU tier used (% of the CPU tier)' '#d62728' mean)"; fi
gnuplot <<GP
$(gp_head "$out/kv_cache.png")
set title '$(gq "KV cache usage (kv_cache_usage_perc) - $label")'
set xlabel 'simulated time (s)'
set ylabel 'share of the pool (%)'
set yrange [0:105]
set grid
set key below
plot $kv_plot
GP
check_png "$out/kv_cache.png"

gnuplot <<GP
$(gp_head "$out/queue.png")
set title '$(gq "Requests running and waiting - $label")'
set xlabel 'simulated time (s)'
set ylabel 'requests'
set yrange [0:*]
set grid
set key below
plot $(series 4 'running' '#1f77b4' sum), $(series 5 'waiting' '#ff7f0e' sum)
GP
check_png "$out/queue.png"

if [ "$replicas" -gt 4 ]; then
  n=$((replicas < 16 ? replicas : 16))
  rows=$(((n + 3) / 4))
  {
    gp_head "$out/replicas.png" $((260 * rows))
    echo "set multiplot layout $rows,4 title '$(gq "Per replica (first $n of $replicas): KV used % and waiting requests - $label")'"
    echo "set grid"
    echo "set key top left"
    echo "set yrange [0:*]"
    echo "set y2range [0:*]"
    echo "set ytics nomirror tc rgb '#1f77b4'"
    echo "set y2tics tc rgb '#ff7f0e'"
    echo "set xlabel 'simulated time (s)'"
    echo "set ylabel 'KV used (%)' tc rgb '#1f77b4'"
    echo "set y2label 'waiting requests' tc rgb '#ff7f0e'"
    for ((r = 0; r < n; r++)); do
      echo "set title 'replica $r'"
      echo "plot '$tmp/r$r.dat' using 1:2 with lines lc rgb '#1f77b4' title 'KV used %', '' using 1:5 axes x1y2 with lines lc rgb '#ff7f0e' title 'waiting'"
    done
    echo "unset multiplot"
  } | gnuplot 2>/dev/null # flat series warn "empty y2 range"; the file is checked
  check_png "$out/replicas.png"
fi

preempt=$(json_get "$sum" preemptions total)
if [ "${preempt:-0}" = 0 ]; then
  rm -f "$out/preemptions.png" # an older run's
else
  gnuplot <<GP
$(gp_head "$out/preemptions.png")
set title '$(gq "Preemptions (cumulative, $preempt in all) - $label")'
set xlabel 'simulated time (s)'
set ylabel 'preemptions'
set yrange [0:*]
set grid
set key below
plot $(series 6 'preemptions' '#9467bd' sum | sed 's/with lines/with steps/g')
GP
  check_png "$out/preemptions.png"
fi

# CDFs of finished requests: sorted latencies with their rank. Those of
# the steady window when summary.json has one (arrivals in [window_start_s,
# window_end_s], both kept, as kvsim_steady_keeps does): the p50 and p99
# marked on the curves are that window's (latency.steady_state).
w0=$(json_get "$sum" latency steady_state window_start_s)
w1=$(json_get "$sum" latency steady_state window_end_s)
w0=${w0:-0} w1=${w1:-0}
cdf() { # COLUMN FILE
  awk -F, -v c="$1" -v w0="$w0" -v w1="$w1" 'NR > 1 && $14 == "finished" && $c != "" &&
    (w1 + 0 <= 0 || ($3 + 0 >= w0 + 0 && $3 + 0 <= w1 + 0)) { print $c }' "$run/requests.csv" | sort -g |
    awk '{ a[NR] = $1 } END { for (i = 1; i <= NR; i++) print a[i], i / NR }' >"$2"
}
cdf 11 "$tmp/ttft.dat"
cdf 12 "$tmp/tpot.dat"
cdf 13 "$tmp/e2e.dat"
if [ ! -s "$tmp/ttft.dat" ]; then
  empty_plot "$out/latency_cdf.png" "Latency: no finished requests in this run - $label"
else
  marks="" plots=""
  i=0
  for m in ttft:TTFT:'#1f77b4' tpot:TPOT:'#2ca02c' e2e:E2E:'#ff7f0e'; do
    IFS=: read -r key name color <<<"$m"
    i=$((i + 1))
    [ -s "$tmp/$key.dat" ] || continue
    p50=$(json_get "$sum" latency "${key}_s" p50)
    p99=$(json_get "$sum" latency "${key}_s" p99)
    plots+="${plots:+, }'$tmp/$key.dat' using 1:2 with lines lw 2 lc rgb '$color' title '$name'"
    # p50 and p99 as points on the curve, labelled with their value.
    printf '%s 0.5\n%s 0.99\n' "$p50" "$p99" >"$tmp/$key.marks"
    plots+=", '$tmp/$key.marks' using 1:2 with points pt 7 ps 1.2 lc rgb '$color' title '$name p50 $(printf %.3g "$p50") s, p99 $(printf %.3g "$p99") s'"
    slo=$(json_get "$sum" slo "${key}_p99_s" target)
    if [ -n "$slo" ]; then
      marks+="set arrow from $slo, graph 0 to $slo, graph 1 nohead dt 2 lw 1.5 lc rgb '$color'
set label $i '$name SLO (p99) $slo s' at $slo, graph $(awk -v i=$i 'BEGIN { print 0.08 * i }') left offset 0.5,0 tc rgb '$color'
"
    fi
  done
  gnuplot <<GP
$(gp_head "$out/latency_cdf.png" 520)
set title '$(gq "Latency of finished requests$([ "$w1" != 0 ] && echo ", steady window") (CDF) - $label")'
set xlabel 'seconds (log scale)'
set ylabel 'fraction of requests'
set logscale x
set yrange [0:1.02]
set grid
set key below
$marks
plot $plots
GP
fi
check_png "$out/latency_cdf.png"
# Disaggregated: both pools, and what backs up between them.
if [ -f "$run/transfer.csv" ]; then
  np=$(json_get "$sum" disaggregation prefill replicas)
  # Waiting requests summed over the prefill instances (replicas 0..np-1),
  # each instance's last sample carried forward.
  awk -F, -v np="${np:-1}" 'FNR > 1 && $2 < np { w[$2] = $8; t = $1; s = 0; for (i in w) s += w[i]; last[t] = s; if (!(t in seen)) { seen[t] = 1; order[++n] = t } }
    END { for (i = 1; i <= n; i++) print order[i], last[order[i]] }' "$run/timeseries.csv" >"$tmp/pwait.dat"
  awk -F, 'NR > 1 { print $1, 100 * $2, 100 * $3, $5, $6, $9 / 1e6 }' "$run/transfer.csv" >"$tmp/xfer.dat"
  {
    gp_head "$out/disaggregation.png" 760
    echo "set termoption noenhanced"
    echo "set multiplot layout 2,1 title '$(gq "Disaggregated prefill and decode - $label")'"
    echo "set grid"
    echo "set key below"
    echo "set xlabel 'simulated time (s)'"
    echo "set title 'KV cache usage of each side (mean over its instances)'"
    echo "set ylabel 'share of the pool (%)'"
    echo "set yrange [0:105]"
    echo "plot '$tmp/xfer.dat' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'prefill pool', '' using 1:3 with lines lw 2 lc rgb '#d62728' title 'decode pool'"
    echo "set title 'What backs up: prefill queue, KV held for hand-offs, KV on the link'"
    echo "set ylabel 'requests'"
    echo "set yrange [0:*]"
    echo "set y2range [0:*]"
    echo "set y2tics"
    echo "set ytics nomirror"
    echo "set y2label 'KV on the link (MB)'"
    echo "plot '$tmp/pwait.dat' using 1:2 with lines lw 2 lc rgb '#ff7f0e' title 'prefill waiting', '$tmp/xfer.dat' using 1:4 with lines lw 2 lc rgb '#1f77b4' title 'holding prefill KV (num_prefill_inflight_queue_reqs)', '' using 1:5 with lines lw 1.5 dt 2 lc rgb '#d62728' title 'waiting for decode blocks (num_decode_prealloc_queue_reqs)', '' using 1:6 axes x1y2 with impulses lc rgb '#7f7f7f' title 'KV on the link (MB, right)'"
    echo "unset multiplot"
  } | gnuplot 2>/dev/null
  check_png "$out/disaggregation.png"
fi
pngs="kv_cache.png queue.png latency_cdf.png"
[ -f "$run/transfer.csv" ] && pngs+=" disaggregation.png"
[ "${preempt:-0}" = 0 ] || pngs+=" preemptions.png"
[ "$replicas" -gt 4 ] && pngs+=" replicas.png"
echo "plots in $out: $pngs"
