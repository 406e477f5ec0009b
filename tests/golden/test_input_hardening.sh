#!/usr/bin/env bash
# Bad input files to every command that reads one: each case ends (no hang,
# no memory blow-up) with exit 2, one line naming the file (and line, key
# or column) and what is wrong, and no output written. Each case is a
# defect that once slipped by. The cases are data
# (errors/input_hardening.cases); this script writes their fixtures and
# checks that no input was replaced.
# Usage: test_input_hardening.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$(realpath "$1")
src=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$src/tests/golden/lib_expect_error.sh"
source "$src/tests/golden/lib_error_cases.sh"
H='arrival_s,prompt_tokens,output_tokens'

cd "$tmp" || exit 1
cat >base.json <<'EOF'
{"name": "b", "model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm"},
 "workload": {"synthetic": {"requests": 5, "arrival": {"process": "poisson", "rate": 5},
              "prompt_tokens": 100, "output_tokens": 10}}}
EOF
run=(run --no-band --no-verify-advice --quiet)

# Fixtures of the cases, by section of errors/input_hardening.cases.
# 1. Sweeps of /dev/zero and of a folder, a pipe, a scenario whose trace
# and one whose GPU file are pipes.
echo '{"name": "s", "scenario": "/dev/zero", "grid": {"engine.gpu_memory_utilization": [0.8, 0.9]}}' >sz.json
echo '{"name": "s", "scenario": ".", "grid": {"engine.gpu_memory_utilization": [0.8, 0.9]}}' >sd.json
mkfifo fifo
printf '{"model": "llama-3.2-1b", "workload": {"trace": "fifo", "format": "kvsim"}}\n' >sf.json
mkdir -p sub && mkfifo sub/g.json
printf '{"model": "llama-3.2-1b", "hardware": {"gpu": "sub/g.json"}, "workload": {"synthetic": {"requests": 1, "arrival": {"process": "poisson", "rate": 1}, "prompt_tokens": 10, "output_tokens": 2}}}\n' >sg.json
# 2. Inputs to be named as --out: a trace and a link to it, a spec and
# the lengths file of another (each with a copy to compare after).
cp "$src/workloads/tiny_mooncake.jsonl" m.jsonl
ln -s m.jsonl link.csv
w='"arrival": {"process": "poisson", "rate": 1}'
echo "{\"synthetic\": {\"requests\": 3, $w, \"prompt_tokens\": 10, \"output_tokens\": 5}}" >g.json
cp g.json g0.json
printf '%s\n0,10,5\n1,20,6\n' "$H" >lens.csv
cp lens.csv lens0.csv
echo "{\"synthetic\": {\"requests\": 3, $w, \"lengths_from\": {\"file\": \"lens.csv\"}}}" >lf.json
# 3. Text or a second object after a JSON line's object; a benchmark line
# with neither per-request list.
L='"input_toks": 8, "output_toks": 1'
printf '{%s, "arrival_time_ns": 0} garbage here\n' "$L" >junk.jsonl
printf '{%s, "arrival_time_ns": 0} \r\n{%s, "arrival_time_ns": 10}{%s, "arrival_time_ns": 20}\n' \
  "$L" "$L" "$L" >two.jsonl
printf '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0]},\n' >mc.jsonl
M='"input_toks": 5, "output_toks": 2, "queued_ts": 1, "scheduled_ts": 1, "first_token_ts": 2'
printf '{%s, "last_token_ts": 3}\n{%s, "last_token_ts": 4},\n' "$M" "$M" >meas.jsonl
printf '{"ttfts": [1], "e2els": [2]}\n{"ttfts": [5]}\n' >bench.json
# 4. 1e400 in a measured file, a trace and a benchmark.
printf '{%s, "last_token_ts": 3}\n{%s, "last_token_ts": 4, "arrival_time": 1e400}\n' "$M" "$M" >inf.jsonl
printf '{%s, "arrival_time_ns": 1e400}\n' "$L" >inf2.jsonl
echo '{"ttfts": [1, 2], "e2els": [2, 3], "output_lens": [3, 1e400]}' >inf.json
# 5. A column and a key given twice.
printf 'arrival_s,arrival_s,prompt_tokens,output_tokens\n0,7,100,10\n' >dup.csv
printf '{"timestamp": 0, "input_length": 100, "input_length": 200, "output_length": 5, "hash_ids": [0]}\n' >dup.jsonl
# 6. Traces without a request.
printf '%s\n' "$H" >head.csv
echo '{"name": "t", "model": "llama-3.1-8b", "workload": {"trace": "head.csv"}}' >head.json
printf '%s\n0,x,5\n' "$H" >allbad.csv
# 7. A folder holding a scenario named summary.json, one named scen.json,
# and their trace requests.csv.
mkdir -p in4
printf 'arrival_s,prompt_tokens,output_tokens\n0,100,10\n0.5,200,20\n' >in4/requests.csv
printf '{"name": "t", "model": "llama-3.2-1b", "workload": {"trace": "requests.csv"}}\n' >in4/summary.json
cp in4/summary.json in4/scen.json

# The runner also checks that each refused command wrote nothing.
run_error_cases "$src/tests/golden/errors/input_hardening.cases"

# 2 and 7. No input was replaced, and no temporary left; another path converts.
cmp -s m.jsonl "$src/workloads/tiny_mooncake.jsonl" || fail "trace convert replaced its input"
cmp -s g.json g0.json && cmp -s lens.csv lens0.csv || fail "trace gen replaced its input"
ls | grep -q '\.tmp\.' && fail "a temporary file was left behind"
"$kvsim" trace convert m.jsonl --out m2.csv 2>/dev/null || fail "another path converts"
[ "$(head -1 in4/requests.csv)" = "arrival_s,prompt_tokens,output_tokens" ] || fail "the trace was replaced"
cmp -s in4/summary.json in4/scen.json || fail "the scenario in4/summary.json was replaced"

echo "ok"
