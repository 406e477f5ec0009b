# Shared by the golden tests of flag errors (sourced; needs $kvsim and
# $tmp): fail, and expect_error PATTERN ARGS... (exit 2, one stderr line
# matching the extended regex PATTERN, nothing on stdout).
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_error() {
  local pattern=$1; shift
  "$kvsim" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "'$*' exited $rc, want 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*' printed $(wc -l <"$tmp/err") lines on stderr: $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "'$*' printed on stdout: $(cat "$tmp/out")"
  grep -Eq -- "$pattern" "$tmp/err" || fail "'$*' stderr does not match /$pattern/: $(cat "$tmp/err")"
}
