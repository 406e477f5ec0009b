#!/usr/bin/env bash
# A 5 x 3 x 2 sweep writes the same sweep.csv with --jobs 1, --jobs 2 and
# as 3 shards merged (from three folders, or from one); --merge refuses
# shards of another sweep, a missing shard and a duplicate, each with one
# line and exit 2.
set -euo pipefail
kvsim=$(realpath "$1")
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grid() {  # NAME MAX_NUM_SEQS_LIST
  cat >"$tmp/$1.json" <<JSON
{ "name": "$1", "scenario": "$src/tests/golden/data/small-synthetic.json",
  "set": { "workload.synthetic.requests": 60 },
  "grid": { "engine.max_num_seqs": [$2], "engine.gpu_memory_utilization": [0.9, 0.5, 0.02],
            "engine.kv_cache_dtype": ["auto", "fp8"] } }
JSON
}
grid g "2, 4, 8, 16, 32"
grid other "2, 4, 8, 16, 64"
"$kvsim" sweep "$tmp/g.json" --jobs 1 --out "$tmp/j1" >/dev/null
"$kvsim" sweep "$tmp/g.json" --jobs 2 --out "$tmp/j2" >/dev/null
[ "$(($(wc -l <"$tmp/j1/sweep.csv") - 1))" = 30 ] || { echo "want 30 rows"; exit 1; }
cmp "$tmp/j1/sweep.csv" "$tmp/j2/sweep.csv" || { echo "--jobs 2 differs from --jobs 1"; exit 1; }
for i in 0 1 2; do
  "$kvsim" sweep "$tmp/g.json" --shard $i/3 --jobs 2 --out "$tmp/shard-$i" >/dev/null
  "$kvsim" sweep "$tmp/g.json" --shard $i/3 --out "$tmp/together" >/dev/null
done
[ -e "$tmp/shard-1/sweep.shard1.json" ] || { echo "a shard has no record"; exit 1; }
[ ! -e "$tmp/j1/sweep.shard0.json" ] || { echo "an unsharded sweep wrote a shard record"; exit 1; }
"$kvsim" sweep --merge "$tmp/shard-2" "$tmp/shard-0" "$tmp/shard-1" --out "$tmp/m" >"$tmp/out"
grep -q "$tmp/m/sweep.csv" "$tmp/out" || { echo "merge does not say where:"; cat "$tmp/out"; exit 1; }
cmp "$tmp/j1/sweep.csv" "$tmp/m/sweep.csv" || { echo "3 shards merged differ from one machine"; exit 1; }
"$kvsim" sweep --merge "$tmp/together" --out "$tmp/m1" >/dev/null
cmp "$tmp/j1/sweep.csv" "$tmp/m1/sweep.csv" || { echo "shards in one folder merge differently"; exit 1; }
(cd "$tmp" && "$kvsim" sweep --merge together >/dev/null)  # default: results/<sweep name>
cmp "$tmp/j1/sweep.csv" "$tmp/results/g/sweep.csv" || { echo "merge's default folder"; exit 1; }

refused() {  # WORDS DIR...
  local words=$1
  shift
  rc=0; "$kvsim" sweep --merge "$@" --out "$tmp/bad" >/dev/null 2>"$tmp/err" || rc=$?
  [ $rc = 2 ] || { echo "merge $*: exit $rc, want 2"; exit 1; }
  [ "$(wc -l <"$tmp/err")" = 1 ] || { echo "error is not one line:"; cat "$tmp/err"; exit 1; }
  grep -q "$words" "$tmp/err" || { echo "error does not say '$words':"; cat "$tmp/err"; exit 1; }
}
"$kvsim" sweep "$tmp/other.json" --shard 1/3 --out "$tmp/other-1" >/dev/null
refused 'another sweep' "$tmp/shard-0" "$tmp/other-1" "$tmp/shard-2"
refused 'shard 2/3 of sweep .g. is missing' "$tmp/shard-0" "$tmp/shard-1"
refused 'shard 1/3 given twice' "$tmp/shard-0" "$tmp/shard-1" "$tmp/shard-2" "$tmp/together"
refused 'no shard in this folder' "$tmp/j1"
refused 'cannot read the folder' "$tmp/nowhere"
[ ! -e "$tmp/bad" ] || { echo "a refused merge wrote a folder"; exit 1; }
# A record's sweep name is the merged table's default folder, results/<name>:
# refused as a sweep file's name is, never climbing out (it wrote
# ../escape/sweep.csv, or ./sweep.csv for '..').
for name in ../../escape .. "a/b" ""; do
  rm -rf "$tmp/named" && cp -r "$tmp/together" "$tmp/named" && mkdir -p "$tmp/w/x"
  sed -Ei "s|(\"sweep\":[[:space:]]*)\"g\"|\\1\"$name\"|" "$tmp/named"/sweep.shard*.json
  grep -Fq "\"$name\"," "$tmp/named/sweep.shard0.json" || { echo "record not edited"; exit 1; }
  rc=0; (cd "$tmp/w/x" && "$kvsim" sweep --merge ../../named >/dev/null 2>"$tmp/err") || rc=$?
  [ $rc = 2 ] || { echo "merge of records named '$name': exit $rc, want 2"; exit 1; }
  grep -Eq "sweep.shard[0-9].json: (sweep: name|not a shard record)" "$tmp/err" || { echo "'$name':"; cat "$tmp/err"; exit 1; }
  [ -z "$(find "$tmp" -newer "$tmp/named/sweep.shard0.json" -name sweep.csv)" ] ||
    { echo "merge of '$name' wrote $(find "$tmp" -newer "$tmp/named/sweep.shard0.json" -name sweep.csv)"; exit 1; }
done
rc=0; "$kvsim" sweep --merge 2>"$tmp/err" || rc=$?
[ $rc = 2 ] && grep -q 'expected the shards' "$tmp/err" || { echo "--merge without folders"; exit 1; }

echo "5x3x2 sweep: --jobs 1, --jobs 2 and 3 merged shards give one sweep.csv"
