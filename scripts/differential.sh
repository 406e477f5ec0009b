#!/usr/bin/env bash
# Differential test of two kvsim binaries: a speed change must leave every
# output byte-identical. Generates N seeded random scenarios per engine
# profile (small pools that preempt, prefix sharing, chunked prefill,
# replicas, swap, priorities), runs both binaries on each and diffs their
# outputs (files, stdout, stderr, exit status), the "version" field aside.
#   scripts/differential.sh OLD_KVSIM NEW_KVSIM [--per-profile N] [--seed S] [--keep DIR]
# Build the old binary from the starting commit in its own tree, e.g.
#   git archive BASE | tar -x -C OLD && cmake -S OLD -B OLD/build -DCMAKE_BUILD_TYPE=Release \
#     && cmake --build OLD/build -j2 --target kvsim
# Every 8th scenario runs with the band and the advice re-runs (the study
# paths); the others with --no-band --no-verify-advice. A scenario with
# replicas picks its router among all of the registry's (hardware.router's
# values as NEW_KVSIM's `list params` gives them), prefix_affinity now and
# then with its own router_imbalance.
set -euo pipefail
usage() { echo "usage: scripts/differential.sh OLD_KVSIM NEW_KVSIM [--per-profile N] [--seed S] [--keep DIR]" >&2; exit 2; }
[ $# -ge 2 ] || usage
old=$(realpath "$1")
new=$(realpath "$2")
shift 2
per=40
seed=1
keep=
while [ $# -gt 0 ]; do
  case $1 in
    --per-profile) per=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    *) usage ;;
  esac
done
[ -x "$old" ] && [ -x "$new" ] || { echo "differential: both binaries must be executable" >&2; exit 2; }
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  work=$(realpath "$keep")
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
profiles="vllm-v1 vllm-v0 sglang tgi static contiguous contiguous-pow2 hf-transformers"
# The routers: the words of hardware.router's values ("round_robin, least_loaded, ... or X").
routers=$("$new" list params | awk -F'|' '$2 ~ /`hardware\.router`/ {
  gsub(/,| or /, " ", $8); print $8 }' | xargs)
[ -n "$routers" ] || { echo "differential: no routers in '$new list params'" >&2; exit 2; }

