#!/usr/bin/env bash
# Installs missing packages, builds kvsim (Release) and runs the main job on
# the embedded default. Extra arguments go to the kvsim command.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKVSIM_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
./build/kvsim calc "$@"
