# Shared by scripts/plot.sh and scripts/plot_sweep.sh (sourced, not run).
# Reads summary.json without jq: kvsim prints it one key per line, with
# one tab before each top-level key.

# json_get FILE SECTION KEY [SUBKEY]: the first value of KEY (or of KEY's
# SUBKEY) inside the top-level SECTION; "" when absent.
json_get() {
  awk -v sec="$2" -v k1="\"$3\":" -v k2="${4:+\"$4\":}" '
    function val(l) { sub(/^[^:]*:[ \t]*/, "", l); sub(/,$/, "", l); gsub(/"/, "", l); return l }
    /^\t"/ { split($0, a, "\""); top = a[2]; in1 = 0 }
    top == sec && !in1 && index($0, k1) { if (k2 == "") { print val($0); exit } in1 = 1; next }
    in1 && index($0, k2) { print val($0); exit }' "$1" 2>/dev/null || true
}

# gq TEXT: TEXT inside a gnuplot single-quoted string.
gq() { printf '%s' "$1" | sed "s/'/''/g"; }

# run_label SUMMARY: "name: model on GPU (TP t), util u" for a title; a
# disaggregated run's sides instead of its base TP (memory_plan is the
# scenario's own hardware, which the sides only inherit from):
# "name: model on GPU (3 prefill TP 4 : 1 decode TP 8), util u".
run_label() {
  local s=$1 name model gpu tp util pr pt dr dt
  name=$(json_get "$s" name name)
  model=$(json_get "$s" memory_plan model)
  gpu=$(json_get "$s" memory_plan gpu)
  tp=$(json_get "$s" memory_plan tensor_parallel_size)
  util=$(json_get "$s" memory_plan gpu_memory_utilization)
  pr=$(json_get "$s" disaggregation prefill replicas)
  if [ -n "$pr" ]; then
    pt=$(json_get "$s" disaggregation prefill tensor_parallel_size)
    dr=$(json_get "$s" disaggregation decode replicas)
    dt=$(json_get "$s" disaggregation decode tensor_parallel_size)
    tp="$pr prefill TP $pt : $dr decode TP $dt"
  else
    tp="TP ${tp:-?}"
  fi
  printf '%s: %s on %s (%s), gpu_memory_utilization %s' "${name:-?}" "${model:-?}" "${gpu:-?}" \
    "$tp" "${util:-?}"
}

# The terminal every figure uses: PNG, plain text (noenhanced: metric
# names keep their underscores).
gp_head() { # FILE [HEIGHT]
  printf "set terminal pngcairo noenhanced size 1100,%s font ',10'\nset output '%s'\n" "${2:-460}" "$(gq "$1")"
}

# empty_plot FILE TITLE: a figure with nothing to draw says so in its title
# (no empty 0-1 axis).
empty_plot() {
  gnuplot <<GP
$(gp_head "$1" 200)
set title '$(gq "$2")'
unset border
unset tics
unset key
plot [0:1] [0:1] NaN notitle
GP
}

# check_png FILE: gnuplot wrote it.
check_png() { [ -s "$1" ] || { echo "plot: gnuplot did not write $1" >&2; exit 1; }; }