# gen PROFILE I: one scenario on stdout, drawn from (seed, profile, i).
gen() {
  awk -v prof="$1" -v i="$2" -v seed="$seed" -v routers="$routers" '
    function pick(n) { return int(rand() * n) }
    function oneof(s,   a, n) { n = split(s, a, " "); return a[pick(n) + 1] }
    BEGIN {
      h = seed * 7919 + i * 104729
      for (k = 1; k <= length(prof); k++) h = (h * 31 + index("abcdefghijklmnopqrstuvwxyz-0123456789", substr(prof, k, 1))) % 2147483647
      srand(h)
      model = oneof("llama-3.2-1b llama-3.1-8b qwen3-8b mistral-7b-v0.3 gemma-2-9b qwen3-30b-a3b")
      gpu = oneof("l4 a100-80g h100-sxm l40s")
      n = 60 + pick(300)
      rate = oneof("2 5 10 20 40 80")
      proc = oneof("poisson gamma poisson constant")
      pmean = oneof("100 300 600 1200")
      omax = oneof("16 200 600 1500")
      eng = "\"profile\": \"" prof "\", \"max_model_len\": 4096"
      if (prof == "sglang") {
        eng = eng ", \"max_running_requests\": " oneof("4 16 64") ", \"chunked_prefill_size\": " oneof("256 512 2048")
        if (rand() < 0.5) eng = eng ", \"max_total_tokens\": " oneof("4096 6000 8192")
      } else if (prof == "tgi") {
        eng = eng ", \"max_batch_prefill_tokens\": " oneof("512 2048 4096")
        if (rand() < 0.5) eng = eng ", \"num_gpu_blocks_override\": " oneof("4096 8192 30000")
      } else if (prof == "hf-transformers") {
        eng = "\"profile\": \"" prof "\", \"batch\": " oneof("1 4 8") ", \"max_cache_len\": " oneof("2048 4096")
        if (rand() < 0.3) eng = eng ", \"cache\": \"" oneof("static dynamic") "\""
      } else {
        eng = eng ", \"max_num_seqs\": " oneof("4 16 64 128") ", \"block_size\": " oneof("16 16 32")
        if (prof == "vllm-v1") eng = eng ", \"max_num_batched_tokens\": " oneof("512 2048 4096")
        if (prof == "vllm-v0") eng = eng ", \"max_num_batched_tokens\": " oneof("4096 8192")
        if (rand() < 0.6) eng = eng ", \"num_gpu_blocks_override\": " oneof("300 400 600 2000")
        if (prof ~ /^vllm/ && rand() < 0.4) eng = eng ", \"enable_prefix_caching\": " oneof("true false")
        if (prof == "vllm-v1" && rand() < 0.3) eng = eng ", \"scheduling_policy\": \"priority\""
        if (prof == "vllm-v0" && rand() < 0.3) eng = eng ", \"preemption_mode\": \"swap\", \"swap_space\": 4"
      }
      hw = "\"gpu\": \"" gpu "\""
      reps = rand() < 0.25
      if (reps) hw = hw ", \"replicas\": " oneof("2 3 4")
      wl = "\"requests\": " n ", \"arrival\": { \"process\": \"" proc "\", \"rate\": " rate (proc == "gamma" ? ", \"cv\": 2" : "") " }"
      wl = wl ", \"prompt_tokens\": { \"dist\": \"lognormal\", \"mean\": " pmean ", \"sigma\": 0.6, \"max\": 3000 }"
      wl = wl ", \"output_tokens\": { \"dist\": \"uniform\", \"min\": 1, \"max\": " omax " }"
      if (rand() < 0.3) wl = wl ", \"prefix\": { \"shared_tokens\": " oneof("64 256 1024") ", \"groups\": " oneof("1 4") " }"
      if (prof == "vllm-v1" && rand() < 0.5) wl = wl ", \"priority\": { \"levels\": 3 }"
      slo = rand() < 0.5 ? ", \"slo\": { \"ttft_p99_s\": " oneof("0.5 2") ", \"tpot_p99_s\": " oneof("0.05 0.2") " }" : ""
      sseed = 1 + pick(1000)
      si = oneof("0.25 1 5")
      # Drawn last, so that the draws above (and the scenarios without
      # replicas) stay those of the seed before routers varied.
      if (reps) {
        rt = oneof(routers)
        hw = hw ", \"router\": \"" rt "\""
        if (rt == "prefix_affinity" && rand() < 0.5) hw = hw ", \"router_imbalance\": " oneof("0 2 64")
      }
      # A disaggregated deployment (the profiles with a KV connector), drawn
      # after all else for the same reason: each side its own pool, a flow,
      # a link and sometimes a transfer unit (one the flow refuses is refused
      # by both binaries alike).
      dis = ""
      if ((prof == "vllm-v1" || prof == "sglang") && !reps && rand() < 0.3) {
        for (k = 0; k < 2; k++) {
          e = prof == "sglang" ? "\"max_total_tokens\": " oneof("6000 12000 30000") \
                               : "\"num_gpu_blocks_override\": " oneof("300 600 2000")
          side[k] = "{ \"engine\": { " e " }" (rand() < 0.3 ? ", \"replicas\": " oneof("1 2") : "") " }"
        }
        dis = "  \"disaggregation\": { \"flow\": \"" oneof("vllm sglang") "\", "
        dis = dis "\"prefill\": " side[0] ", \"decode\": " side[1] ", "
        dis = dis "\"link\": { \"kind\": \"" oneof("nvlink infiniband roce") "\" }"
        if (rand() < 0.5) dis = dis ", \"transfer\": \"" oneof("request chunk layer") "\""
        dis = dis " },\n"
      }
      printf "{ \"name\": \"diff-%s-%d\", \"seed\": %d, \"model\": \"%s\",\n", prof, i, sseed, model
      printf "  \"hardware\": { %s },\n  \"engine\": { %s },\n%s", hw, eng, dis
      printf "  \"workload\": { \"synthetic\": { %s } }%s,\n", wl, slo
      printf "  \"output\": { \"sample_interval_s\": %s } }\n", si
    }'
}

# run BIN SCEN DIR [flags]: outputs, stdout, stderr and status into DIR.
run() {
  local bin=$1 scen=$2 dir=$3
  shift 3
  mkdir -p "$dir"
  set +e
  (cd "$work" && "$bin" run "$scen" --quiet --out "$dir/out" "$@" >"$dir/stdout" 2>"$dir/stderr")
  echo $? >"$dir/status"
  set -e
  sed -i "s|$dir|DIR|g" "$dir/stdout" "$dir/stderr"
}

total=0 failed=0 ran=0
for p in $profiles; do
  for i in $(seq "$per"); do
    s="$work/scen/$p-$i.json"
    mkdir -p "$work/scen"
    gen "$p" "$i" >"$s"
    flags=(--no-band --no-verify-advice)
    [ $((i % 8)) = 0 ] && flags=()
    run "$old" "$s" "$work/old/$p-$i" "${flags[@]}"
    run "$new" "$s" "$work/new/$p-$i" "${flags[@]}"
    total=$((total + 1))
    [ "$(cat "$work/old/$p-$i/status")" = 0 ] && ran=$((ran + 1))
    if ! diff -r -I '"version"' "$work/old/$p-$i" "$work/new/$p-$i" >"$work/diff-$p-$i.txt"; then
      failed=$((failed + 1))
      echo "DIFFERS: $p-$i ($s)"
      head -20 "$work/diff-$p-$i.txt"
    fi
  done
done
echo "differential: $total scenarios ($ran simulated, $((total - ran)) refused by both), $failed differ"
[ "$failed" = 0 ]
