#!/usr/bin/env bash
# Inputs a review found mishandled: a null that counted as given (SGLang's
# chunked_prefill_size null was "0 (use -1 to disable chunking)"), range
# messages that named a range other than the one taken, whole-file JSON
# that ended silently at a NUL byte, a measured file's first line read
# without bound, and a TGI plan that does not fit advised with a vLLM key
# and named no file. Each bad input ends with exit 2, one line naming the
# file (and key, or line) and the bad value, and no output written: the
# cases are data (errors/review_inputs.cases), this script writes their
# fixtures and checks what is taken.
# Usage: test_review_inputs.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$(realpath "$1")
src=$(realpath "$2")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib_expect_error.sh"
source "$here/lib_bad_inputs.sh" # cds into its temporary folder
source "$here/lib_error_cases.sh"
fid="$src/tests/golden/fidelity"

# Fixtures of section 3: a NUL byte in each kind of whole-file JSON input.
{ cat base.json; printf '\0{garbage'; } >nul_after.json
printf '{"name": "b",\n "model": "llama\0-3.1-8b"}\n' >nul_in.json
{ cat "$src/configs/models/llama-3.1-8b.json"; printf '\0'; } >model.json
echo "{\"name\": \"m\", \"model\": \"./model.json\", $W}" >m.json
{ cat "$src/configs/gpus/h100-sxm.json"; printf '\0'; } >gpu.json
echo "{\"name\": \"g\", \"model\": \"llama-3.1-8b\", \"hardware\": {\"gpu\": \"./gpu.json\"}, $W}" >g.json
{ echo '{"name": "s", "scenario": "base.json", "grid": {"engine.max_num_seqs": [8, 16]}}'; printf '\0x'; } >sw.json
{ cat "$fid/bench.json"; printf '\0'; } >bench.json

run_error_cases "$src/tests/golden/errors/review_inputs.cases"

# 1. A null is the key left out, in the file and by --set, for every
# profile's own keys and the scenario's sections.
ok "${run[@]}" base.json --set engine.profile=sglang --set engine.chunked_prefill_size=null
echo "{\"name\": \"n\", \"model\": \"llama-3.1-8b\", \"engine\": {\"profile\": \"sglang\",
  \"chunked_prefill_size\": null}, \"slo\": {\"ttft_p99_s\": null}, \"perf\": {\"step_time_scale\": null},
  \"admission\": null, $W}" >n.json
ok "${run[@]}" n.json
ok "${run[@]}" base.json --set engine.profile=vllm-v0 --set engine.watermark=null --set engine.swap_space=null
ok "${run[@]}" base.json --set engine=null --set engine.max_num_seqs=8

# 4. A benchmark JSON of one line past the bound on the first line still reads.
{ printf '{'; head -c 2000000 /dev/zero | tr '\0' ' '; tr -d '\n' <"$fid/bench.json" | tail -c +2; } >long.json
[ "$(wc -l <long.json)" -eq 0 ] || fail "long.json is one line"
ok validate --measured long.json "$fid/scenario.json"
grep -q '(vllm-bench, 3 finished requests)' "$tmp/out" || fail "one long line: $(head -c 300 "$tmp/out")"
echo "ok"
