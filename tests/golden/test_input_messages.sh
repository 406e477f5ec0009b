#!/usr/bin/env bash
# Bad inputs whose message named the wrong place (or no key), and small
# bad inputs that were taken without a word. Each ends with exit 2, one
# line naming the file (or flag), the key and the bad value, and no output
# written: the cases are data (errors/input_messages.cases and
# errors/gpu_files.cases), this script writes their fixtures and checks
# what is taken.
# Usage: test_input_messages.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$(realpath "$1")
src=$(realpath "$2")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib_expect_error.sh"
source "$here/lib_bad_inputs.sh" # cds into its temporary folder
source "$here/lib_error_cases.sh"

# Fixtures of the cases, by section of errors/input_messages.cases.
# 1. A study whose own scenario has a bad seed, one whose candidate sets a
# bad key, one with a scenario file of its own, one without target_rate.
cat >study.json <<JSON
{ "name": "s", "scenario": {"seed": -1, "model": "llama-3.1-8b", $W},
  "slo": {"ttft_p99_s": 2}, "target_rate": 5, "candidates": [{"label": "a", "set": {}}] }
JSON
sed 's/"seed": -1, //; s/"set": {}/"set": {"engine.block_size": "x"}/' study.json >cand.json
echo '{ "scenario": "base.json", "slo": {"ttft_p99_s": 2}, "target_rate": 5,
  "candidates": [{"label": "a", "set": {"seed": -1}}] }' >file.json
echo '{ "scenario": "base.json", "slo": {"ttft_p99_s": 2}, "candidates": [{"label": "a"}] }' >norate.json
# 5. Two shards of a sweep, and shard 1 again (sh1s) with "shards": "2".
sw="$src/tests/golden/data/small-sweep.json"
for i in 0 1; do
  "$kvsim" sweep "$sw" --quiet --shard $i/2 --out sh$i >/dev/null || fail "shard $i/2 did not run"
done
cp -r sh1 sh1s
sed 's/"shards":[[:space:]]*2/"shards": "2"/' sh1/sweep.shard1.json >sh1s/sweep.shard1.json
grep -q '"shards": "2"' sh1s/sweep.shard1.json || fail "sh1s: the shard record did not change"
# 6. Model files with one bad key, GPU files (g-NAME.json, the cases of
# errors/gpu_files.cases) with one bad key each, studies and sweeps with
# one bad key.
m='"model_type": "llama", "num_attention_heads": 8, "num_hidden_layers": 2,
   "intermediate_size": 2048, "vocab_size": 1000'
echo "{$m, \"hidden_size\": 1024, \"num_key_value_heads\": 0.5}" >m.json
echo "{$m, \"hidden_size\": 1024, \"quantization_config\": {\"quant_method\": 3}}" >q.json
echo "{\"text_config\": {$m, \"hidden_size\": 1e12}}" >t.json
g='"name": "g", "generation": "hopper", "memory_total_bytes": 8e10, "hbm_bandwidth_GBps": 3350,
   "bf16_tflops": 989'
while IFS='|' read -r n kv; do
  echo "{$g, $kv}" >"g-$n.json"
done <<'EOF'
tdp|"tdp_w": "x"
tdpw|"tdpw": 700
link|"link_kind": "x"
achieved|"achieved_bf16_tflops": 1
status|"perf": {"status": "x"}
fitted|"perf": {"status": "fitted"}
mfu|"perf": {"mfu": 0.5}
kernels|"perf": {"kernels": "h999"}
host|"perf": {"kernels": "h100-sxm", "host_us": -1}
EOF
sed 's/"target_rate": 5/"target_rate": 5, "grid": 1/' study.json >grid.json
sed 's/"name": "s"/"name": 3/' study.json >name.json
sed 's/"label": "a"/"label": 3/' study.json >label.json
echo '{"scenario": "base.json", "grd": {"seed": [1, 2]}}' >sw-grd.json
echo '{"scenario": "base.json", "mode": 3, "grid": {"seed": [1, 2]}}' >sw-mode.json
# 9. A one-request trace.
printf 'arrival_s,prompt_tokens,output_tokens\n0,10,5\n' >t.csv

# Run before any run here writes o/, so that a refused case writing it is seen.
run_error_cases "$src/tests/golden/errors/input_messages.cases"
run_error_cases "$src/tests/golden/errors/gpu_files.cases"

# What is taken: a null name and description (1), no admission limit (2),
# a swap space of none or of one block (4), the largest SLO target (7), the
# model's own quantization (8), the largest hash block (9).
ok "${run[@]}" base.json --set name=null --set description=null
ok "${run[@]}" base.json --set admission.max_wait_s=0 --set admission.max_queue_length=0
ok "${run[@]}" base.json --set engine.profile=vllm-v0 --set engine.swap_space=0
ok calc --model llama-3.1-8b --engine vllm-v0 --swap-space 0.002
ok "${run[@]}" base.json --set slo.ttft_p99_s=9e9
ok "${run[@]}" base.json --set engine.quantization=null
ok trace stats t.csv --hash-block-tokens 9007199254740991

echo "ok"
