# Shared by the golden tests of bad inputs (sourced; needs $kvsim, an
# absolute path): a temporary folder that is the working directory,
# expect (exit 2, one stderr line containing a fixed string, nothing on
# stdout, no output folder, within 20 s and 1 GB) and ok, and base.json, a
# five-request scenario, with run=(...) the flags of a quick run into o/.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A sanitizer build reserves terabytes of address space: no memory cap there.
mem=1048576
grep -q __asan_init "$kvsim" && mem=unlimited

# expect "fixed string" args...: exit 2, one stderr line containing it, within
# 20 s and 1 GB of memory, nothing on stdout, no output folder.
expect() {
  local want=$1
  shift
  rm -rf "$tmp/o"
  (ulimit -v $mem; timeout 20 "$kvsim" "$@") >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "'$*': exit $rc, want 2 ($(head -c 300 "$tmp/err"))"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*': want one line, got: $(head -c 600 "$tmp/err" | cat -A)"
  grep -qF -- "$want" "$tmp/err" || fail "'$*': '$(cat "$tmp/err")' lacks '$want'"
  [ ! -s "$tmp/out" ] || fail "'$*': wrote to stdout: $(head -c 300 "$tmp/out")"
  [ ! -e "$tmp/o" ] || fail "'$*': left an output folder"
}
ok() {
  rm -rf "$tmp/o"
  "$kvsim" "$@" >"$tmp/out" 2>"$tmp/err" || fail "'$*': $(head -c 300 "$tmp/err")"
}

# sparse_file FILE SIZE: SIZE (truncate's units) of NUL bytes that take no disk.
sparse_file() { truncate -s "$2" "$1"; }

cd "$tmp" || exit 1
W='"workload": {"synthetic": {"requests": 5, "arrival": {"process": "poisson", "rate": 5},
   "prompt_tokens": 100, "output_tokens": 10}}'
echo "{\"name\": \"b\", \"model\": \"llama-3.1-8b\", $W}" >base.json
run=(run --no-band --no-verify-advice --quiet --out o)
