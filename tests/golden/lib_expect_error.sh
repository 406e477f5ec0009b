# Shared by the golden tests of flag errors (sourced; needs $kvsim and
# $tmp): fail, and expect_error PATTERN [@FIELD...] ARGS... (exit 2, one
# stderr line matching the extended regex PATTERN, nothing on stdout).
# The fields, leading words of ARGS, change how the case is run and read
# (lib_error_cases.sh lists them with the cases-file format):
#   @fixed / @regex  PATTERN is a fixed string the line contains / an ERE
#   @whole           PATTERN matches the whole line
#   @also=P @not=P   the line also matches / does not match P (read as PATTERN is)
#   @timeout=S       the command is stopped after S seconds (and so fails)
#   @vmem=KB         under `ulimit -v KB`; none in an ASan build, whose
#                    shadow memory reserves terabytes of address space
#   @make=CMD        the runner's (it makes the case's input): ignored here
fail() { echo "FAIL: $*" >&2; exit 1; }

# Whether $kvsim is an ASan build, asked once (a grep of the whole binary).
kvsim_is_asan() {
  if [ -z "${kvsim_asan-}" ]; then
    kvsim_asan=0
    grep -q __asan_init "$kvsim" && kvsim_asan=1
  fi
  [ "$kvsim_asan" = 1 ]
}

expect_error() {
  local pattern=$1 fixed=0 whole=0 secs='' vmem='' also=() not=() p
  shift
  while [[ ${1-} == @* ]]; do
    case $1 in
      @fixed) fixed=1 ;;
      @regex) fixed=0 ;;
      @whole) whole=1 ;;
      @also=*) also+=("${1#@also=}") ;;
      @not=*) not+=("${1#@not=}") ;;
      @timeout=*) secs=${1#@timeout=} ;;
      @vmem=*) vmem=${1#@vmem=} ;;
      @make=*) ;;
      *) fail "unknown field '$1' (before '$*')" ;;
    esac
    shift
  done
  [ -n "$vmem" ] && kvsim_is_asan && vmem=unlimited
  local cmd=("$kvsim" "$@") how=(-q -E)
  [ -n "$secs" ] && cmd=(timeout "$secs" "${cmd[@]}")
  [ $fixed = 1 ] && how=(-q -F)
  local rc=0 # (|| keeps a caller's set -e from ending the script at the refusal)
  (if [ -n "$vmem" ]; then ulimit -v "$vmem" || exit 125; fi; "${cmd[@]}") >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq 2 ] || fail "'$*' exited $rc, want 2: $(head -c 300 "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*' printed $(wc -l <"$tmp/err") lines on stderr: $(head -c 600 "$tmp/err" | cat -A)"
  [ ! -s "$tmp/out" ] || fail "'$*' printed on stdout: $(head -c 300 "$tmp/out")"
  if [ $whole = 1 ]; then
    grep "${how[@]}" -x -- "$pattern" "$tmp/err" || fail "'$*' stderr is not the line '$pattern': $(cat "$tmp/err")"
  else
    grep "${how[@]}" -- "$pattern" "$tmp/err" || fail "'$*' stderr does not match '$pattern': $(cat "$tmp/err")"
  fi
  for p in "${also[@]}"; do
    grep "${how[@]}" -- "$p" "$tmp/err" || fail "'$*' stderr does not also match '$p': $(cat "$tmp/err")"
  done
  for p in "${not[@]}"; do
    grep "${how[@]}" -- "$p" "$tmp/err" && fail "'$*' stderr matches '$p', which it must not: $(cat "$tmp/err")"
  done
  return 0
}
