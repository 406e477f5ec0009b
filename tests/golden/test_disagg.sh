#!/usr/bin/env bash
# Disaggregated prefill and decode, end to end (tests/golden/cases/
# disagg-decode-full is the byte-for-byte case): what the hand-off does to
# the pools and the latency when a knob moves, the two flows, calc
# --scenario, and bad blocks.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/tests/golden/cases/disagg-decode-full/scenario.json"
get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split('.'): d=d[k]
print(d)" "$1/summary.json" "$2"; }
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }' || { echo "FAIL: $3 ($1 <= $2)"; exit 1; }; }

# 1. The decode pool is what backs the prefill side up: ten times its
# blocks and the prefill side holds far fewer blocks, TTFT falls.
"$kvsim" run "$scen" --quiet --no-band --out "$tmp/small" --check-invariants
"$kvsim" run "$scen" --quiet --no-band --out "$tmp/big" --check-invariants \
  --set disaggregation.decode.engine.num_gpu_blocks_override=6000
echo "TTFT p50 with a 599-block decode pool: $(get "$tmp/small" latency.ttft_s.p50) s, 5,999 blocks: $(get "$tmp/big" latency.ttft_s.p50) s"
gt "$(get "$tmp/small" latency.ttft_s.p50)" "$(awk -v b="$(get "$tmp/big" latency.ttft_s.p50)" 'BEGIN { print 10 * b }')" \
  "a full decode pool should raise TTFT tenfold"
gt "$(get "$tmp/small" disaggregation.prefill_blocks_held_peak)" "$(get "$tmp/big" disaggregation.prefill_blocks_held_peak)" \
  "a full decode pool should leave more KV held on the prefill side"
gt "$(get "$tmp/small" disaggregation.decode_alloc_wait_s_mean)" 1 "prompts should wait seconds for decode blocks"
[ "$(get "$tmp/big" disaggregation.decode_alloc_wait_s_max)" = 0 ] || { echo "FAIL: a roomy decode pool should not make prompts wait"; exit 1; }
# Each side's steps come from its own GPU, and TPOT from the decode side
# alone: the prefill side on an A100 leaves it within 5 %, the decode side
# on an A100 raises it by a third or more.
"$kvsim" run "$scen" --quiet --no-band --out "$tmp/pa100" --set disaggregation.prefill.gpu=a100-80g
"$kvsim" run "$scen" --quiet --no-band --out "$tmp/da100" --set disaggregation.decode.gpu=a100-80g
t0=$(get "$tmp/small" latency.tpot_s.p50)
awk -v a="$(get "$tmp/pa100" latency.tpot_s.p50)" -v b="$t0" 'BEGIN { exit !(a < 1.05 * b && b < 1.05 * a) }' ||
  { echo "FAIL: TPOT should not depend on the prefill side's GPU"; exit 1; }
gt "$(get "$tmp/da100" latency.tpot_s.p50)" "$(awk -v b="$t0" 'BEGIN { print 1.33 * b }')" "TPOT should follow the decode side's GPU"

# The run line gives each side's peak and the wait for decode blocks.
"$kvsim" run "$scen" --no-band --out "$tmp/line" | grep -q 'KV peak prefill [0-9.]*%, decode [0-9.]*%; waited for decode blocks [1-9][0-9.]* s mean' ||
  { echo "FAIL: the run line lacks the sides' peaks and the wait"; exit 1; }

# vLLM's decode side pulls only what its own prefix cache lacks: two
# shared 1,000-token prefixes move about a third less KV with its cache on.
P='workload.synthetic.prefix={"shared_tokens":1000,"groups":2,"popularity":"uniform","fraction":1.0}'
for pc in true false; do
  "$kvsim" run "$scen" --quiet --no-band --check-invariants --out "$tmp/px-$pc" --set "$P" \
    --set disaggregation.decode.engine.enable_prefix_caching=$pc
done
gt "$(get "$tmp/px-true" disaggregation.decode_prefix_hit_tokens)" 50000 "the decode side should find the shared prefixes"
[ "$(get "$tmp/px-false" disaggregation.decode_prefix_hit_tokens)" = 0 ] || { echo "FAIL: hits without a prefix cache"; exit 1; }
gt "$(awk -v b="$(get "$tmp/px-false" disaggregation.kv_bytes_transferred)" 'BEGIN { print 0.8 * b }')" \
  "$(get "$tmp/px-true" disaggregation.kv_bytes_transferred)" "decode-side hits should not be transferred"

