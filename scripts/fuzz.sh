#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (ASan + UBSan) and
# runs each for SECONDS (default 60), starting from seeds made of the
# project's own test files plus the kept regression inputs
# (tests/fuzz/corpus/<target>/). A crash or hang is copied into that
# folder, so that `scripts/fuzz.sh --regress` (run by the test command)
# replays it forever after.
#   scripts/fuzz.sh 600            # ten minutes per target
#   scripts/fuzz.sh 30 fuzz_trace  # one target
#   scripts/fuzz.sh --regress      # replay the kept inputs and the seeds, a few seconds each
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang >/dev/null || { echo "fuzz: clang is not installed (apt-get install clang)"; exit 77; }
regress=0
secs=60
if [ "${1:-}" = --regress ]; then regress=1; secs=${KVSIM_FUZZ_REGRESS_SECONDS:-3}; shift
elif [ -n "${1:-}" ]; then secs=$1; shift; fi
build=${KVSIM_FUZZ_BUILD:-build-fuzz}
cmake -S tests/fuzz -B $build -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build $build -j "$(nproc)" >/dev/null
targets=${*:-$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')}

# A study of the disaggregated golden inline: aggregated against 1P:1D and 1P:2D.
disagg_study() {
  python3 -c 'import json, sys; sc = json.load(open(sys.argv[1])); print(json.dumps({"name": "d", "scenario": sc, "slo": {"ttft_p99_s": 2, "tpot_p99_s": 0.05}, "target_rate": 6, "candidates": [{"label": "aggregated", "set": {"disaggregation": None}}, {"label": "1P:1D", "set": {}}, {"label": "1P:2D", "set": {"disaggregation.decode.replicas": 2}}], "cost_per_gpu_hour": {"h100-sxm": 2.5}}))' tests/golden/cases/disagg-decode-full/scenario.json
}

# Seeds: the first bytes of a trace input choose the format (fuzz_trace.c).
seed() { # TARGET DIR
  local t=$1 d=$2 i=0
  mkdir -p "$d"
  case $t in
    fuzz_trace)
      for f in tests/golden/cases/*/trace.csv tests/golden/data/*.csv; do
        { printf '\004\000'; cat "$f"; } >"$d/kvsim-$((i++))"; done
      for f in tests/golden/cases/*/expected/requests.csv; do
        { printf '\006\000'; cat "$f"; } >"$d/requests-$((i++))"; done
      for f in tests/golden/fidelity/*.jsonl; do
        { printf '\005\001'; cat "$f"; } >"$d/jsonl-$((i++))"; done
      printf '\001\000TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n' >"$d/azure"
      printf '\003\000{"timestamp": 0, "input_length": 700, "output_length": 20, "hash_ids": [1, 2]}\n' >"$d/mooncake"
      printf '\002\000arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,100,20\n' >"$d/vidur" ;;
    fuzz_model) cp configs/models/*.json "$d/" ;;
    fuzz_gpu) cp configs/gpus/*.json "$d/" ;;
    fuzz_kernels)
      # A small profile of every table (the catalog's are 120-480 KB, too
      # large for the fuzzer to mutate well): 2 x 2 x 2 GEMM cells, one
      # head shape with a hole, collectives, a MoE curve, an MLA module
      # (context with a hole, generation).
      printf '%s' '{"gpu": "x", "source": "s", "vllm_version": "0.24.0", "units": "us",
 "gemm": {"m": [1, 8], "n": [32, 4096], "k": [32, 4096], "dtypes": {"bfloat16": [[[2, 2.5], [3, 9]], [[3, 8], [15, 40]]], "fp8": [[[5, 6], [6, 9]], [[6, 8], [9, 30]]]}},
 "context_attention": [{"head_dim": 128, "window": 0, "kv_dtype": "bfloat16", "num_heads": 32, "num_kv_heads": 8, "batch": [1, 4], "isl": [16, 1024], "us": [[5, 60], [9, null]]}],
 "generation_attention": [{"head_dim": 128, "window": 0, "kv_dtype": "fp8", "num_heads": 32, "num_kv_heads": 8, "batch": [1, 64], "kv_len": [2, 4096], "us": [[4, 9], [6, 120]]}],
 "allreduce": [{"num_gpus": 2, "mode": "graph", "bytes": [256, 1048576], "us": [5, 30]}, {"num_gpus": 2, "mode": "eager", "bytes": [256, 1048576], "us": [9, 40]}],
 "nccl": [{"op": "all_gather", "num_gpus": 4, "bytes": [512, 2097152], "us": [12, 60]}],
 "moe": [{"dtype": "bfloat16", "hidden": 2048, "inter": 768, "topk": 8, "experts": 128, "tp": 1, "ep": 1, "distribution": "power_law_1.01", "tokens": [1, 256], "us": [30, 400]}],
 "mla_module": [{"phase": "context", "gemm": "fp8_block", "kv_dtype": "bfloat16", "num_heads": 16, "hidden": 7168, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "batch": [1, 4], "isl": [16, 1024], "us": [[40, 600], [45, null]]},
  {"phase": "generation", "gemm": "fp8_block", "kv_dtype": "fp8", "num_heads": 16, "hidden": 7168, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "batch": [1, 64], "seq_len": [2, 8192], "us": [[50, 60], [55, 90]]}]}' >"$d/small.json"
      # The fast reader's number paths (core/jsonfast.c), each against
      # cJSON's tree in the target: Clinger's fast path and its edges (1e22,
      # 2^53, 2^53 + 1), the strtod path (long mantissas, exponents past 22,
      # 1e400 and 1e-400, denormals, DBL_MAX), -0, leading fraction zeros,
      # upper-case and signed exponents, 2^53 + 1 scaled (double rounding),
      # the literals; a 64-character number goes to cJSON alone.
      nums='[0, -0, -0.0, 0e0, -0E-0, 1e22, 1e23, 1E+22, 9007199254740992, 9007199254740993, 18446744073709551616,
 0.1, 0.000000000000000000001234, 1234567890123456789, 12345678901234567890, 123456789012345678901234567890.5,
 1.7976931348623157e308, 1.7976931348623159e308, 1e308, 1e309, 1e400, 1e999, -1e400, 1e-400, 4.9e-324, 2.4703282292062327e-324,
 2.2250738585072011e-308, 2.2250738585072014e-308, 5e-324, 1e-22, 1e-23, 3.0e-5, 2147483647, 2147483648, -2147483648, -2147483649,
 0.30000000000000004, 1.00000000000000000000001, 123456789012345678901234567890123456789012345678901234567890123,
 1e0000000000000000000000000000000000000000000000000000000001, 90071992547409930, 9007199254740993e1, 9007199254740993e-1,
 true, false, null, {"k": [], "": {"z": "é ok"}, "t": true}]'
      printf '%s' "$nums" >"$d/numbers.json"
      # 64 characters: past the fast reader, cJSON's alone.
      printf '[1234567890123456789012345678901234567890123456789012345678901234, -0]' >"$d/numbers-long.json"
      sed 's/"us": \[5, 30\]/"us": [4.9e-324, 1e400]/; s/"us": \[12, 60\]/"us": [-0, 1.7976931348623157e308]/; s/\[30, 400\]/[3.0e1, 4E+2]/; s/"m": \[1, 8\]/"m": [1.000000000000000000001, 8e0]/' "$d/small.json" >"$d/small-numbers.json"
      { printf '\357\273\277'; cat "$d/small.json"; } >"$d/small-bom.json" ;;
    fuzz_scenario)
      for f in configs/scenarios/*.json tests/golden/data/*.json tests/golden/cases/*/scenario.json; do
        { printf 'engine.max_num_seqs=8\0'; cat "$f"; } >"$d/scen-$((i++))"; done
      # SGLang's receive interval (engine.scheduler_recv_interval): aggregated,
      # on both sides of a disaggregated run, on the decode side only, set by
      # --set, and out of range or under another profile.
      local g=tests/golden/cases/sglang-retraction/scenario.json dg=tests/golden/cases/disagg-decode-full/scenario.json
      local sg='engine.profile=sglang\ndisaggregation.prefill.engine={"max_total_tokens":19200}\n'
      for v in 1 7 1000; do { printf 'engine.scheduler_recv_interval=%d\0' $v; cat $g; } >"$d/recv-set-$v"; done
      { printf '\0'; python3 -c 'import json, sys; sc = json.load(open(sys.argv[1])); sc["engine"]["scheduler_recv_interval"] = 30; print(json.dumps(sc))' $g; } >"$d/recv-agg"
      { printf "${sg}"'disaggregation.flow=sglang\ndisaggregation.decode.engine={"max_total_tokens":96000,"scheduler_recv_interval":10}\0'; cat $dg; } >"$d/recv-disagg-decode"
      { printf "${sg}"'disaggregation.flow=sglang\ndisaggregation.decode.engine={"max_total_tokens":96000}\nengine.scheduler_recv_interval=4\0'; cat $dg; } >"$d/recv-disagg-both"
      { printf "${sg}"'disaggregation.flow=vllm\ndisaggregation.decode.engine={"max_total_tokens":96000,"scheduler_recv_interval":3}\0'; cat $dg; } >"$d/recv-disagg-vllm-flow"
      for v in 0 1001 1.5 -1 '"2"'; do { printf 'engine.scheduler_recv_interval=%s\0' "$v"; cat $g; } >"$d/recv-bad-$((i++))"; done
      { printf 'engine.scheduler_recv_interval=4\0'; cat tests/golden/data/small-synthetic.json; } >"$d/recv-vllm" ;;
    fuzz_sweep)
      cp tests/golden/data/small-sweep.json configs/sweeps/*.json "$d/" 2>/dev/null || true
      printf '{"name": "z", "scenario": "small-synthetic.json", "mode": "zip", "grid": {"engine.max_num_seqs": [4, 8], "engine.block_size": [16, 32]}}' >"$d/zip.json" ;;
    fuzz_compare)
      cp tests/golden/compare/*.json tests/golden/search/*.json configs/studies/*.json "$d/" 2>/dev/null || true
      disagg_study >"$d/disagg-study.json"
      printf '{"name": "s", "scenario": "small-synthetic.json", "slo": {"ttft_p99_s": 2}, "target_rate": 5, "candidates": [{"label": "a", "set": {"engine.max_num_seqs": 8}}, {"label": "b", "set": {"hardware.gpu": "l4"}}], "cost_per_gpu_hour": {"l4": 1}}' >"$d/by-path.json" ;;
    fuzz_merge)
      # A two-shard sweep's records and tables, NUL-separated (fuzz_merge.c).
      local t2; t2=$(mktemp -d)
      for k in 0 1; do
        printf '{"sweep": "s", "sweep_hash": "00ff00ff00ff00ff", "shard": %d, "shards": 2, "points": 2}' $k >"$t2/r$k"
        printf 'run,engine.max_num_seqs,fits\nrun000%d,%d,true\n' $k $((k + 4)) >"$t2/t$k"
      done
      { cat "$t2/r0"; printf '\0'; cat "$t2/t0"; printf '\0'; cat "$t2/r1"; printf '\0'; cat "$t2/t1"; } >"$d/two-shards"
      rm -rf "$t2" ;;
    fuzz_slo)
      for v in 'ttft_p99=2s,tpot_p99=100ms' 'e2e_p90=30,queue_mean=500us' 'ttft_p50=1.5s' \
        'ttft_p99=1s,,' '=1s' 'tpot_p99=' 'ttft_p99=9e9s' 'ttft_p99=1e300s'; do
        printf '%s' "$v" >"$d/slo-$((i++))"; done ;;
    fuzz_search)
      # A scenario searched (first byte even; the second picks rate, replicas
      # or util) or a study (odd). Few and small: each input runs searches.
      for k in 0 1 2; do { printf '\000\00%d' $k; cat tests/golden/data/small-synthetic.json; } >"$d/plan-$k"; done
      { printf '\000\001'; cat tests/golden/data/routing-sessions.json; } >"$d/plan-sessions"
      # Every request longer than max_cache_len: the replica search that doubled to 1,024.
      { printf '\000\001'; printf '{"name": "hf", "model": "llama-3.1-8b", "hardware": {"gpu": "l4"}, "engine": {"profile": "hf-transformers", "batch": 4, "max_cache_len": 2048}, "workload": {"synthetic": {"requests": 20, "arrival": {"process": "poisson", "rate": 2}, "prompt_tokens": {"dist": "fixed", "value": 3000}, "output_tokens": {"dist": "fixed", "value": 50}}}}'; } >"$d/plan-too-long"
      # Requests that fit, a TTFT no count meets: replicas double up to the budget.
      { printf '\000\202'; printf '{"name": "hf", "model": "llama-3.1-8b", "hardware": {"gpu": "l4"}, "engine": {"profile": "hf-transformers", "batch": 4, "max_cache_len": 4096}, "workload": {"synthetic": {"requests": 20, "arrival": {"process": "poisson", "rate": 200}, "prompt_tokens": {"dist": "fixed", "value": 3000}, "output_tokens": {"dist": "fixed", "value": 50}}}}'; } >"$d/plan-to-budget"
      { printf '\001\000'; cat tests/golden/compare/tiny-study.json; } >"$d/study-tiny"
      # The disaggregated golden searched for replicas (both sides scale), its
      # study (aggregated against 1P:1D), and a deployment search of 4 configurations.
      { printf '\000\001'; cat tests/golden/cases/disagg-decode-full/scenario.json; } >"$d/plan-disagg"
      { printf '\001\000'; disagg_study; } >"$d/study-disagg"
      { printf '\001\000'; python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["search"] = {"gpus": ["l4", "a10"], "kv_cache_dtype": ["auto", "fp8"], "max_replicas": 8}; print(json.dumps(s))' tests/golden/search/tiny-search.json; } >"$d/study-search"
      # The prefill:decode ratio search (search.disaggregation).
      { printf '\001\000'; cat tests/golden/search/tiny-disagg-search.json; } >"$d/study-disagg-search" ;;
    fuzz_bench_vllm) cp tests/golden/fidelity/vllm-aggregates.json tests/golden/fidelity/bench.json "$d/" ;;
    fuzz_bench_sglang) cp tests/golden/fidelity/sglang-bench.jsonl "$d/" ;;
    fuzz_aiperf) cp tests/golden/fidelity/aiperf.jsonl "$d/" ;;
    fuzz_series_prom)
      cp tests/golden/fidelity/prom-dump.txt tests/golden/fidelity/sglang.om tests/golden/fidelity/timeseries.csv "$d/"
      printf 'vllm:num_requests_running{engine="a,}b\\"\\\\"} NaN 1000000000000 # {x="y"} 1 2\nvllm:num_requests_waiting 0 1.5e9\n' >"$d/escapes" ;;
    fuzz_series_promjson) cp tests/golden/fidelity/query-range.json "$d/" ;;
    fuzz_sim)
      for s in 1 2 3 4 5 6 7 8; do head -c $((8 + 5 * s * 7)) /dev/urandom >"$d/rand-$s"; done
      # SGLang's scheduler (tier bits 3-4 both set, fuzz_sim.c): aggregated,
      # disaggregated by vLLM's flow and by SGLang's; receive intervals
      # 1 + (h[6] >> 3) % 32; 20 requests a few ms apart.
      for hdr in '0 0 3 20 27 4 42 1' '0 1 2 9 59 7 2 0' '0 0 4 30 251 3 250 2' '0 1 0 3 219 15 129 3'; do
        python3 -c 'import sys; h = bytes(int(x) for x in sys.argv[1].split()); sys.stdout.buffer.write(h + b"".join(bytes([k % 3, 1 + k * 7 % 50, 5 + k % 40, k % 4, k * 11 % 256]) for k in range(20)))' "$hdr" >"$d/sglang-$((i++))"
      done ;;
    fuzz_steady)
      # Arrivals of a Poisson-like run, ties at the edges, one arrival, spread to the clock's range.
      python3 -c 'import struct, sys; sys.stdout.buffer.write(b"\0" + b"".join(struct.pack("<I", k * 4096 + k * 997 % 4093) for k in range(1, 41)))' >"$d/ramp"
      printf '\003\001\000\000\000\001\000\000\000\002\000\000\000\002\000\000\000\002\000\000\000\002\000\000\000\002\000\000\000\002\000\000\000\002\000\000\000\003\000\000\000\003\000\000\000' >"$d/ties"
      printf '\036\377\377\377\377' >"$d/one-late"
      printf '\036\000\000\000\000\377\377\377\377\001\000\000\000\376\377\377\377\000\000\000\200\000\000\000\000\377\377\377\377\000\000\000\000\377\377\377\377\007\000\000\000\377\377\377\177' >"$d/spread" ;;
  esac
}

# Targets run under `ulimit -v` (KiB), built without ASan (tests/fuzz/CMakeLists.txt):
# an input that grows past the memory budget is an error, never the limit reached.
vm_targets=" fuzz_search "
vm_limit_kb=${KVSIM_FUZZ_VM_KB:-1048576}
fuzzer() { # TARGET ARGS...
  local t=$1; shift
  case $vm_targets in
    *" $t "*) (ulimit -v "$vm_limit_kb"; exec "./$build/$t" -rss_limit_mb=1024 "$@") ;;
    *) "./$build/$t" -rss_limit_mb=3000 "$@" ;;
  esac
}

fail=0
passed=0
for t in $targets; do
  keep=tests/fuzz/corpus/$t
  work=$build/corpus/$t
  rm -rf "$work"
  seed "$t" "$work"
  mkdir -p "$keep"
  [ -n "$(ls -A "$keep" 2>/dev/null)" ] && cp "$keep"/* "$work/"
  log=$build/$t.log
  if [ $regress = 1 ]; then
    # Every kept input and seed once, then a short fuzz from them.
    fuzzer "$t" -timeout=20 "$work"/* >"$log" 2>&1 &&
      fuzzer "$t" -max_total_time="$secs" -timeout=20 "$work" >>"$log" 2>&1 || {
        echo "fuzz: $t FAILED (log: $log)"; tail -30 "$log"; fail=$((fail + 1)); continue; }
  else
    fuzzer "$t" -max_total_time="$secs" -timeout=20 -artifact_prefix="$build/$t-" \
      "$work" >"$log" 2>&1 || {
        echo "fuzz: $t found a failing input:"; grep -E 'ERROR|SUMMARY|timeout' "$log" | head -5
        for a in "$build/$t"-*; do [ -f "$a" ] && mv "$a" "$keep/$(basename "$a")" && echo "  kept $keep/$(basename "$a")"; done
        fail=$((fail + 1)); continue; }
  fi
  echo "fuzz: $t clean: $(grep -Eo '#[0-9]+.*(DONE|pulse).*' "$log" | tail -1)"
  passed=$((passed + 1))
done
echo "fuzz: $passed passed, $fail failed"
exit $((fail > 0))
