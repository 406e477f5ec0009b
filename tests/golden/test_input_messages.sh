#!/usr/bin/env bash
# Bad inputs whose message named the wrong place (or no key), and small
# bad inputs that were taken without a word. Each ends with exit 2, one
# line naming the file (or flag), the key and the bad value, and no output
# written.
# Usage: test_input_messages.sh KVSIM_BINARY SOURCE_DIR
set -uo pipefail
kvsim=$(realpath "$1")
src=$(realpath "$2")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib_bad_inputs.sh" # cds into its temporary folder
source "$here/lib_expect_error.sh"
source "$here/lib_error_cases.sh"

# 1. Top-level keys read "FILE: key: ...", as the cross-section hint
# ("base.json: tensor_parallel_size: unknown key ...") already did.
expect "error: base.json: seed: -1 must be >= 0" "${run[@]}" base.json --set seed=-1
expect "error: base.json: seed: expected an integer" "${run[@]}" base.json --set seed=0.5
expect "error: base.json: seed: 1e+300 is out of range [0, " "${run[@]}" base.json --set seed=1e300
expect "error: base.json: name: expected a string" "${run[@]}" base.json --set name=3
expect "error: base.json: model: expected a string" "${run[@]}" base.json --set model=3
expect "error: base.json: sed: unknown key (did you mean 'seed'?)" "${run[@]}" base.json --set sed=1
expect "error: base.json: hardwar: unknown key (did you mean 'hardware'?)" "${run[@]}" base.json \
  --set hardwar.gpu=h100-sxm
# An empty name silently became the file's, and a description was never
# looked at.
expect "error: base.json: name: empty (leave the key out to name the scenario after its file)" \
  "${run[@]}" base.json --set 'name=""'
expect "error: base.json: description: expected a string" "${run[@]}" base.json --set description=3
ok "${run[@]}" base.json --set name=null --set description=null
# A study's own scenario is named as its section, as its engine keys are,
# and the study file once: the candidate's error read "study.json:
# candidate 'a': study.json: scenario: seed: ...".
cat >study.json <<JSON
{ "name": "s", "scenario": {"seed": -1, "model": "llama-3.1-8b", $W},
  "slo": {"ttft_p99_s": 2}, "target_rate": 5, "candidates": [{"label": "a", "set": {}}] }
JSON
expect "compare: error: study.json: candidate 'a': scenario: seed: -1 must be >= 0" compare study.json --out o
sed 's/"seed": -1, //; s/"set": {}/"set": {"engine.block_size": "x"}/' study.json >cand.json
expect "compare: error: cand.json: candidate 'a': scenario: engine.block_size: expected an integer" \
  compare cand.json --out o
# A scenario file of its own is a second file, named as such.
echo '{ "scenario": "base.json", "slo": {"ttft_p99_s": 2}, "target_rate": 5,
  "candidates": [{"label": "a", "set": {"seed": -1}}] }' >file.json
expect "compare: error: file.json: candidate 'a': base.json: seed: -1 must be >= 0" compare file.json --out o
# A study given to run (or a scenario to compare) was "scenario: unknown
# key" (or "seed: unknown key"), and a study without target_rate said
# "(got 0)", a value nobody wrote.
expect 'run: error: file.json: this is a study file, not a scenario (it has `candidates`): run it with kvsim compare' \
  "${run[@]}" file.json
expect 'compare: error: base.json: this is a scenario file, not a study (it has `model`): run it with kvsim run' \
  compare base.json --out o
echo '{ "scenario": "base.json", "slo": {"ttft_p99_s": 2}, "candidates": [{"label": "a"}] }' >norate.json
expect "compare: error: norate.json: missing key 'target_rate'" compare norate.json --out o

# 2. Each admission limit below 0 names its key and value.
expect "error: base.json: admission.max_wait_s: -1 is outside [0, 9e+09] (0: no limit)" \
  "${run[@]}" base.json --set admission.max_wait_s=-1
