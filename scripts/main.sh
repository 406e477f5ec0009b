#!/usr/bin/env bash
# The main job: installs missing Debian packages, builds kvsim (Release),
# prints the memory plan of the embedded default (Llama-3.1-8B on H100),
# runs the default study (configs/scenarios/default.json, compiled into
# the binary) into results/default/, and plots it.
# Extra arguments go to `kvsim run` (e.g. --set workload.synthetic.arrival.rate=25).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKVSIM_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
echo "== memory plan (kvsim calc)"
./build/kvsim calc --model llama-3.1-8b --gpu h100-sxm --max-model-len 8192
echo
echo "== default study (kvsim run)"
./build/kvsim run --out results/default "$@"
scripts/plot.sh results/default