# 2. The link: 100 times slower, transfers 100 times longer (less the latency).
"$kvsim" run "$scen" --quiet --no-band --out "$tmp/slow" --set disaggregation.link.bandwidth_GBps=0.43
gt "$(get "$tmp/slow" disaggregation.transfer_s_mean)" "$(awk -v b="$(get "$tmp/big" disaggregation.transfer_s_mean)" 'BEGIN { print 90 * b }')" \
  "a link 100 times slower should take about 100 times longer"

# 2b. The diagnosis names what bounds each: the small decode pool (its
# prefill queue is back-pressure) and the slow link, each with the change
# that should help, measured.
code() { python3 -c "import json,sys; print(' '.join(d['code'] for d in json.load(open(sys.argv[1]))['diagnosis']))" "$1/summary.json"; }
[ "$(code "$tmp/small")" = disagg_decode_pool_bound ] || { echo "FAIL: small decode pool diagnosed as '$(code "$tmp/small")'"; exit 1; }
grep -q '"set":[[:space:]]*"disaggregation.decode.replicas=2"' "$tmp/small/summary.json" ||
  { echo "FAIL: no advice of one more decode instance"; exit 1; }
grep -q 'back-pressure' "$tmp/small/summary.json" || { echo "FAIL: the prefill queue is not called back-pressure"; exit 1; }
"$kvsim" run "$scen" --quiet --no-band --out "$tmp/slowbig" --set disaggregation.link.bandwidth_GBps=0.43 \
  --set disaggregation.decode.engine.num_gpu_blocks_override=6000
[ "$(code "$tmp/slowbig")" = disagg_link_bound ] || { echo "FAIL: slow link diagnosed as '$(code "$tmp/slowbig")'"; exit 1; }
# With the small decode pool as well, the decode pool still bounds it.
[ "$(code "$tmp/slow")" = disagg_decode_pool_bound ] || { echo "FAIL: slow link, small pool: '$(code "$tmp/slow")'"; exit 1; }
# The plots' titles name both sides, not the base hardware's TP.
label=$(. "$src/scripts/plot_lib.sh"; run_label "$tmp/small/summary.json")
[[ $label == *"on h100-sxm (1 prefill TP 1 : 1 decode TP 1)"* ]] || { echo "FAIL: plot title '$label'"; exit 1; }

# 3. SGLang's bootstrap: the decode side allocates before the prefill
# runs, so the prefill side never holds a prompt waiting for decode blocks;
# the queue builds before the prefill instead.
"$kvsim" run "$scen" --quiet --no-band --out "$tmp/sgl" --check-invariants --set engine.profile=sglang \
  --set 'disaggregation.prefill.engine={"max_total_tokens":19200}' \
  --set 'disaggregation.decode.engine={"max_total_tokens":9600}' --set disaggregation.flow=sglang
[ "$(get "$tmp/sgl" disaggregation.flow)" = sglang ] || { echo "FAIL: flow sglang not taken"; exit 1; }
# The share of the prefill pool held for hand-offs, averaged over the ticks.
held() { awk -F, -v pool="$(get "$1" disaggregation.prefill.kv_blocks)" 'NR > 1 { s += $4; n++ } END { print s / n / pool }' "$1/transfer.csv"; }
gt "$(held "$tmp/small")" 0.5 "vLLM's prefill side should hold most of its pool for the decode side"
gt 0.05 "$(held "$tmp/sgl")" "SGLang's prefill side should hold only prompts in transfer"
gt "$(get "$tmp/sgl" disaggregation.decode_prealloc_queue_peak)" 10 "SGLang's prompts should queue for decode blocks"
[ "$(get "$tmp/sgl" requests.finished)" = 80 ] || { echo "FAIL: SGLang flow: not every request finished"; exit 1; }
head -1 "$tmp/sgl/transfer.csv" | grep -q '^time_s,prefill_kv_cache_usage_perc,decode_kv_cache_usage_perc,' ||
  { echo "FAIL: transfer.csv header"; exit 1; }

