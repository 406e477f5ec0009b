#!/usr/bin/env bash
# Values that once meant something else without a word: an explicit 0 for
# an engine count (the default instead), a CPU tier too small for one
# block (no tier), a pool override the SGLang profile ignored, JSON nested
# too deep ("invalid JSON"), and trace lines without bound or made of NUL
# bytes. Each case ends with exit 2, one line naming the file and the key
# path (or the line) and the bad value, and no output written.
# Usage: test_scenario_zero.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$(realpath "$1")
src=$(realpath "$2")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib_bad_inputs.sh" # cds into its temporary folder
source "$here/lib_expect_error.sh"
source "$here/lib_error_cases.sh"

# 1 and 3 (below): the error cases are data (errors/scenario_zero.cases), run
# before any run here writes o/, so that a refused case writing it is seen.
# 1. An explicit 0 for an engine count meant its default (256 sequences,
# the profiled pool): in the file, by --set, and through a sweep's grid.
for k in max_num_seqs max_num_batched_tokens block_size num_gpu_blocks_override \
  kv_cache_memory_bytes max_model_len; do
  echo "{\"name\": \"z\", \"model\": \"llama-3.1-8b\", \"engine\": {\"$k\": 0}, $W}" >"z-$k.json"
done
run_error_cases "$src/tests/golden/errors/scenario_zero.cases"
echo '{"name": "s", "scenario": "base.json", "grid": {"engine.max_num_seqs": [0, 64]}}' >sw.json
# A sweep reports a bad point in its error column (and exits 1), not as a
# run of the default.
rm -rf o
"$kvsim" sweep sw.json --out o --quiet >/dev/null 2>&1
[ $? -eq 1 ] || fail "sweep with a 0 point: want exit 1"
grep -q '^run0000,0,,.*base.json: engine.max_num_seqs: 0 must be >= 1' o/sweep.csv ||
  fail "sweep: the 0 point's error column: $(grep run0000 o/sweep.csv)"
# Left out, or null (how --set takes a key back), keeps the default.
ok "${run[@]}" base.json --set engine.num_gpu_blocks_override=null --set engine.max_num_seqs=null
# The replay scenario's documented way back to kvsim's own plan (2,467
# blocks, where 0 once meant it and now is refused).
syn='{"synthetic": {"requests": 3, "arrival": {"process": "poisson", "rate": 1}, "prompt_tokens": 10, "output_tokens": 2}}'
ok "${run[@]}" "$src/configs/scenarios/llmservingsim-rtx4090-llama-3.1-8b.json" \
  --set engine.num_gpu_blocks_override=null --set "workload=$syn"
grep -q '"num_gpu_blocks":.2467,' o/summary.json || fail "null: not the plan's pool"

# 2. A CPU tier too small for one KV block turned the offloading connector
# on with no block to store into.
for g in 1e-310 0.001; do
  expect "base.json: engine.kv_offloading_size: $g GiB is smaller than the one KV block it must hold (16 tokens, 2097152 bytes over the TP 1 x PP 1 ranks" \
    "${run[@]}" base.json --set "engine.kv_offloading_size=$g"
done
ok "${run[@]}" base.json --set engine.kv_offloading_size=0.002
ok "${run[@]}" base.json --set engine.kv_offloading_size=0

# 3. vLLM's pool overrides under the sglang profile ran the profiled pool
# instead; the error names the SGLang option there is.
# The two refused are cases of errors/scenario_zero.cases; the option there is caps the pool.
ok "${run[@]}" base.json --set engine.profile=sglang --set engine.max_total_tokens=41408
grep -q '"kv_cache_tokens":.41408,' o/summary.json || fail "sglang: max_total_tokens does not cap the pool"

# 4. JSON nested past cJSON's limit (1000 levels) said only "invalid JSON".
deep() { printf "%${1}s" | tr ' ' '['; printf "%${1}s" | tr ' ' ']'; }
{ echo '{"name": "d", "model": "llama-3.1-8b",'; echo "\"workload\": $(deep 1000)}"; } >deep.json
expect "deep.json:2: invalid JSON: nested deeper than 1000 levels" "${run[@]}" deep.json
expect "--model: deep.json:2: invalid JSON: nested deeper than 1000 levels" calc --model deep.json
expect "--set 'workload=...': the value is nested deeper than 1000 levels" "${run[@]}" base.json \
  --set "workload=$(deep 1001)"
echo '{"name": "s", "scenario": "base.json", "grid": {"engine.max_num_seqs": [64]}, "x": '"$(deep 1000)}" >sd.json
expect "sd.json:1: invalid JSON: nested deeper than 1000 levels" sweep sd.json --out o --quiet
L='"input_toks": 8, "output_toks": 1, "arrival_time_ns": 0'
{ echo "{$L}"; echo "{$L, \"x\": $(deep 1000)}"; } >deep.jsonl
expect "deep.jsonl:2: invalid JSON: nested deeper than 1000 levels" trace stats deep.jsonl
# 999 levels inside the object are 1000: still JSON (here a key the
# scenario does not know).
echo '{"name": "d", "model": "llama-3.1-8b", "x": '"$(deep 999)}" >ok.json
expect "unknown key" "${run[@]}" ok.json

# 5. A trace line was as long as the file, and NUL bytes were blank lines:
# a file of them was read to its end before "empty file" (a CSV row of
# them to the row limit). Now a line is bounded (16 MiB) and the first NUL
# is the error, on its line, whatever skip_bad_rows says.
truncate -s 300M zeros.jsonl
expect "zeros.jsonl:1: a NUL byte (a binary file?)" trace stats zeros.jsonl
echo '{"name": "t", "model": "llama-3.1-8b", "workload": {"trace": "zeros.jsonl"}}' >tz.json
expect "zeros.jsonl:1: a NUL byte (a binary file?)" "${run[@]}" tz.json
{ echo "{$L}"; echo "{$L}"; head -c 64M /dev/zero; } >tail0.jsonl
expect "tail0.jsonl:3: a NUL byte (a binary file?)" trace stats tail0.jsonl
{ printf '\n\n'; head -c 1000 /dev/zero; } >blank0.csv
expect "blank0.csv:3: a NUL byte (a binary file?)" trace stats blank0.csv
H='arrival_s,prompt_tokens,output_tokens'
{ printf '%s\n0,10,5\n1,1' "$H"; head -c 64M /dev/zero; } >row0.csv
expect "row0.csv:3: a NUL byte (a binary file?)" trace stats row0.csv --skip-bad-rows
{ echo "{$L}"; printf '{"input_toks": 8, "x": "'; head -c 17M /dev/zero | tr '\0' a; echo '"}'; } >long.jsonl
expect "long.jsonl:2: line longer than 16 MiB" trace stats long.jsonl
{ echo "{$L}"; printf '{%s, "prompt": "' "$L"; head -c 4M /dev/zero | tr '\0' a; echo '"}'; } >text.jsonl
ok trace stats text.jsonl
rm -f zeros.jsonl tail0.jsonl row0.csv long.jsonl text.jsonl

echo "ok"
