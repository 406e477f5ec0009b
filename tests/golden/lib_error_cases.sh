# Error cases as data (sourced by golden tests; needs $kvsim and $tmp, and
# lib_expect_error.sh). A cases file holds one case per line:
#   ARGS => PATTERN
# ARGS are the command's arguments as a shell would read them ($tmp, $src
# and the calling script's variables expand; quotes group), PATTERN the
# extended regex the one stderr line must match. Blank lines and lines
# starting with # are comments. Each case must exit 2 with one line on
# stderr, nothing on stdout, and leave nothing new under $tmp (a refused
# command writes no output).
run_error_cases() {
  local file=$1 line args pattern n=0 before after
  [ -f "$file" ] || fail "no cases file $file"
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in '' | '#'*) continue ;; esac
    [[ $line == *' => '* ]] || fail "$file: not 'ARGS => PATTERN': $line"
    args=${line%% => *}
    pattern=${line#* => }
    before=$(find "$tmp" -mindepth 1 -not -name out -not -name err | sort)
    eval "set -- $args"
    expect_error "$pattern" "$@"
    after=$(find "$tmp" -mindepth 1 -not -name out -not -name err | sort)
    [ "$before" = "$after" ] || fail "'$args' was refused but wrote: $(comm -13 <(echo "$before") <(echo "$after"))"
    n=$((n + 1))
  done <"$file"
  [ $n -gt 0 ] || fail "$file has no case"
  echo "ok: $n error cases of $(basename "$file")"
}
