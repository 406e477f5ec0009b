#!/usr/bin/env bash
# The main job: installs missing Debian packages, builds kvsim (Release),
# prints the memory plan of the default (Llama-3.1-8B on H100), runs the
# default study (configs/studies/default.json, compiled into the binary:
# A100-80G, H100, H200, L40S, and the H100 at gpu_memory_utilization 0.85 /
# 0.95 and with FP8 KV, on the project's chat workload) into
# results/default/ (compare.csv, REPORT.md; plots when gnuplot is present).
# Extra arguments go to `kvsim compare` (e.g. --jobs 4).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKVSIM_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
echo "== memory plan (kvsim calc)"
./build/kvsim calc --model llama-3.1-8b --gpu h100-sxm --max-model-len 8192
echo
echo "== default study (kvsim compare)"
# compare draws the plots itself (when gnuplot is present; REPORT.md says
# why not otherwise).
./build/kvsim compare --jobs 2 --out results/default "$@"
