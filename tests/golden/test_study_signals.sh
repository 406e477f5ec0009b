#!/usr/bin/env bash
# A compare or plan that is stopped, or cannot write, leaves nothing half-done:
# - a compare stopped by a signal while its candidates run (with --jobs 2 its
#   workers end too) says so in one line, exits non-zero and leaves no folder
#   it made when no candidate had finished; in a folder the user made, what
#   was there stays; the rows of the candidates that finished are kept in
#   compare.partial.csv, and the line says so;
# - a compare stopped while writing (SIGXFSZ) removes the files it had
#   written, and says so;
# - a bad --out is refused before any candidate runs;
# - a compare that cannot write one of its files (a full disk, a folder in
#   the way) is one error line, exit 2, and leaves none of its files: not a
#   compare.csv without its REPORT.md, nor a new table beside an old one;
# - a plan stopped by a signal says so in one line and prints no answer; one
#   that fails is one error line and prints no answer either.
set -euo pipefail
kvsim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ulimit -c 0
scen="$src/tests/golden/data/small-synthetic.json"

# Three candidates of a few seconds each (the rate search runs each many times).
cat >"$tmp/study.json" <<JSON
{ "name": "st", "scenario": "$scen", "target_rate": 8, "slo": { "ttft_p99_s": 1 },
  "candidates": [ { "label": "a", "set": { "workload.synthetic.requests": 20000 } },
                  { "label": "b", "set": { "workload.synthetic.requests": 20000, "engine.max_num_seqs": 16 } },
                  { "label": "c", "set": { "workload.synthetic.requests": 20000, "engine.max_num_seqs": 8 } } ] }
JSON
# A quick one, for the write errors.
cat >"$tmp/quick.json" <<JSON
{ "name": "q", "scenario": "$scen", "target_rate": 8, "slo": { "ttft_p99_s": 1 },
  "candidates": [ { "label": "a" }, { "label": "b", "set": { "engine.max_num_seqs": 8 } } ] }
JSON

one_line() {  # FILE WHAT REGEX
  [ "$(wc -l <"$1")" = 1 ] || { echo "$2: not one line:"; cat "$1"; exit 1; }
  grep -qE "$3" "$1" || { echo "$2: the line does not say '$3':"; cat "$1"; exit 1; }
}
nothing_left() {  # DIR WHAT
  [ ! -e "$1" ] || { echo "$2 left: $(ls -A "$1")"; exit 1; }
}

compare_stopped() {  # OUT SIG JOBS
  out=$1 sig=$2 jobs=$3
  "$kvsim" compare "$tmp/study.json" --out "$out" --jobs "$jobs" --quiet >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  sleep 0.5
  kill -0 $pid 2>/dev/null || { echo "compare ended before it was stopped"; cat "$tmp/err"; exit 1; }
  kill -"$sig" $pid
  rc=0; wait $pid || rc=$?
  [ $rc != 0 ] || { echo "a compare stopped by SIG$sig exits 0"; exit 1; }
  one_line "$tmp/err" "compare stopped by SIG$sig" \
    "^kvsim compare: error: $out: stopped by SIG$sig after [0-9] of 3 candidates; nothing written \(no compare\.csv\)$"
  [ ! -s "$tmp/out" ] || { echo "a stopped compare printed:"; cat "$tmp/out"; exit 1; }
  sleep 0.2
  ! pgrep -f "$tmp/study.json" >/dev/null || { echo "a stopped compare left processes (SIG$sig)"; exit 1; }
}
compare_stopped "$tmp/c1/a/b" TERM 2
nothing_left "$tmp/c1" "a compare stopped by SIGTERM"
compare_stopped "$tmp/c2" INT 1
nothing_left "$tmp/c2" "a compare stopped by SIGINT"
mkdir "$tmp/mine"
echo notes >"$tmp/mine/notes.txt"
compare_stopped "$tmp/mine" HUP 2
[ "$(ls -A "$tmp/mine")" = notes.txt ] || { echo "a user's folder: $(ls -A "$tmp/mine")"; exit 1; }

