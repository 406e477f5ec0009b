#!/usr/bin/env bash
# Outputs when a run or sweep is stopped or cannot write:
# - a run stopped by SIGHUP, SIGQUIT, SIGXCPU, SIGUSR1, SIGALRM or SIGPIPE (as SIGINT and
#   SIGTERM already) exits non-zero and leaves no *.tmp.PID files and no
#   folder it made;
# - a file-size limit (SIGXFSZ, or the write error when it is ignored, as a
#   full disk gives it) leaves nothing either, and the error names the file;
# - a stopped sweep removes the run folders it wrote (none existed before
#   it) and says so in one line; a folder given by the user and what was in
#   it stay.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ulimit -c 0 # SIGQUIT's default action dumps core
scen="$src/tests/golden/data/small-synthetic.json"
long=(--set workload.synthetic.requests=50000000 --set workload.synthetic.arrival.rate=1000)

wait_tmp() {  # DIR: until the run streams its outputs
  for _ in $(seq 100); do ls "$1"/*.tmp.* >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "no temporary files in $1 while running"; exit 1
}
nothing_left() {  # DIR WHAT
  [ ! -e "$1" ] || { echo "$2 left: $(ls -A "$1")"; exit 1; }
}

# A background job has SIGQUIT ignored: give it back its default first.
for sig in HUP QUIT XCPU USR1 ALRM; do
  env --default-signal=QUIT "$kvsim" run "$scen" --quiet --out "$tmp/$sig" "${long[@]}" &
  pid=$!
  wait_tmp "$tmp/$sig"
  kill -"$sig" $pid
  rc=0; wait $pid || rc=$?
  [ $rc != 0 ] || { echo "a run stopped by SIG$sig exits 0"; exit 1; }
  nothing_left "$tmp/$sig" "a run stopped by SIG$sig"
done

# SIGPIPE: the reader of the progress line goes away.
set +e
"$kvsim" run "$scen" --progress --out "$tmp/pipe" "${long[@]}" 2>&1 >/dev/null | head -c 1 >/dev/null
rc=${PIPESTATUS[0]}
set -e
[ "$rc" != 0 ] || { echo "a run whose stderr reader went away exits 0"; exit 1; }
nothing_left "$tmp/pipe" "a run stopped by SIGPIPE"

# A file-size limit of 64 KiB, and the same with SIGXFSZ ignored (the
# write error then comes back as a full disk's does).
rc=0
(ulimit -f 64; exec "$kvsim" run "$scen" --quiet --out "$tmp/fsz" --no-band --no-verify-advice \
  --set workload.synthetic.requests=20000) 2>"$tmp/err" || rc=$?
[ $rc != 0 ] || { echo "a run over the file-size limit exits 0"; exit 1; }
nothing_left "$tmp/fsz" "a run over the file-size limit"
rc=0
(ulimit -f 64; trap '' XFSZ; exec "$kvsim" run "$scen" --quiet --out "$tmp/efbig/a/b" --no-band \
  --no-verify-advice --set workload.synthetic.requests=20000) 2>"$tmp/err" || rc=$?
[ $rc = 2 ] || { echo "write error: exit $rc, want 2"; cat "$tmp/err"; exit 1; }
[ "$(wc -l <"$tmp/err")" = 1 ] || { echo "not one line:"; cat "$tmp/err"; exit 1; }
grep -qE "$tmp/efbig/a/b/(timeseries|requests)\.csv: write failed: File too large" "$tmp/err" \
  || { echo "error does not name the file and the reason:"; cat "$tmp/err"; exit 1; }
nothing_left "$tmp/efbig" "a run that could not write"
mkdir "$tmp/mine"
touch "$tmp/mine/notes.txt"
rc=0
(ulimit -f 64; trap '' XFSZ; exec "$kvsim" run "$scen" --quiet --out "$tmp/mine" --no-band \
  --no-verify-advice --set workload.synthetic.requests=20000) 2>"$tmp/err" || rc=$?
[ $rc = 2 ] || { echo "write error into an existing folder: exit $rc, want 2"; exit 1; }
[ "$(ls -A "$tmp/mine")" = notes.txt ] || { echo "existing folder: $(ls -A "$tmp/mine")"; exit 1; }

# A sweep stopped while its points run.
# (relative paths in a sweep are its folder's)
cat >"$tmp/sweep.json" <<JSON
{ "name": "s", "scenario": "$(cd "$src" && pwd)/tests/golden/data/small-synthetic.json", "set": { "workload.synthetic.requests": 40000 },
  "grid": { "seed": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20] } }
JSON
sweep_stopped() {  # OUT SIG JOBS [FLAGS...]
  out=$1 sig=$2 jobs=$3; shift 3
  "$kvsim" sweep "$tmp/sweep.json" --out "$out" --jobs "$jobs" --quiet "$@" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 200); do [ -e "$out/run0001/summary.json" ] && break; sleep 0.05; done
  [ -e "$out/run0001/summary.json" ] || { echo "sweep: no finished run to stop after"; cat "$tmp/err"; exit 1; }
  kill -"$sig" $pid
  rc=0; wait $pid || rc=$?
  [ $rc != 0 ] || { echo "a sweep stopped by SIG$sig exits 0"; exit 1; }
  [ "$(wc -l <"$tmp/err")" = 1 ] || { echo "sweep: not one line:"; cat "$tmp/err"; exit 1; }
  grep -qE "$out: stopped by SIG$sig; removed the [0-9]+ run folders? it had written" "$tmp/err" \
    || { echo "sweep: no line saying it stopped:"; cat "$tmp/err"; exit 1; }
}
sweep_stopped "$tmp/sw" INT 2
nothing_left "$tmp/sw" "a sweep stopped by SIGINT"
sweep_stopped "$tmp/sw1" TERM 1 --keep-runs
nothing_left "$tmp/sw1" "a sweep stopped by SIGTERM (--jobs 1)"
sweep_stopped "$tmp/sw2" USR1 2
nothing_left "$tmp/sw2" "a sweep stopped by SIGUSR1 (its workers used to go on)"
mkdir -p "$tmp/mysw/run0019" "$tmp/mysw/keep"
echo '{}' >"$tmp/mysw/run0019/summary.json"
sweep_stopped "$tmp/mysw" HUP 2
left=$(cd "$tmp/mysw" && ls -A | tr '\n' ' ')
[ "$left" = "keep run0019 " ] || { echo "a stopped sweep in an existing folder left: $left"; exit 1; }
[ "$(cat "$tmp/mysw/run0019/summary.json")" = '{}' ] || { echo "a point not run was touched"; exit 1; }
pgrep -f "$tmp/sweep.json" >/dev/null && { echo "a stopped sweep left processes"; exit 1; }
echo "output signals: ok"
