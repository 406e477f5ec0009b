#!/usr/bin/env bash
# Bad input files to every command that reads one: each case ends (no hang,
# no memory blow-up) with exit 2, one line naming the file (and line, key
# or column) and what is wrong, and no output written. Each case is a
# defect that once slipped by.
# Usage: test_input_hardening.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$(realpath "$1")
src=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
H='arrival_s,prompt_tokens,output_tokens'

# A sanitizer build reserves terabytes of address space: no memory cap there.
mem=1048576
grep -q __asan_init "$kvsim" && mem=unlimited

# expect "fixed string" args...: exit 2, one stderr line containing it, within
# 20 s and 1 GB of memory, nothing on stdout.
expect() {
  local want=$1
  shift
  (ulimit -v $mem; timeout 20 "$kvsim" "$@") >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "'$*': exit $rc, want 2 ($(head -c 300 "$tmp/err"))"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*': want one line, got: $(head -c 600 "$tmp/err" | cat -A)"
  grep -qF -- "$want" "$tmp/err" || fail "'$*': '$(cat "$tmp/err")' lacks '$want'"
  [ ! -s "$tmp/out" ] || fail "'$*': wrote to stdout: $(head -c 300 "$tmp/out")"
}

cd "$tmp" || exit 1
cat >base.json <<'EOF'
{"name": "b", "model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm"},
 "workload": {"synthetic": {"requests": 5, "arrival": {"process": "poisson", "rate": 5},
              "prompt_tokens": 100, "output_tokens": 10}}}
EOF
run=(run --no-band --no-verify-advice --quiet)

# 1. A device, pipe or directory as an input: /dev/zero was once read until
# memory ran out, or a reader looped over its NUL bytes for ever.
nr="/dev/zero: not a regular file (a device, pipe or socket)"
expect "$nr" calc --model /dev/zero
expect "$nr" "${run[@]}" /dev/zero --out r1
expect "$nr" "${run[@]}" base.json --set model=/dev/zero --out r2
expect "$nr" trace stats /dev/zero
expect "$nr" trace convert /dev/zero --out z.csv
expect "$nr" calibrate --gpu h100-sxm --silicon /dev/zero
expect "$nr" validate --measured /dev/zero base.json
expect "$nr" validate --startup /dev/zero
echo '{"name": "s", "scenario": "/dev/zero", "grid": {"engine.gpu_memory_utilization": [0.8, 0.9]}}' >sz.json
expect "$nr" sweep sz.json --out s1 --quiet
echo '{"name": "s", "scenario": ".", "grid": {"engine.gpu_memory_utilization": [0.8, 0.9]}}' >sd.json
expect ".: is a directory" sweep sd.json --out s2 --quiet
expect ".: is a directory" "${run[@]}" . --out r3
mkfifo fifo
expect "fifo: not a regular file (a device, pipe or socket)" trace stats fifo
expect "fifo: not a regular file (a device, pipe or socket)" "${run[@]}" fifo --out r4
# A scenario's trace named with its format (read at parse time) and a
# scenario-relative GPU file: both used to open the pipe and block.
printf '{"model": "llama-3.2-1b", "workload": {"trace": "fifo", "format": "kvsim"}}\n' >sf.json
expect "workload.trace: ./fifo: not a regular file (a device, pipe or socket)" "${run[@]}" sf.json --out r6
mkdir -p sub && mkfifo sub/g.json
printf '{"model": "llama-3.2-1b", "hardware": {"gpu": "sub/g.json"}, "workload": {"synthetic": {"requests": 1, "arrival": {"process": "poisson", "rate": 1}, "prompt_tokens": 10, "output_tokens": 2}}}\n' >sg.json
expect "hardware.gpu: unknown GPU './sub/g.json' (not a catalog name or a readable file)" "${run[@]}" sg.json --out r7
# A whole-file read is capped (a sparse file: no disk used).
truncate -s 300M huge.json
expect "huge.json: larger than 256 MiB, too large to read whole" "${run[@]}" huge.json --out r5
rm huge.json
for d in r1 r2 r3 r4 r5 s1 s2 z.csv; do
  [ ! -e "$d" ] || fail "$d was written"
done

# 2. --out naming the input: the rename at the end once replaced the trace
# or spec with the CSV. Links and other spellings are the same file too.
cp "$src/workloads/tiny_mooncake.jsonl" m.jsonl
expect "--out: ./m.jsonl is the same file as the input m.jsonl" trace convert m.jsonl --out ./m.jsonl
ln -s m.jsonl link.csv
expect "--out: link.csv is the same file as the input m.jsonl" trace convert m.jsonl --out link.csv
cmp -s m.jsonl "$src/workloads/tiny_mooncake.jsonl" || fail "trace convert replaced its input"
w='"arrival": {"process": "poisson", "rate": 1}'
echo "{\"synthetic\": {\"requests\": 3, $w, \"prompt_tokens\": 10, \"output_tokens\": 5}}" >g.json
cp g.json g0.json
expect "--out: g.json is the same file as the input g.json" trace gen g.json --out g.json
printf '%s\n0,10,5\n1,20,6\n' "$H" >lens.csv
cp lens.csv lens0.csv
echo "{\"synthetic\": {\"requests\": 3, $w, \"lengths_from\": {\"file\": \"lens.csv\"}}}" >lf.json
expect "--out: lens.csv is the same file as the input ./lens.csv" trace gen lf.json --out lens.csv
cmp -s g.json g0.json && cmp -s lens.csv lens0.csv || fail "trace gen replaced its input"
ls | grep -q '\.tmp\.' && fail "a temporary file was left behind"
"$kvsim" trace convert m.jsonl --out m2.csv 2>/dev/null || fail "another path converts"

