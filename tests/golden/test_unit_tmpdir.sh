#!/usr/bin/env bash
# The unit tests write their temporary folders under $TMPDIR, or /tmp when
# it is unset, never into the folder they run from: a run from the
# checkout's root once left (and got committed) kvsim-study-XXXXXX/.
# $1 = kvsim binary (kvsim_tests sits beside it), $2 = source dir.
set -u
tests=$(cd "$(dirname "$1")" && pwd)/kvsim_tests
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$tests" ] || { echo "SKIP: no $tests (unit tests not built)"; exit 77; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Run from a folder that is removed under them: nothing can be created
# there, not even by root, so a test that writes beside itself fails.
for f in 'study/a_sweep_keeps_only_summaries_unless_keep_runs' 'study/shards_merge*' \
         'model_loader/config_json_is_named_after_its_folder' 'csvrow/*' 'formats/*' \
         'core/*' 'sched_progress/output_length*'; do
  cwd=$(mktemp -d)
  (cd "$cwd" && rmdir "$cwd" && exec env -u TMPDIR "$tests" --jobs 1 --filter "$f") >"$log" 2>&1 \
    || { cat "$log" >&2; fail "unit tests $f write into the folder they run from (TMPDIR unset)"; }
done
echo "ok"