# 3a. SGLang's decode scheduler with --scheduler-recv-interval 10 polls
# for new requests once every 10 decode steps (SchedulerRecvSkipper), and
# a request it has not received cannot bootstrap: with 8 clients keeping
# the decode instance busy, each prefill starts later, by more than one
# and at most 10 decode steps on the mean (TPOT is one step).
for iv in 1 10; do
  "$kvsim" run "$scen" --quiet --no-band --out "$tmp/recv$iv" --check-invariants --set engine.profile=sglang \
    --set disaggregation.flow=sglang --set 'workload.synthetic.arrival={"process":"closed_loop","clients":8}' \
    --set workload.synthetic.requests=40 --set 'disaggregation.prefill.engine={"max_total_tokens":19200}' \
    --set "disaggregation.decode.engine={\"max_total_tokens\":96000,\"scheduler_recv_interval\":$iv}"
done
queue() { awk -F, 'NR > 1 { s += $4 - $3; n++ } END { print s / n }' "$1/requests.csv"; }
step=$(get "$tmp/recv10" latency.tpot_s.mean)
echo "SGLang decode side polling every 10 steps: prefill start $(queue "$tmp/recv1") -> $(queue "$tmp/recv10") s after arrival (step $step s)"
gt "$(queue "$tmp/recv10")" "$(awk -v a="$(queue "$tmp/recv1")" -v s="$step" 'BEGIN { print a + s }')" \
  "a decode side polling every 10 steps should delay the prefill by more than a step"
gt "$(awk -v a="$(queue "$tmp/recv1")" -v s="$step" 'BEGIN { print a + 10 * s }')" "$(queue "$tmp/recv10")" \
  "the delay should stay within 10 decode steps on the mean"
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['config']; assert 'scheduler_recv_interval' in json.dumps(c), c" \
  "$tmp/recv10/summary.json" || { echo "FAIL: summary.json's config lacks the decode side's scheduler_recv_interval"; exit 1; }

# 3b. What one transfer moves. SGLang sends each chunked-prefill chunk's
# KV as it is computed (prefill.py send_kv_chunk), so on a long prompt over
# a slow link the transfer overlaps the later chunks and TTFT waits for the
# last chunk's share only; a whole-request transfer (vLLM's connector, or
# disaggregation.transfer=request) waits for all of it. The same bytes
# cross the link either way.
cat >"$tmp/long.json" <<'JSON'
{ "name": "sgl-long-prompt", "seed": 7, "model": "llama-3.1-8b", "hardware": { "gpu": "h100-sxm" },
  "engine": { "profile": "sglang", "max_model_len": 32768 },
  "disaggregation": { "prefill": {}, "decode": {}, "link": { "kind": "roce", "bandwidth_GBps": 2 } },
  "workload": { "synthetic": { "requests": 10, "arrival": { "process": "poisson", "rate": 0.2 },
    "prompt_tokens": { "dist": "uniform", "min": 16000, "max": 24000 },
    "output_tokens": { "dist": "uniform", "min": 50, "max": 100 } } } }
JSON
"$kvsim" run "$tmp/long.json" --quiet --no-band --check-invariants --out "$tmp/chunk"
"$kvsim" run "$tmp/long.json" --quiet --no-band --check-invariants --out "$tmp/whole" --set disaggregation.transfer=request
[ "$(get "$tmp/chunk" disaggregation.transfer)" = chunk ] || { echo "FAIL: sglang's default transfer is not per chunk"; exit 1; }
gt "$(get "$tmp/chunk" disaggregation.chunk_sends)" 9 "every 16k+ prompt should send a chunk before its last"
[ "$(get "$tmp/chunk" disaggregation.kv_bytes_transferred)" = "$(get "$tmp/whole" disaggregation.kv_bytes_transferred)" ] ||
  { echo "FAIL: per-chunk transfers moved other bytes than whole ones"; exit 1; }
echo "TTFT p50 of 16-24k prompts over 2 GB/s: per chunk $(get "$tmp/chunk" latency.ttft_s.p50) s, whole request $(get "$tmp/whole" latency.ttft_s.p50) s"
gt "$(awk -v b="$(get "$tmp/whole" latency.ttft_s.p50)" 'BEGIN { print 0.9 * b }')" "$(get "$tmp/chunk" latency.ttft_s.p50)" \
  "per-chunk transfers should cut TTFT by a tenth or more"
gt "$(get "$tmp/whole" disaggregation.transfer_exposed_s_mean)" "$(get "$tmp/chunk" disaggregation.transfer_exposed_s_mean)" \
  "per chunk, less of the transfer should be left after the prefill"
# The rule is the prefill profile's: vllm-v1 under the sglang flow sends
# whole requests.
"$kvsim" run "$tmp/long.json" --quiet --no-band --out "$tmp/v1sgl" --set engine.profile=vllm-v1 \
  --set disaggregation.flow=sglang --set workload.synthetic.requests=2
