#!/usr/bin/env bash
# Inputs a review found mishandled: a null that counted as given (SGLang's
# chunked_prefill_size null was "0 (use -1 to disable chunking)"), range
# messages that named a range other than the one taken, whole-file JSON
# that ended silently at a NUL byte, a measured file's first line read
# without bound, and a TGI plan that does not fit advised with a vLLM key
# and named no file. Each bad input ends with exit 2, one line naming the
# file (and key, or line) and the bad value, and no output written.
# Usage: test_review_inputs.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "${BASH_SOURCE[0]}")/lib_bad_inputs.sh"

# 1. A null is the key left out, in the file and by --set, for every
# profile's own keys and the scenario's sections.
ok "${run[@]}" base.json --set engine.profile=sglang --set engine.chunked_prefill_size=null
echo "{\"name\": \"n\", \"model\": \"llama-3.1-8b\", \"engine\": {\"profile\": \"sglang\",
  \"chunked_prefill_size\": null}, \"slo\": {\"ttft_p99_s\": null}, \"perf\": {\"step_time_scale\": null},
  \"admission\": null, $W}" >n.json
ok "${run[@]}" n.json
expect "base.json: engine.chunked_prefill_size: 0 (use -1 to disable chunking)" "${run[@]}" base.json \
  --set engine.profile=sglang --set engine.chunked_prefill_size=0
ok "${run[@]}" base.json --set engine.profile=vllm-v0 --set engine.watermark=null --set engine.swap_space=null
ok "${run[@]}" base.json --set engine=null --set engine.max_num_seqs=8
expect "base.json: missing key 'workload'" "${run[@]}" base.json --set workload=null

# 2. Past its range, a count names the range taken: no 0 where 0 is an
# error, and never the +-2^53 of any JSON integer.
expect "base.json: engine.max_num_seqs: 1000000000000 is out of range [1, 1048576]" \
  "${run[@]}" base.json --set engine.max_num_seqs=1e12
expect "base.json: engine.max_num_batched_tokens: 1000000000000 is out of range [1, 1073741824]" \
  "${run[@]}" base.json --set engine.max_num_batched_tokens=1e12
expect "base.json: engine.num_gpu_blocks_override: 1000000000000 is out of range [1, 2147483647]" \
  "${run[@]}" base.json --set engine.num_gpu_blocks_override=1e12
expect "base.json: engine.max_model_len: 1e+30 is out of range [1, 1073741824]" \
  "${run[@]}" base.json --set engine.max_model_len=1e30
expect "base.json: engine.kv_cache_memory_bytes: 1e+30 is out of range [1, 4398046511104]" \
  "${run[@]}" base.json --set engine.kv_cache_memory_bytes=1e30
expect "base.json: engine.offload_store_threshold: 1e+30 is out of range [0, 4294967295]" \
  "${run[@]}" base.json --set engine.offload_store_threshold=1e30
expect "base.json: engine.block_size: 1e+30 is out of range [1, 4096]" \
  "${run[@]}" base.json --set engine.block_size=1e30
expect "base.json: hardware.tensor_parallel_size: 1e+30 is out of range [1, 1024]" \
  "${run[@]}" base.json --set hardware.tensor_parallel_size=1e30
expect "base.json: engine.max_num_seqs: 0 must be >= 1 (leave the key out for the default)" \
  "${run[@]}" base.json --set engine.max_num_seqs=0