for k in max_prompt_tokens max_output_tokens max_queue_length; do
  expect "error: base.json: admission.$k: -1 must be >= 0" "${run[@]}" base.json --set admission.$k=-1
done
ok "${run[@]}" base.json --set admission.max_wait_s=0 --set admission.max_queue_length=0

# 3. --slo: an empty item (leading, trailing, doubled comma) was skipped,
# and "=" with no value or no name named only part of the item.
expect "--slo: item 2 of 'ttft_p99=1s,,' is empty" plan base.json --slo ttft_p99=1s,,
expect "--slo: item 2 of 'ttft_p99=1s,' is empty" plan base.json --slo ttft_p99=1s,
expect "--slo: item 1 of ',ttft_p99=1s' is empty" plan base.json --slo ,ttft_p99=1s
expect "--slo: item 2 of 'ttft_p99=1s,,tpot_p99=1s' is empty" plan base.json --slo ttft_p99=1s,,tpot_p99=1s
expect "--slo: 'ttft_p99=' has no value after '='" plan base.json --slo ttft_p99=
expect "--slo: '=1s' has no METRIC_STAT before '='" plan base.json --slo =1s
# A bare number was read as seconds (tpot_p99=50 meant 50 ms, became 50 s).
expect "--slo: tpot_p99=50 has no unit (write 50s, 50ms or 50us)" plan base.json --slo ttft_p99=2s,tpot_p99=50

# 4. A V0 swap space under one block gave 0 CPU blocks without a word (as
# a CPU offloading tier that small once did).
expect "error: base.json: engine.swap_space: 0.0001 GiB is smaller than the one KV block it must hold (16 tokens, 2097152 bytes per GPU, 0.00195 GiB)" \
  "${run[@]}" base.json --set engine.profile=vllm-v0 --set engine.preemption_mode=swap \
  --set engine.swap_space=0.0001
expect "error: --swap-space (engine.swap_space): 0.0001 GiB is smaller than the one KV block" \
  calc --model llama-3.1-8b --engine vllm-v0 --swap-space 0.0001
ok "${run[@]}" base.json --set engine.profile=vllm-v0 --set engine.swap_space=0
ok calc --model llama-3.1-8b --engine vllm-v0 --swap-space 0.002

# 5. --merge: one prefix. An --out on a shard folder read "--merge: --out:
# ...", and a shard record's key "DIR/sweep.shard1.json.shards".
sw="$src/tests/golden/data/small-sweep.json"
for i in 0 1; do
  "$kvsim" sweep "$sw" --quiet --shard $i/2 --out sh$i >/dev/null || fail "shard $i/2 did not run"
done
expect "sweep: error: --out: sh0 is the shard folder sh0 (the merged table needs a folder of its own)" \
  sweep --merge sh0 sh1 --out sh0
sed 's/"shards":[[:space:]]*2/"shards": "2"/' sh1/sweep.shard1.json >rec && mv rec sh1/sweep.shard1.json
expect "sweep: error: --merge: sh1/sweep.shard1.json: shards: expected an integer" \
  sweep --merge sh0 sh1 --out o
expect "sweep: error: --merge: nowhere: cannot read the folder" sweep --merge sh0 nowhere --out o

# 6. A model, GPU, study or sweep file's key reads "FILE: key", and one in
# a section "FILE: section.key", as a scenario's do (they read "FILE.key").
m='"model_type": "llama", "num_attention_heads": 8, "num_hidden_layers": 2,
   "intermediate_size": 2048, "vocab_size": 1000'
echo "{$m, \"hidden_size\": 1024, \"num_key_value_heads\": 0.5}" >m.json
expect "calc: error: --model: m.json: num_key_value_heads: expected an integer" calc --model m.json
echo "{$m, \"hidden_size\": 1024, \"quantization_config\": {\"quant_method\": 3}}" >q.json
expect "calc: error: --model: q.json: quantization_config.quant_method: expected a string" calc --model q.json
echo "{\"text_config\": {$m, \"hidden_size\": 1e12}}" >t.json
expect "calc: error: --model: t.json: text_config.hidden_size: 1000000000000 is out of range [1, 1048576]" \
  calc --model t.json