# Stopped after a candidate finished: its row is kept in compare.partial.csv
# (compare.csv's header and columns), said in the line; the running one is
# not. An interrupted compare used to keep nothing of an hour's work.
cat >"$tmp/part.json" <<JSON
{ "name": "pt", "scenario": "$scen", "target_rate": 8, "slo": { "ttft_p99_s": 1 },
  "candidates": [ { "label": "quick", "set": { "workload.synthetic.requests": 50 } },
                  { "label": "slow", "set": { "workload.synthetic.requests": 40000 } } ] }
JSON
for jobs in 1 2; do
  out="$tmp/part$jobs/x"
  "$kvsim" compare "$tmp/part.json" --out "$out" --jobs $jobs --quiet >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 1 300); do [ -e "$out/compare.partial.csv" ] && break; sleep 0.1; done
  kill -0 $pid 2>/dev/null || { echo "compare ended before it was stopped"; cat "$tmp/err"; exit 1; }
  kill -INT $pid
  rc=0; wait $pid || rc=$?
  [ $rc != 0 ] || { echo "a stopped compare exits 0"; exit 1; }
  one_line "$tmp/err" "compare stopped after a candidate (--jobs $jobs)" \
    "^kvsim compare: error: $out: stopped by SIGINT after 1 of 2 candidates; kept the 1 finished one in compare\.partial\.csv \(no compare\.csv\)$"
  [ "$(ls -A "$out")" = compare.partial.csv ] || { echo "a stopped compare left: $(ls -A "$out")"; exit 1; }
  head -1 "$out/compare.partial.csv" | grep -q '^label,gpu,model,' || { echo "partial: no header"; exit 1; }
  [ "$(wc -l <"$out/compare.partial.csv")" = 2 ] && grep -q '^quick,l4,llama-3.2-1b,' "$out/compare.partial.csv" \
    || { echo "partial rows:"; cat "$out/compare.partial.csv"; exit 1; }
  sleep 0.2
  ! pgrep -f "$tmp/part.json" >/dev/null || { echo "a stopped compare left processes"; exit 1; }
done
# A compare that completes leaves no partial table (nor an older one).
cp "$tmp/part1/x/compare.partial.csv" "$tmp/part1/x/keep.csv"
"$kvsim" compare "$tmp/quick.json" --out "$tmp/part1/x" --quiet
[ ! -e "$tmp/part1/x/compare.partial.csv" ] || { echo "a completed compare left compare.partial.csv"; exit 1; }
[ -e "$tmp/part1/x/compare.csv" ] && [ -e "$tmp/part1/x/keep.csv" ] || { echo "outputs: $(ls -A "$tmp/part1/x")"; exit 1; }

# A bad --out is refused before any candidate runs: one line, no progress
# line of a finished candidate before it.
touch "$tmp/afile"
for bad in "$tmp/afile/sub" /dev/null; do
  rc=0; "$kvsim" compare "$tmp/study.json" --out "$bad" --progress >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc = 2 ] || { echo "--out $bad: exit $rc"; cat "$tmp/err"; exit 1; }
  one_line "$tmp/err" "--out $bad" "^kvsim compare: error: .*: cannot create folder: Not a directory$"
done
mkdir -p "$tmp/rep/REPORT.md"
rc=0; "$kvsim" compare "$tmp/study.json" --out "$tmp/rep" --progress >"$tmp/out" 2>"$tmp/err" || rc=$?
one_line "$tmp/err" "--out with a folder REPORT.md" "REPORT.md: write failed: Is a directory$"

# Stopped while writing: REPORT.md goes over a 4 KiB file-size limit after
# compare.csv is done.
rc=0
(ulimit -f 4; exec "$kvsim" compare "$tmp/quick.json" --out "$tmp/fsz" --quiet) 2>"$tmp/err" || rc=$?
[ $rc != 0 ] || { echo "a compare over the file-size limit exits 0"; exit 1; }
# The finished candidates' rows stay in compare.partial.csv, as after any
# stop; the files being written are removed.
one_line "$tmp/err" "compare stopped by SIGXFSZ" \
  "$tmp/fsz: stopped by SIGXFSZ after 2 of 2 candidates; removed the files it had written; kept the 2 finished ones in compare\.partial\.csv \(no compare\.csv\)$"
[ "$(ls -A "$tmp/fsz")" = compare.partial.csv ] || { echo "a compare stopped by SIGXFSZ left: $(ls -A "$tmp/fsz")"; exit 1; }

