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
hits=$(grep -rnE 'strstr\([^,]*(\.|->)msg' sim/src cli)
[ -z "$hits" ] || fail "an error recognised by its text: $hits"
echo "ok: cli/ $total lines"
