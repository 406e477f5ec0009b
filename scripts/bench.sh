#!/usr/bin/env bash
# Speed and memory benchmark: simulated requests per wall-second and peak
# RSS for the reference runs (issue 3). Release build; each run repeated,
# the median wall time reported (these machines are noisy). Each run is
# one simulation: --no-band and --no-verify-advice leave out the band's
# two edge runs and the re-runs that measure the diagnosis's advice.
# The scale runs (one repetition each): 100k, 1M and 10M streamed requests
# (peak RSS must stay flat in the request count) and 64 replicas.
# Whole commands (what a user waits for): `kvsim run` with default flags
# (nominal, band edges, advice re-runs) against the core run, and the
# default `kvsim compare` study. --callgrind adds instruction counts of the
# core run, the default-flags run (all processes) and the compare study
# (--jobs 1), the stable measure on a shared machine (several minutes).
# Each figure issue 29 asks to show is printed with its target and
# "met" or "MISSED": the core run's instructions in total and per
# sequence-step (a request computing in a step; the --bench line counts
# them), its median wall, the default-flags run against it, the default
# study's instructions and wall, 10M requests' wall and RSS, and the wall
# per request of 256 replicas against one (each at 10 req/s).
#   scripts/bench.sh [--repeat N] [--skip-1m] [--skip-10m] [--callgrind]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=5
skip_1m=0
skip_10m=0
callgrind=0
while [ $# -gt 0 ]; do
  case $1 in
    --repeat) repeat=$2; shift 2 ;;
    --skip-1m) skip_1m=1; skip_10m=1; shift ;;
    --skip-10m) skip_10m=1; shift ;;
    --callgrind) callgrind=1; shift ;;
    *) echo "usage: scripts/bench.sh [--repeat N] [--skip-1m] [--skip-10m] [--callgrind]" >&2; exit 2 ;;
  esac
done
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DKVSIM_TESTS=OFF >/dev/null
cmake --build build-bench -j "$(nproc)" >/dev/null
kvsim=./build-bench/kvsim
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# bench NAME SCENARIO TARGET_WALL_S TARGET_RSS_MB [extra args]
bench() {
  local name=$1 scen=$2 twall=$3 trss=$4
  shift 4
  local lines=()
  for _ in $(seq "$repeat"); do
    lines+=("$("$kvsim" run "$scen" --out "$out/$name" --quiet --no-band --no-verify-advice --bench "$@" 2>&1 >/dev/null | tail -1)")
  done
  printf '%s\n' "${lines[@]}" | awk -v name="$name" -v twall="$twall" -v trss="$trss" '
    { match($0, /"wall_s": [0-9.]+/); w[NR] = substr($0, RSTART + 10, RLENGTH - 10) + 0
      match($0, /"peak_rss_mb": [0-9.]+/); r = substr($0, RSTART + 15, RLENGTH - 15) + 0
      if (r > rss) rss = r
      match($0, /"requests": [0-9]+/); n = substr($0, RSTART + 12, RLENGTH - 12) + 0 }
    END { for (i = 2; i <= NR; i++) { v = w[i]; for (j = i - 1; j >= 1 && w[j] > v; j--) w[j + 1] = w[j]; w[j + 1] = v }
          med = w[int((NR + 1) / 2)]
          printf "%-22s %9d requests  wall median %7.3f s (min %.3f, max %.3f)  %10.0f req/wall-s  peak RSS %6.1f MB  target <%g s, <%g MB: %s\n",
            name, n, med, w[1], w[NR], n / med, rss, twall, trss,
            (med < twall && rss < trss) ? "met" : "MISSED" }'
}

# wall NAME ARGS...: median wall seconds of `kvsim ARGS` over $repeat runs.
wall() {
  local name=$1
  shift
  local t=()
  for _ in $(seq "$repeat"); do
    local a b
    a=$(date +%s.%N)
    "$kvsim" "$@" >/dev/null 2>&1
    b=$(date +%s.%N)
    t+=("$(echo "$b - $a" | bc)")
  done
  last_wall=$(printf '%s\n' "${t[@]}" | sort -g | awk '{ w[NR] = $1 } END { print w[int((NR + 1) / 2)] }')
  printf '%s\n' "${t[@]}" | sort -g | awk -v name="$name" '{ w[NR] = $1 }
    END { printf "%-22s wall median %7.3f s (min %.3f, max %.3f, %d runs)\n", name, w[int((NR + 1) / 2)], w[1], w[NR], NR }'
}

# verdict NAME VALUE TARGET UNIT: "met" when VALUE <= TARGET.
verdict() {
  awk -v name="$1" -v v="$2" -v t="$3" -v u="$4" \
    'BEGIN { printf "must-show %-34s %10.3f %s  target <= %g %s: %s\n", name, v, u, t, u, (v <= t) ? "met" : "MISSED" }'
}