[ "$(get "$tmp/v1sgl" disaggregation.transfer)" = request ] || { echo "FAIL: vllm-v1 should send whole requests"; exit 1; }

# 3c. Per layer (disaggregation.transfer=layer, vLLM's flow): the
# connector's save_kv_layer puts each layer's KV on the link as that
# layer's forward ends (P2pNcclConnector, LMCache's layerwise mode), so
# the transfer overlaps the prefill's own forward, chunk by chunk, and
# TTFT waits only for what the link has not finished by the last step's
# end. The same long prompts over the same slow link, vllm-v1 both ways.
"$kvsim" run "$tmp/long.json" --quiet --no-band --check-invariants --out "$tmp/v1whole" \
  --set engine.profile=vllm-v1 --set disaggregation.flow=vllm
"$kvsim" run "$tmp/long.json" --quiet --no-band --check-invariants --out "$tmp/v1layer" \
  --set engine.profile=vllm-v1 --set disaggregation.flow=vllm --set disaggregation.transfer=layer
[ "$(get "$tmp/v1whole" disaggregation.transfer)" = request ] || { echo "FAIL: vLLM's default transfer is not whole"; exit 1; }
[ "$(get "$tmp/v1layer" disaggregation.transfer)" = layer ] || { echo "FAIL: transfer=layer not taken"; exit 1; }
[ "$(get "$tmp/v1layer" disaggregation.kv_bytes_transferred)" = "$(get "$tmp/v1whole" disaggregation.kv_bytes_transferred)" ] ||
  { echo "FAIL: per-layer transfers moved other bytes than whole ones"; exit 1; }
[ "$(get "$tmp/v1layer" requests.finished)" = 10 ] || { echo "FAIL: per layer: not every request finished"; exit 1; }
gt "$(get "$tmp/v1layer" disaggregation.chunk_sends)" 9 "every 16k+ prompt's first chunk should send its layers during the prefill"
echo "TTFT p50 of 16-24k prompts over 2 GB/s, vLLM flow: per layer $(get "$tmp/v1layer" latency.ttft_s.p50) s, whole request $(get "$tmp/v1whole" latency.ttft_s.p50) s"
gt "$(awk -v b="$(get "$tmp/v1whole" latency.ttft_s.p50)" 'BEGIN { print 0.9 * b }')" "$(get "$tmp/v1layer" latency.ttft_s.p50)" \
  "per-layer transfers should cut TTFT by a tenth or more"
gt "$(get "$tmp/v1whole" disaggregation.transfer_exposed_s_mean)" "$(get "$tmp/v1layer" disaggregation.transfer_exposed_s_mean)" \
  "per layer, less of the transfer should be left after the prefill"
# Per layer needs vLLM's connector: under the sglang flow, one line, exit 2.
set +e
"$kvsim" run "$tmp/long.json" --quiet --out "$tmp/badlayer" --set disaggregation.transfer=layer 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "disaggregation.transfer.*'layer' needs flow vllm" "$tmp/err" &&
  [ ! -e "$tmp/badlayer" ] || { echo "FAIL: transfer=layer under sglang: exit $rc, $(cat "$tmp/err")"; exit 1; }

# 4. An aggregated run writes no transfer.csv.
"$kvsim" run "$src/tests/golden/cases/v1-two-replicas/scenario.json" --quiet --no-band --out "$tmp/agg"
[ ! -e "$tmp/agg/transfer.csv" ] || { echo "FAIL: transfer.csv beside an aggregated run"; exit 1; }

# 5. calc --scenario: both plans and the bytes a prompt moves.
"$kvsim" calc --scenario "$scen" >"$tmp/calc.txt"
grep -q '^== prefill: 1 x h100-sxm (TP 1), profile vllm-v1 ==$' "$tmp/calc.txt" || { echo "FAIL: calc prefill header"; cat "$tmp/calc.txt"; exit 1; }
grep -q '^GPU KV cache size: 9,600 tokens$' "$tmp/calc.txt" || { echo "FAIL: calc decode pool"; exit 1; }
grep -q 'prompt of 8,192 tokens: 1,073,741,824 bytes' "$tmp/calc.txt" || { echo "FAIL: calc transfer bytes"; exit 1; }
grep -q '^Sent whole after the prefill (transfer request)$' "$tmp/calc.txt" || { echo "FAIL: calc: vLLM's unit"; exit 1; }
"$kvsim" calc --scenario "$tmp/long.json" | grep -q '^Sent per chunked-prefill chunk as it is computed (transfer chunk)' ||
  { echo "FAIL: calc: SGLang's unit"; exit 1; }
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['disaggregation']['transfer']='layer'
json.dump(d, open(sys.argv[2], 'w'))" "$scen" "$tmp/layer.json"
"$kvsim" calc --scenario "$tmp/layer.json" | grep -q '^Sent per layer as each layer.s forward ends (transfer layer, 32 sends per step)' ||
  { echo "FAIL: calc: the layer unit"; exit 1; }
