#!/usr/bin/env bash
# The public headers are usable from C++: each compiles on its own as C++,
# and a C++ program calls the library through them and links (C linkage:
# every header wraps its declarations in extern "C").
# $1 = kvsim binary (libkvsim.so sits beside it), $2 = source dir.
# Exit 77 (skipped) without a C++ compiler.
set -u
src=$2
lib=$(cd "$(dirname "$1")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
cxx=$(command -v g++ || command -v c++ || true)
[ -n "$cxx" ] || { echo "skip: no C++ compiler (g++) to compile the headers with"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cjson=$(pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson)
for h in "$src"/sim/include/kvsim/*.h; do
  name=$(basename "$h")
  grep -q 'extern "C" {' "$h" || fail "$name has no extern \"C\" guard"
  printf '#include "kvsim/%s"\n' "$name" >"$tmp/one.cc"
  "$cxx" -std=c++17 -Wall -Werror -fsyntax-only -I"$src/sim/include" $cjson "$tmp/one.cc" \
    2>"$tmp/err" || fail "$name does not compile as C++: $(head -3 "$tmp/err")"
done
[ -e "$lib/libkvsim.so" ] || { echo "skip: no $lib/libkvsim.so to link against"; exit 77; }
# One call through each of several headers, linked against the C library.
cat >"$tmp/use.cc" <<'CC'
#include <cstdio>
#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"
int main() {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_err err = {};
  if (kvsim_model_load("llama-3.1-8b", &m, &err) < 0 || kvsim_gpu_load("h100-sxm", &g, &err) < 0)
    return 1;
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.max_model_len = 8192;
  kvsim_plan_t pl;
  if (kvsim_plan_compute(&m, &g, &p, &pl, &err) < 0)
    return 1;
  std::printf("%lld\n", (long long)pl.per_token_kv_bytes);
  return 0;
}
CC
# A sanitizer build's library needs its runtime first: link the caller with it.
san=
if ldd "$lib/libkvsim.so" 2>/dev/null | grep -q libasan; then
  san="-fsanitize=address,undefined"
fi
"$cxx" -std=c++17 $san -I"$src/sim/include" $cjson "$tmp/use.cc" -L"$lib" -lkvsim -Wl,-rpath,"$lib" \
  -o "$tmp/use" 2>"$tmp/err" || fail "a C++ caller does not link: $(grep -m2 -E 'undefined|error' "$tmp/err")"
[ "$("$tmp/use")" = 131072 ] || fail "the C++ caller's plan: $("$tmp/use")"
echo "ok"