# 3. A NUL byte in a whole-file JSON input is an error at its line, not
# the end of the file (what followed was dropped) or "invalid JSON".
{ cat base.json; printf '\0{garbage'; } >nul_after.json
expect "nul_after.json:3: a NUL byte (a binary file?)" "${run[@]}" nul_after.json
printf '{"name": "b",\n "model": "llama\0-3.1-8b"}\n' >nul_in.json
expect "nul_in.json:2: a NUL byte (a binary file?)" "${run[@]}" nul_in.json
{ cat "$src/configs/models/llama-3.1-8b.json"; printf '\0'; } >model.json
echo "{\"name\": \"m\", \"model\": \"./model.json\", $W}" >m.json
expect "model.json:" "${run[@]}" m.json
grep -qF "a NUL byte (a binary file?)" "$tmp/err" || fail "model file: $(cat "$tmp/err")"
{ cat "$src/configs/gpus/h100-sxm.json"; printf '\0'; } >gpu.json
echo "{\"name\": \"g\", \"model\": \"llama-3.1-8b\", \"hardware\": {\"gpu\": \"./gpu.json\"}, $W}" >g.json
expect "gpu.json:" "${run[@]}" g.json
grep -qF "a NUL byte (a binary file?)" "$tmp/err" || fail "GPU file: $(cat "$tmp/err")"
{ echo '{"name": "s", "scenario": "base.json", "grid": {"engine.max_num_seqs": [8, 16]}}'; printf '\0x'; } >sw.json
expect "sw.json:2: a NUL byte (a binary file?)" sweep sw.json --out o --quiet
fid="$src/tests/golden/fidelity"
{ cat "$fid/bench.json"; printf '\0'; } >bench.json
expect "bench.json:6: a NUL byte (a binary file?)" validate --measured bench.json "$fid/scenario.json"

# 4. The measured file's format is told from a bounded start of its first
# line: 300 MB of NUL bytes (sparse) is refused at once, at line 1, in
# little memory; a benchmark JSON of one line past that bound still reads.
truncate -s 300M zeros.bin
rm -rf "$tmp/o"
lim=204800
[ "$mem" = unlimited ] && lim=unlimited
(ulimit -v $lim; timeout 20 "$kvsim" validate --measured zeros.bin "$fid/scenario.json") >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "300 MB of NULs: exit $rc, want 2 ($(head -c 300 "$tmp/err"))"
grep -qxF "kvsim validate: error: zeros.bin:1: a NUL byte (a binary file?)" "$tmp/err" ||
  fail "300 MB of NULs: $(head -c 300 "$tmp/err")"
rm -f zeros.bin
{ printf '{'; head -c 2000000 /dev/zero | tr '\0' ' '; tr -d '\n' <"$fid/bench.json" | tail -c +2; } >long.json
[ "$(wc -l <long.json)" -eq 0 ] || fail "long.json is one line"
ok validate --measured long.json "$fid/scenario.json"
grep -q '(vllm-bench, 3 finished requests)' "$tmp/out" || fail "one long line: $(head -c 300 "$tmp/out")"

# 5. A TGI plan that does not fit: the run names the scenario file, and
# gives no vLLM key as advice (max_model_len is not TGI's); where a
# change applies, the advice names TGI's own key.
expect "base.json: memory plan does not fit: max_input_tokens is 0 (max_total_tokens 1 - 1): no prompt fits" \
  "${run[@]}" base.json --set engine.profile=tgi --set engine.max_total_tokens=1
grep -q "To fit\|max_model_len" "$tmp/err" && fail "TGI advice: $(cat "$tmp/err")"
expect "base.json: memory plan does not fit: \`max_input_tokens\` must be < \`max_total_tokens\`. Given: 4000 and 4000" \
  "${run[@]}" base.json --set engine.profile=tgi --set engine.max_input_tokens=4000 --set engine.max_total_tokens=4000
grep -q "To fit\|max_model_len" "$tmp/err" && fail "TGI advice: $(cat "$tmp/err")"
expect "To fit: max_total_tokens <= " "${run[@]}" base.json --set engine.profile=tgi \
  --set engine.max_total_tokens=200000 --set engine.max_input_tokens=100 --set engine.cuda_memory_fraction=0.2
grep -q "base.json: memory plan does not fit: Not enough memory" "$tmp/err" || fail "TGI memory: $(cat "$tmp/err")"
grep -q "max_model_len\|gpu_memory_utilization" "$tmp/err" && fail "TGI advice names vLLM keys: $(cat "$tmp/err")"
# vLLM keeps its own advice, now with the file.
expect "base.json: memory plan does not fit: No available memory for the cache blocks." \
  "${run[@]}" base.json --set engine.gpu_memory_utilization=0.05
grep -q "To fit: gpu_memory_utilization" "$tmp/err" || fail "vLLM advice: $(cat "$tmp/err")"
echo "ok"
