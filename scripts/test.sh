#!/usr/bin/env bash
# Installs missing packages, builds and runs every test twice: a Release
# build with warnings as errors, and an AddressSanitizer + UBSan build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
for kind in release asan; do
  dir=build-test-$kind
  if [ $kind = release ]; then
    cmake -S . -B $dir -DCMAKE_BUILD_TYPE=Release -DKVSIM_WERROR=ON -DKVSIM_CHECK_INVARIANTS=ON >/dev/null
  else
    cmake -S . -B $dir -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVSIM_WERROR=ON -DKVSIM_SANITIZE=ON \
      -DKVSIM_CHECK_INVARIANTS=ON >/dev/null
  fi
  cmake --build $dir -j "$jobs"
  echo "== tests ($kind)"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir $dir --output-on-failure -j "$jobs"
done