# 3. JSON lines end with their object: text after it was ignored and a
# second object on the line dropped unseen.
L='"input_toks": 8, "output_toks": 1'
printf '{%s, "arrival_time_ns": 0} garbage here\n' "$L" >junk.jsonl
expect "junk.jsonl:1: trailing characters after the JSON object" trace stats junk.jsonl
printf '{%s, "arrival_time_ns": 0} \r\n{%s, "arrival_time_ns": 10}{%s, "arrival_time_ns": 20}\n' \
  "$L" "$L" "$L" >two.jsonl
expect "two.jsonl:2: trailing characters after the JSON object" trace stats two.jsonl
printf '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0]},\n' >mc.jsonl
expect "mc.jsonl:1: trailing characters after the JSON object" trace stats mc.jsonl
M='"input_toks": 5, "output_toks": 2, "queued_ts": 1, "scheduled_ts": 1, "first_token_ts": 2'
printf '{%s, "last_token_ts": 3}\n{%s, "last_token_ts": 4},\n' "$M" "$M" >meas.jsonl
expect "meas.jsonl:2: trailing characters after the JSON object" validate --measured meas.jsonl base.json
printf '{"ttfts": [1], "e2els": [2]}\n{"ttfts": [5]}\n' >bench.json
expect "bench.json:2: neither per-request lists" validate --measured bench.json base.json

# 4. Numbers beyond a double (cJSON reads 1e400 as inf): a measured file
# with one was accepted, a trace's message quoted 'null'.
printf '{%s, "last_token_ts": 3}\n{%s, "last_token_ts": 4, "arrival_time": 1e400}\n' "$M" "$M" >inf.jsonl
expect "inf.jsonl:2: column 'arrival_time': not a finite number" validate --measured inf.jsonl base.json
printf '{%s, "arrival_time_ns": 1e400}\n' "$L" >inf2.jsonl
expect "inf2.jsonl:1: column 'arrival_time_ns': not a finite number" trace stats inf2.jsonl
echo '{"ttfts": [1, 2], "e2els": [2, 3], "output_lens": [3, 1e400]}' >inf.json
expect 'inf.json: "output_lens" entry 1: not a finite number' validate --measured inf.json base.json

# 5. A column or key given twice: the first was used, the second ignored.
printf 'arrival_s,arrival_s,prompt_tokens,output_tokens\n0,7,100,10\n' >dup.csv
expect "dup.csv:1: duplicate column 'arrival_s'" trace stats dup.csv
printf '{"timestamp": 0, "input_length": 100, "input_length": 200, "output_length": 5, "hash_ids": [0]}\n' >dup.jsonl
expect "dup.jsonl:1: duplicate key 'input_length'" trace stats dup.jsonl

# 6. A trace that yields no request: run once exited 0 reporting zeros (and
# wrote them to every output). Now an error, and no output folder.
printf '%s\n' "$H" >head.csv
echo '{"name": "t", "model": "llama-3.1-8b", "workload": {"trace": "head.csv"}}' >head.json
expect "head.csv: no requests" "${run[@]}" head.json --out r6
[ ! -e r6 ] || fail "an output folder was left for a run with no requests"
expect "head.csv: no requests" run head.json --quiet --out r7
[ ! -e r7 ] || fail "an output folder was left (with the band and the advice check)"
expect "head.csv: no requests" trace stats head.csv
printf '%s\n0,x,5\n' "$H" >allbad.csv
expect "allbad.csv: no requests (1 bad rows skipped)" trace stats allbad.csv --skip-bad-rows

# 7. run --out naming the folder that holds the scenario or its trace, as
# an output's name: the output replaced the input without a word.
mkdir -p in4
printf 'arrival_s,prompt_tokens,output_tokens\n0,100,10\n0.5,200,20\n' >in4/requests.csv
printf '{"name": "t", "model": "llama-3.2-1b", "workload": {"trace": "requests.csv"}}\n' >in4/summary.json
cp in4/summary.json in4/scen.json
expect "--out: in4/summary.json is an input of the run (its scenario)" "${run[@]}" in4/summary.json --out in4
expect "--out: in4/requests.csv is an input of the run (its workload)" "${run[@]}" in4/scen.json --out in4
[ "$(head -1 in4/requests.csv)" = "arrival_s,prompt_tokens,output_tokens" ] || fail "the trace was replaced"
# An SLO of inf (or 1e400, which overflows to it) is one every run meets.
expect "--slo: bad value 'inf'" plan base.json --slo ttft_p99=inf
expect "--slo: bad value '1e400s'" plan base.json --slo ttft_p99=1e400s

echo "ok"
