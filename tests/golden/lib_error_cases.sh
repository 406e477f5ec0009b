# Error cases as data (sourced by golden tests; needs $kvsim and $tmp, and
# lib_expect_error.sh). A cases file holds one case per line:
#   [@FIELD...] ARGS => PATTERN
# ARGS are the command's arguments as a shell would read them ($tmp, $src
# and the calling script's variables and functions expand; quotes group:
# "$(bad 'EDIT')" may write an input and give its path, before $tmp is listed),
# PATTERN the extended regex the one stderr line must match. Blank lines
# and lines starting with # are comments. Each case must exit 2 with one
# line on stderr, nothing on stdout, and leave nothing new under $tmp (a
# refused command writes no output).
# Leading @ words of ARGS are the case's fields (expect_error reads them):
#   @fixed           PATTERN is a fixed string the line contains (@regex: an ERE again)
#   @whole           PATTERN matches the whole line
#   @also=P          the line also matches P; @not=P: it does not (P read as PATTERN)
#   @timeout=S       the command must end within S seconds
#   @vmem=KB         it runs under `ulimit -v KB` (no limit in an ASan build)
#   @make=CMD        CMD (words, no quotes: a function of the script and its
#                    arguments) writes the case's input first; what it wrote is
#                    removed after the case (a generated input, e.g. 64 MiB of
#                    NUL bytes, lives only as long as its case)
# A line of fields alone sets the fields of the cases below it, until the
# next such line; a case's own fields come after them and so win.
run_error_cases() {
  local file=$1 line args pattern n=0 before after defaults=() field make=() made
  [ -f "$file" ] || fail "no cases file $file"
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in '' | '#'*) continue ;; esac
    if [[ $line == @* && $line != *' => '* ]]; then
      eval "defaults=($line)"
      continue
    fi
    [[ $line == *' => '* ]] || fail "$file: not 'ARGS => PATTERN': $line"
    args=${line%% => *}
    pattern=${line#* => }
    eval "set -- $args"
    set -- "${defaults[@]}" "$@"
    made=
    for field in "$@"; do
      [[ $field == @* ]] || break
      [[ $field == @make=* ]] || continue
      before=$(error_cases_ls)
      read -r -a make <<<"${field#@make=}"
      "${make[@]}" || fail "'$args': ${field#@make=} failed"
      made+=$(comm -13 <(echo "$before") <(error_cases_ls))$'\n'
    done
    before=$(error_cases_ls)
    expect_error "$pattern" "$@"
    after=$(error_cases_ls)
    [ "$before" = "$after" ] || fail "'$args' was refused but wrote: $(comm -13 <(echo "$before") <(echo "$after"))"
    if [ -n "${made//$'\n'/}" ]; then
      while IFS= read -r field; do [ -z "$field" ] || rm -rf -- "$field"; done <<<"$made"
    fi
    n=$((n + 1))
  done <"$file"
  [ $n -gt 0 ] || fail "$file has no case"
  echo "ok: $n error cases of $(basename "$file")"
}

# Everything under $tmp but the checks' own out and err.
error_cases_ls() { find "$tmp" -mindepth 1 -not -name out -not -name err | sort; }

# A generator for @make: sparse_file FILE SIZE writes SIZE (truncate's
# units) of NUL bytes that take no disk.
sparse_file() { truncate -s "$2" "$1"; }
