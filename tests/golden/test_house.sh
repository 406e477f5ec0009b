#!/usr/bin/env bash
# The house's rules that a reader can check mechanically: cli/ stays thin
# (flags -> struct -> call -> print: under 1,800 lines, no file over 250),
# profile names are compared only inside sim/src/sched/, and no code
# recognises an error by matching its message text.
set -u
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$src" || exit 1
total=$(cat cli/*.c cli/*.h | wc -l)
[ "$total" -lt 1800 ] || fail "cli/ has $total lines (at most 1,799)"
for f in cli/*.c; do
  n=$(wc -l <"$f")
  [ "$n" -le 250 ] || fail "$f has $n lines (at most 250)"
done
hits=$(grep -rnE 'strn?cmp\([^)]*"(vllm-v1|vllm-v0|static|contiguous|contiguous-pow2|sglang|tgi|hf-transformers)"' sim/src cli |
       grep -v '^sim/src/sched/')
[ -z "$hits" ] || fail "profile names compared outside sim/src/sched/: $hits"
# Nor by comparing, scanning or trimming its text (a message's start is no
# file name to cut: the error carries what a caller needs, kvsim/error.h).
hits=$(grep -rnE '(strstr|strn?cmp|memcmp|sscanf|strspn|strcspn)\([^;]*(\.|->)msg\b' sim/src cli)
[ -z "$hits" ] || fail "an error recognised by its text: $hits"
# Every allocation of the library goes through core/alloc.h, so that the
# failing-allocator tests reach it (cJSON's own buffers aside).
hits=$(grep -rnE '(^|[^_a-zA-Z])(malloc|calloc|realloc|strdup|strndup)\(' sim/src --include=*.c | grep -v '^sim/src/core/alloc.c:')
[ -z "$hits" ] || fail "allocations that bypass core/alloc.h: $hits"
# Each unit file is its own ctest entry, filtered to the suites it declares
# at the start of a line (CMakeLists.txt): a suite declared any other way
# would run in no entry. Every suite the test binary lists must be one of them.
tests_bin=$(dirname "$(realpath "$1")")/kvsim_tests
if [ -x "$tests_bin" ]; then
  declared=$(grep -hoE '^(Test|ParameterizedTest|Theory)\( *[A-Za-z0-9_]+' tests/unit/*.c | sed -E 's/.*\( *//' | sort -u)
  listed=$("$tests_bin" --list 2>&1 | sed -nE 's/^([A-Za-z0-9_]+): [0-9]+ tests?$/\1/p' | sort -u)
  [ -n "$listed" ] || fail "$tests_bin --list printed no suite"
  missed=$(comm -13 <(echo "$declared") <(echo "$listed"))
  [ -z "$missed" ] || fail "suites no unit/ ctest entry runs: $missed"
fi
echo "ok: cli/ $total lines"