g='"name": "g", "generation": "hopper", "memory_total_bytes": 8e10, "hbm_bandwidth_GBps": 3350,
   "bf16_tflops": 989'
# GPU files with one bad key each (g-NAME.json); the cases are data:
# errors/gpu_files.cases.
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
run_error_cases "$src/tests/golden/errors/gpu_files.cases"
sed 's/"target_rate": 5/"target_rate": 5, "grid": 1/' study.json >grid.json
expect "compare: error: grid.json: grid: unknown key" compare grid.json --out o
sed 's/"name": "s"/"name": 3/' study.json >name.json
expect "compare: error: name.json: name: expected a string" compare name.json --out o
sed 's/"label": "a"/"label": 3/' study.json >label.json
expect "compare: error: label.json: candidates[0].label: expected a string" compare label.json --out o
echo '{"scenario": "base.json", "grd": {"seed": [1, 2]}}' >sw.json
expect "sweep: error: sw.json: grd: unknown key (did you mean 'grid'?)" sweep sw.json --out o
echo '{"scenario": "base.json", "mode": 3, "grid": {"seed": [1, 2]}}' >sw.json
expect "sweep: error: sw.json: mode: expected a string" sweep sw.json --out o

# 7. An SLO target past the simulator's time limit (9e9 s) is one every
# run meets: no target, yet 1e300 was taken.
for k in ttft_p99_s tpot_p99_s e2e_p99_s; do
  expect "error: base.json: slo.$k: 1e+300 is outside (0, 9e+09]" "${run[@]}" base.json --set slo.$k=1e300
done
expect "error: base.json: slo.ttft_p99_s: 9.1e+09 is outside (0, 9e+09]" "${run[@]}" base.json \
  --set slo.ttft_p99_s=9.1e9
ok "${run[@]}" base.json --set slo.ttft_p99_s=9e9
expect "plan: error: --slo: ttft_p99=1e300s: 1e+300 s is outside (0, 9e+09]" plan base.json --slo ttft_p99=1e300s
expect "plan: error: --slo: e2e_p99=1e13ms: 1e+10 s is outside (0, 9e+09]" plan base.json --slo e2e_p99=1e13ms

# 8. engine.quantization "" silently meant the model's own.
expect "error: base.json: engine.quantization: empty (leave the key out for the model's own, or give none," \
  "${run[@]}" base.json --set 'engine.quantization=""'
ok "${run[@]}" base.json --set engine.quantization=null

# 9. A trace flag past what a workload holds was named as a key of a
# "workload" no file has: "workload: hash_block_tokens: ... out of range".
printf 'arrival_s,prompt_tokens,output_tokens\n0,10,5\n' >t.csv
expect "trace stats: error: --hash-block-tokens: bad value 9223372036854775807 (expected 1..9007199254740991)" \
  trace stats t.csv --hash-block-tokens 9223372036854775807
expect "trace convert: error: --hash-block-tokens: bad value 9007199254740992 (expected 1..9007199254740991)" \
  trace convert t.csv --out o --hash-block-tokens 9007199254740992
ok trace stats t.csv --hash-block-tokens 9007199254740991

# 10. A workload count past what a JSON number holds exactly named the
# getter's range, [-9007199254740991, 9007199254740991], not the key's.
expect "error: base.json: workload.synthetic.requests: bad value 1e+300 (expected 1..9007199254740991)" \
  "${run[@]}" base.json --set workload.synthetic.requests=1e300
expect "error: base.json: workload.synthetic.requests: bad value -1e+300 (expected 1..9007199254740991)" \
  "${run[@]}" base.json --set workload.synthetic.requests=-1e300

echo "ok"
