#!/usr/bin/env bash
# Installs the Debian packages kvsim needs, only those missing.
# Usage (as root): scripts/deps.sh [--test]
set -euo pipefail
pkgs=(build-essential cmake pkg-config libgsl-dev libcjson-dev libcsv-dev libcriterion-dev gnuplot-nox)
# The test command also replays the fuzz regression inputs: clang with
# libFuzzer's runtime; and runs a sharded sweep through GNU parallel, as a
# user spreads one over machines (tests/golden/test_sweep_shards.sh); jq,
# which the calibration and leave-one-group-out scripts and their tests read
# JSON with; python3, which rebuilds configs/kernels from the measured tables
# (tests/validation/test_kernels_rebuild.sh); prometheus (promtool and the
# server), which backfills and queries `kvsim run --openmetrics` output
# (tests/golden/test_openmetrics.sh); python3 with pip, setuptools and
# pytest, which install and test the Python module (tests/install/test_python.sh).
if [ "${1:-}" = --test ]; then
  pkgs+=(clang libclang-rt-14-dev parallel jq prometheus python3 python3-pip python3-setuptools python3-pytest)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
