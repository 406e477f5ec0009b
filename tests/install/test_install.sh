#!/usr/bin/env bash
# The installed library, used from outside the tree: installs the build into
# a temporary prefix, checks the layout, compiles every installed header on
# its own, and builds consumer.c with `pkg-config --cflags --libs kvsim`,
# linked against libkvsim.so and once against libkvsim.a, then runs both.
# Usage: test_install.sh KVSIM SRC_DIR BUILD_DIR [CC] [EXTRA_CFLAGS]
#   EXTRA_CFLAGS: the sanitizer flags of a sanitized build (its library needs them).
set -euo pipefail
kvsim=$1 src=$2 build=$3
cc=${4:-cc}
extra=${5:-}
command -v pkg-config >/dev/null || { echo "pkg-config is missing" >&2; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "test_install: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }

# Layout.
for f in bin/kvsim lib/libkvsim.a lib/libkvsim.so include/kvsim.h lib/pkgconfig/kvsim.pc; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
for h in "$src"/sim/include/kvsim/*.h; do
  n=$(basename "$h")
  cmp -s "$h" "$prefix/include/kvsim/$n" || fail "include/kvsim/$n missing or not the source's"
  grep -q "^#include \"kvsim/$n\"" "$prefix/include/kvsim.h" || fail "kvsim.h does not include kvsim/$n"
done
for h in "$prefix"/include/kvsim/*.h; do
  [ -e "$src/sim/include/kvsim/$(basename "$h")" ] || fail "installed $(basename "$h") has no source"
done

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
pkg-config --exists kvsim || fail "pkg-config does not find kvsim.pc: $(pkg-config --print-errors kvsim 2>&1)"
[ "$(pkg-config --modversion kvsim)" = "$("$prefix/bin/kvsim" --version 2>&1 | grep -o '[0-9][0-9.]*' | head -1)" ] ||
  fail "kvsim.pc version $(pkg-config --modversion kvsim) is not the binary's"
read -r -a cflags <<<"$(pkg-config --cflags kvsim)"
read -r -a libs <<<"$(pkg-config --libs kvsim)"
# Static: the same, with the private requirements, and libkvsim.a by name.
read -r -a slibs <<<"$(pkg-config --static --libs kvsim | sed 's/-lkvsim\( \|$\)/-l:libkvsim.a\1/')"
read -r -a sanflags <<<"$extra"

# Each public header stands alone in the installed tree (none reaches for
# a private header of sim/src, which is not installed), and so does kvsim.h.
for h in "$prefix"/include/kvsim/*.h "$prefix/include/kvsim.h"; do
  rel=${h#"$prefix/include/"}
  printf '#include <%s>\n#include <%s>\nint main(void) { return 0; }\n' "$rel" "$rel" >"$tmp/h.c"
  "$cc" -std=c11 -Wall -Wextra -Werror -fsyntax-only "${cflags[@]}" "$tmp/h.c" ||
    fail "installed header $rel does not compile on its own"
done

"$prefix/bin/kvsim" calc --model llama-3.1-8b --gpu h100-sxm --json >"$tmp/calc.json"

cd "$tmp"
"$cc" -std=c11 -Wall -Wextra -Werror "${sanflags[@]}" -o consumer-shared "$src/tests/install/consumer.c" \
  "${cflags[@]}" "${libs[@]}" "-Wl,-rpath,$prefix/lib" || fail "consumer does not build against libkvsim.so"
"$cc" -std=c11 -Wall -Wextra -Werror "${sanflags[@]}" -o consumer-static "$src/tests/install/consumer.c" \
  "${cflags[@]}" "${slibs[@]}" || fail "consumer does not build against libkvsim.a"

needed() { LC_ALL=C readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
needed consumer-shared | grep -q '^libkvsim\.so' || fail "consumer-shared does not load libkvsim.so"
if needed consumer-static | grep -q '^libkvsim'; then fail "consumer-static loads libkvsim.so"; fi

./consumer-shared calc.json || fail "consumer (shared) failed"
./consumer-static calc.json || fail "consumer (static) failed"
echo "install test: layout, headers, pkg-config, shared and static consumers passed"
