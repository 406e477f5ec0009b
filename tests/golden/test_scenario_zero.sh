#!/usr/bin/env bash
# Values that once meant something else without a word: an explicit 0 for
# an engine count (the default instead), a CPU tier too small for one
# block (no tier), a pool override the SGLang profile ignored, JSON nested
# too deep ("invalid JSON"), and trace lines without bound or made of NUL
# bytes. Each case ends with exit 2, one line naming the file and the key
# path (or the line) and the bad value, and no output written: the cases
# are data (errors/scenario_zero.cases), this script writes their
# fixtures and checks what is taken.
# Usage: test_scenario_zero.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$(realpath "$1")
src=$(realpath "$2")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib_expect_error.sh"
source "$here/lib_bad_inputs.sh" # cds into its temporary folder
source "$here/lib_error_cases.sh"

# Fixtures of the cases, by section of errors/scenario_zero.cases.
# 1. z-KEY.json holds "KEY": 0.
for k in max_num_seqs max_num_batched_tokens block_size num_gpu_blocks_override \
  kv_cache_memory_bytes max_model_len; do
  echo "{\"name\": \"z\", \"model\": \"llama-3.1-8b\", \"engine\": {\"$k\": 0}, $W}" >"z-$k.json"
done
# 4. deep N: N '[' then N ']', JSON nested N levels.
deep() { printf "%${1}s" | tr ' ' '['; printf "%${1}s" | tr ' ' ']'; }
{ echo '{"name": "d", "model": "llama-3.1-8b",'; echo "\"workload\": $(deep 1000)}"; } >deep.json
echo '{"name": "s", "scenario": "base.json", "grid": {"engine.max_num_seqs": [64]}, "x": '"$(deep 1000)}" >sd.json
L='"input_toks": 8, "output_toks": 1, "arrival_time_ns": 0'
{ echo "{$L}"; echo "{$L, \"x\": $(deep 1000)}"; } >deep.jsonl
echo '{"name": "d", "model": "llama-3.1-8b", "x": '"$(deep 999)}" >ok.json
# 5. NUL bytes and long lines; the large ones are made by their case (@make).
echo '{"name": "t", "model": "llama-3.1-8b", "workload": {"trace": "zeros.jsonl"}}' >tz.json
two_lines_then_nuls() { { echo "{$L}"; echo "{$L}"; head -c 64M /dev/zero; } >tail0.jsonl; }
{ printf '\n\n'; head -c 1000 /dev/zero; } >blank0.csv
H='arrival_s,prompt_tokens,output_tokens'
row_then_nuls() { { printf '%s\n0,10,5\n1,1' "$H"; head -c 64M /dev/zero; } >row0.csv; }
line_of_17mib() {
  { echo "{$L}"; printf '{"input_toks": 8, "x": "'; head -c 17M /dev/zero | tr '\0' a; echo '"}'; } >long.jsonl
}

# Run before any run here writes o/, so that a refused case writing it is seen.
run_error_cases "$src/tests/golden/errors/scenario_zero.cases"

# 1. A sweep reports a bad point in its error column (and exits 1), not as
# a run of the default.
echo '{"name": "s", "scenario": "base.json", "grid": {"engine.max_num_seqs": [0, 64]}}' >sw.json
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

# 2. A CPU tier of one block or none is taken.
ok "${run[@]}" base.json --set engine.kv_offloading_size=0.002
ok "${run[@]}" base.json --set engine.kv_offloading_size=0

# 3. The SGLang option there is caps the pool.
ok "${run[@]}" base.json --set engine.profile=sglang --set engine.max_total_tokens=41408
grep -q '"kv_cache_tokens":.41408,' o/summary.json || fail "sglang: max_total_tokens does not cap the pool"

# 5. A long line of text under the bound (4 MiB) reads.
{ echo "{$L}"; printf '{%s, "prompt": "' "$L"; head -c 4M /dev/zero | tr '\0' a; echo '"}'; } >text.jsonl
ok trace stats text.jsonl
rm -f text.jsonl

echo "ok"
