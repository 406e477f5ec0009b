#!/usr/bin/env bash
# Installs missing packages, builds and runs every test twice: a Release
# build with warnings as errors, and an AddressSanitizer + UBSan build
# with assert() compiled in (no NDEBUG; tests/unit/test_build.c checks it).
# Under the sanitizers the long validation replays (whole traces, rate
# bisections) skip themselves (KVSIM_SANITIZED=1): they run in the Release
# pass, and every unit and golden test runs in both, as does the test of
# the installed library (tests/install/). Last, the fuzz targets replay
# every input they kept and fuzz a few seconds each (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
jobs=$(nproc)
for kind in release asan; do
  dir=build-test-$kind
  if [ $kind = release ]; then
    cmake -S . -B $dir -DCMAKE_BUILD_TYPE=Release -DKVSIM_WERROR=ON \
      -DKVSIM_SANITIZE=OFF -DKVSIM_CHECK_INVARIANTS=OFF >/dev/null
    san=0
  else
    cmake -S . -B $dir -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVSIM_WERROR=ON -DKVSIM_SANITIZE=ON \
      -DKVSIM_ASSERTS=ON -DKVSIM_CHECK_INVARIANTS=OFF >/dev/null
    san=1
  fi
  cmake --build $dir -j "$jobs"
  echo "== tests ($kind)"
  KVSIM_SANITIZED=$san ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir $dir --output-on-failure -j "$jobs"
done
# Every input that ever crashed or hung a fuzz target, and the seeds, are
# replayed, then each target fuzzes a few seconds (scripts/fuzz.sh).
echo "== fuzz regression"
bash scripts/fuzz.sh --regress