# The same write error with SIGXFSZ ignored, as a full disk gives it.
rc=0
(ulimit -f 4; trap '' XFSZ; exec "$kvsim" compare "$tmp/quick.json" --out "$tmp/full/x" --quiet) \
  2>"$tmp/err" || rc=$?
[ $rc = 2 ] || { echo "compare write error: exit $rc, want 2"; cat "$tmp/err"; exit 1; }
one_line "$tmp/err" "compare write error" "$tmp/full/x/REPORT.md: write failed: File too large"
nothing_left "$tmp/full" "a compare that could not write"
# In a folder with an older compare's files: they are not replaced by half
# of a new one.
mkdir "$tmp/old"
echo old >"$tmp/old/compare.csv"
echo old >"$tmp/old/REPORT.md"
rc=0
(ulimit -f 4; trap '' XFSZ; exec "$kvsim" compare "$tmp/quick.json" --out "$tmp/old" --quiet) \
  2>"$tmp/err" || rc=$?
[ $rc = 2 ] || { echo "compare write error in an old folder: exit $rc, want 2"; exit 1; }
[ "$(cat "$tmp/old/compare.csv")" = old ] || { echo "a failed compare replaced compare.csv"; exit 1; }
[ "$(ls -A "$tmp/old" | tr '\n' ' ')" = "REPORT.md compare.csv " ] ||
  { echo "a failed compare left: $(ls -A "$tmp/old")"; exit 1; }
# A folder where REPORT.md goes: the last file cannot be put in place.
mkdir -p "$tmp/isdir/REPORT.md"
echo old >"$tmp/isdir/compare.csv"
rc=0
"$kvsim" compare "$tmp/quick.json" --out "$tmp/isdir" --quiet 2>"$tmp/err" || rc=$?
[ $rc = 2 ] || { echo "REPORT.md a folder: exit $rc, want 2"; exit 1; }
one_line "$tmp/err" "REPORT.md a folder" "$tmp/isdir/REPORT.md: write failed: Is a directory"
[ "$(ls -A "$tmp/isdir" | tr '\n' ' ')" = "REPORT.md compare.csv " ] ||
  { echo "REPORT.md a folder: left $(ls -A "$tmp/isdir")"; exit 1; }
[ "$(cat "$tmp/isdir/compare.csv")" = old ] || { echo "REPORT.md a folder: compare.csv replaced"; exit 1; }

# A plan stopped by a signal: one line, no answer on stdout.
for sig in INT TERM; do
  "$kvsim" plan "$scen" --slo ttft_p99=1s --quiet --set workload.synthetic.requests=200000 \
    >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  sleep 0.5
  kill -0 $pid 2>/dev/null || { echo "plan ended before it was stopped"; cat "$tmp/err"; exit 1; }
  kill -"$sig" $pid
  rc=0; wait $pid || rc=$?
  [ $rc != 0 ] || { echo "a plan stopped by SIG$sig exits 0"; exit 1; }
  one_line "$tmp/err" "plan stopped by SIG$sig" \
    "^kvsim plan: error: $scen: stopped by SIG$sig before an answer \(nothing written\)$"
  [ ! -s "$tmp/out" ] || { echo "a stopped plan printed:"; cat "$tmp/out"; exit 1; }
done
# A plan whose scenario fails at its first point: one line, no answer.
cp "$src/workloads/tiny_azure.csv" "$tmp/bad.csv"
echo "2024-01-01 09:00:09.0000000,notanumber,10" >>"$tmp/bad.csv"
cat >"$tmp/trace.json" <<JSON
{ "name": "tr", "seed": 1, "model": "llama-3.2-1b", "hardware": { "gpu": "l4" },
  "engine": { "max_model_len": 4096 }, "workload": { "trace": "bad.csv" } }
JSON
rc=0
"$kvsim" plan "$tmp/trace.json" --slo ttft_p99=1s --search replicas >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc = 2 ] || { echo "a plan on a bad trace: exit $rc, want 2"; cat "$tmp/err"; exit 1; }
one_line "$tmp/err" "a plan on a bad trace" "bad.csv:7: column 'ContextTokens': bad value 'notanumber'"
[ ! -s "$tmp/out" ] || { echo "a failed plan printed:"; cat "$tmp/out"; exit 1; }
echo "study signals: ok"