[ "$("$kvsim" calc --scenario "$tmp/long.json" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["transfer"])')" = chunk ] ||
  { echo "FAIL: calc --json transfer"; exit 1; }

# 6. compare takes disaggregated candidates beside aggregated ones: a
# replica is one unit of the block's instances (GPUs: both sides'), and a
# block without a link takes InfiniBand's defaults.
cat >"$tmp/base.json" <<'JSON'
{ "name": "cmp-base", "seed": 3, "model": "llama-3.1-8b", "hardware": { "gpu": "h100-sxm" },
  "engine": { "max_model_len": 8192 },
  "workload": { "synthetic": { "requests": 200, "arrival": { "process": "poisson", "rate": 4 },
    "prompt_tokens": { "dist": "uniform", "min": 3000, "max": 6000 },
    "output_tokens": { "dist": "uniform", "min": 200, "max": 400 } } } }
JSON
cat >"$tmp/study.json" <<'JSON'
{ "name": "cmp-disagg", "scenario": "base.json", "slo": { "ttft_p99_s": 1.0, "tpot_p99_s": 0.03 },
  "target_rate": 12,
  "candidates": [ { "label": "aggregated", "set": {} },
    { "label": "1P:2D", "set": { "disaggregation": { "prefill": {}, "decode": { "replicas": 2 } } } } ] }
JSON
"$kvsim" compare "$tmp/study.json" --out "$tmp/cmp" --quiet
awk -F, '$1 == "aggregated" && $6 == 1 { a = 1 } $1 == "1P:2D" && $6 == 3 { d = 1 } END { exit !(a && d) }' "$tmp/cmp/compare.csv" ||
  { echo "FAIL: compare's GPUs per replica"; cat "$tmp/cmp/compare.csv"; exit 1; }
grep -q '^== hand-off (flow vllm, infiniband at 43 GB/s' "$tmp/cmp/REPORT.md" || { echo "FAIL: REPORT.md lacks the sides' plans"; exit 1; }

# plan's replica search counts units too: 2 units of 1P:2D are 6 GPUs.
"$kvsim" plan "$tmp/base.json" --set 'disaggregation={"prefill":{},"decode":{"replicas":2}}' \
  --set workload.synthetic.arrival.rate=12 --slo ttft_p99=1s,tpot_p99=30ms --search replicas >"$tmp/plan.txt"
grep -q 'replicas = [0-9]* GPUs ([0-9]* x 3 GPUs per replica)' "$tmp/plan.txt" || { echo "FAIL: plan's GPUs per unit"; cat "$tmp/plan.txt"; exit 1; }

# 7. Bad blocks: one line naming the key, exit 2, nothing written.
for set in disaggregation.link.kind=ethernet disaggregation.decode=null disaggregation.prefill.tensor_parallel_size=3 \
           hardware.replicas=2 disaggregation.prefill.engine.profile=tgi disaggregation.link.latency_us=-1 \
           disaggregation.transfer=packet disaggregation.transfer=chunk; do
  set +e
  "$kvsim" run "$scen" --quiet --out "$tmp/bad" --set "$set" 2>"$tmp/err"
  rc=$?
  set -e
  [ "$rc" = 2 ] || { echo "FAIL: --set $set: exit $rc"; exit 1; }
  [ "$(wc -l <"$tmp/err")" = 1 ] || { echo "FAIL: --set $set: not one line"; cat "$tmp/err"; exit 1; }
  grep -qE 'disaggregation|hardware.replicas' "$tmp/err" || { echo "FAIL: --set $set: $(cat "$tmp/err")"; exit 1; }
  [ ! -e "$tmp/bad" ] || { echo "FAIL: --set $set left $tmp/bad"; exit 1; }
done
echo "ok: disaggregation"