# instr NAME ARGS...: instructions of `kvsim ARGS` over all its processes
# (callgrind). A forked child's count includes its parent's up to the
# fork; the pools fork after the parent's own runs, so each child's own
# work is its count less the parent's (final) count. Valgrind always
# follows a fork (the study pools' children report on this log), so no
# --trace-children=yes: it follows exec only, and kvsim execs nothing but
# the plot script (bash, awk, sed, gnuplot), which is not simulator work.
# `compare --jobs 1` runs every candidate in the parent: under strace -f
# its only fork is the plot script's, and on tests/golden/compare/
# tiny-study.json --trace-children=yes adds about 1.1 G instructions of
# plotting (gnuplot 0.99 G, in its own callgrind files; its report goes to
# the plot's stderr file, not this log) to the 1.29 G of kvsim's.
instr() {
  local name=$1
  shift
  local d
  d=$(mktemp -d)
  valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" "$kvsim" "$@" >/dev/null 2>"$d/log" || true
  local parent
  parent=$(grep -m1 -o '^==[0-9]*==' "$d/log")
  local sums p n
  sums=$(grep -h "Collected" "$d/log" | awk -v parent="$parent" '
    { gsub(",", "", $NF); if (index($0, parent) == 1) p = $NF; else c[++n] = $NF }
    END { t = p; for (i = 1; i <= n; i++) t += c[i] - p; printf "%.0f %.0f %d\n", t, p, n }')
  read -r last_instr p n <<<"$sums"
  awk -v name="$name" -v t="$last_instr" -v p="$p" -v n="$n" \
    'BEGIN { printf "%-22s %8.3f G instructions (parent %.3f G, %d children)\n", name, t / 1e9, p / 1e9, n }'
  rm -rf "$d"
}

# The rows (sequence-steps) of a core run: its --bench line counts them.
sequence_steps() {
  "$kvsim" run "$@" --out "$out/seqsteps" --quiet --no-band --no-verify-advice --bench 2>&1 >/dev/null |
    tail -1 | sed -n 's/.*"sequence_steps": \([0-9]*\).*/\1/p'
}

azure=configs/scenarios/bench-azure-conv.json
if [ -f ../shared/traces/azure_llm_2023/AzureLLMInferenceTrace_conv.csv ]; then
  bench azure-conv-4096 "$azure" 0.05 64
  wall run-core run "$azure" --out "$out/core" --quiet --no-band --no-verify-advice
  core_wall=$last_wall
  verdict "core run wall (median)" "$core_wall" 0.05 s
  wall run-default-flags run "$azure" --out "$out/full" --quiet
  verdict "default-flags run / core run (wall)" "$(echo "$last_wall / $core_wall" | bc -l)" 3 x
  if [ "$callgrind" = 1 ]; then
    instr run-core run "$azure" --out "$out/core" --quiet --no-band --no-verify-advice
    seqs=$(sequence_steps "$azure")
    verdict "core run instructions" "$(echo "$last_instr / 1000000" | bc -l)" 300 M
    verdict "core run instructions per seq-step" "$(echo "$last_instr / $seqs" | bc -l)" 60 "(of $seqs)"
    instr run-default-flags run "$azure" --out "$out/full" --quiet
  fi
else
  echo "azure-conv-4096: skipped (../shared/traces is absent)"
fi
repeat=1 wall compare-default compare --out "$out/compare"
verdict "default study wall" "$last_wall" 2 s
if [ "$callgrind" = 1 ]; then
  instr compare-default compare --jobs 1 --out "$out/compare"
  verdict "default study instructions" "$(echo "$last_instr / 1000000000" | bc -l)" 20 G
fi
if [ "$skip_1m" = 0 ]; then
  repeat=1 bench synthetic-1m configs/scenarios/bench-synthetic-1m.json 600 200
  repeat=1 bench synthetic-100k configs/scenarios/bench-synthetic-1m.json 600 200 \
    --set workload.synthetic.requests=100000
fi
if [ "$skip_10m" = 0 ]; then
  # The 1M run's shape (4 replicas, 40 req/s) with ten times the requests.
  repeat=1 bench synthetic-10m configs/scenarios/bench-synthetic-1m.json 25 200 \
    --set workload.synthetic.requests=10000000
fi
if [ "$skip_1m" = 0 ]; then
  # 64 replicas behind the router at 64 x 10 req/s: per-event cost must not
  # grow with the replica count beyond the router's choice.
  repeat=1 bench replicas-64 configs/scenarios/bench-synthetic-1m.json 600 400 \
    --set workload.synthetic.requests=200000 --set hardware.replicas=64 \
    --set workload.synthetic.arrival.rate=640
fi
# 256 replicas against one, each at 10 req/s: the wall per request.
if [ "$skip_1m" = 0 ]; then
  syn=configs/scenarios/bench-synthetic-1m.json
  repeat=1 wall replicas-1 run "$syn" --out "$out/r1" --quiet --no-band --no-verify-advice \
    --set workload.synthetic.requests=20000 --set hardware.replicas=1 \
    --set workload.synthetic.arrival.rate=10
  one=$(echo "$last_wall / 20000" | bc -l)
  repeat=1 wall replicas-256 run "$syn" --out "$out/r256" --quiet --no-band --no-verify-advice \
    --set workload.synthetic.requests=512000 --set hardware.replicas=256 \
    --set workload.synthetic.arrival.rate=2560
  verdict "256 replicas / 1, wall per request" "$(echo "$last_wall / 512000 / $one" | bc -l)" 1.3 x
fi
# --check-invariants must cost about the run, not the pool: a 17.7M-block
# pool (the size that once took minutes) with and without the checks.
if [ "$skip_1m" = 0 ]; then
  repeat=1 bench checks-off tests/golden/data/small-synthetic.json 5 400 \
    --set engine.num_gpu_blocks_override=17700000 --set workload.synthetic.requests=200
  repeat=1 bench checks-on tests/golden/data/small-synthetic.json 5 400 \
    --set engine.num_gpu_blocks_override=17700000 --set workload.synthetic.requests=200 --check-invariants
fi
