/* The parameter registry's one table (kvsim/params.h) and its checks. A
 * bound, a key, a flag or a doc line of a scenario parameter is written
 * here and nowhere else; the readers (engine/scenario.c, override.c,
 * scenario_keys.c, memory/plan.c, the calc tables of report/) take them
 * from here. Rows of each section are in the order the scenario's key
 * lists had, so that "did you mean" suggestions keep their ties. */
#include "kvsim/params.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/clock.h"
#include "kvsim/plan.h"

#define I KVSIM_PARAM_INT
#define N KVSIM_PARAM_NUM
#define B KVSIM_PARAM_BOOL
#define S KVSIM_PARAM_STR
#define O KVSIM_PARAM_OBJECT
#define ZD (KVSIM_PARAM_ZERO_DEFAULT | KVSIM_PARAM_DEFAULT_NOTE)
#define ZNL KVSIM_PARAM_ZERO_NO_LIMIT
#define GIB (KVSIM_PARAM_MIN_WORDING | KVSIM_PARAM_UNIT_GIB)
#define MW KVSIM_PARAM_MIN_WORDING
#define PO KVSIM_PARAM_PROFILE_OPTION
/* A profile's option whose 0 the plan takes for the engine's automatic value. */
#define POZ (KVSIM_PARAM_PROFILE_OPTION | KVSIM_PARAM_ZERO_DEFAULT)
#define MO KVSIM_PARAM_MIN_OPEN
#define CTX ((double)KVSIM_MODEL_MAX_CONTEXT)
#define JMAX ((double)KVSIM__JSON_INT_MAX)
#define V01 "vllm-v1, vllm-v0"
#define ALL "all"
/* The profiles with a KV connector, the only ones a disaggregated side takes. */
#define KVC "vllm-v1, sglang"
#define P(id, key, flag, other, type, lo, hi, fl, dflt, prof, doc)                                 \
  [KVSIM_PARAM_##id] = {KVSIM_PARAM_##id, key, flag, other, type, lo, hi, fl, dflt, prof, doc}

/* One side of a disaggregated deployment: the object and its own keys. A
 * side's TP and replicas share the hardware section's limits. */
#define SIDE(S_, name)                                                                             \
  P(DISAGG_##S_, "disaggregation." name, NULL, NULL, O, 0, 0, 0, "required", KVC,                  \
    "the " name " group: the scenario with these keys laid over it"),                              \
      P(DISAGG_##S_##_GPU, "disaggregation." name ".gpu", NULL, NULL, S, 0, 0, 0, "hardware.gpu",  \
        KVC, "the " name " side's GPU"),                                                           \
      P(DISAGG_##S_##_TP, "disaggregation." name ".tensor_parallel_size", NULL, NULL, I, 1,        \
        KVSIM_MAX_PARALLEL, 0, "hardware.tensor_parallel_size", KVC,                               \
        "TP degree of each " name " instance"),                                                    \
      P(DISAGG_##S_##_REPLICAS, "disaggregation." name ".replicas", NULL, NULL, I, 1,              \
        KVSIM_MAX_REPLICAS, 0, "1", KVC,                                                           \
        name " instances per deployment unit (hardware.replicas is then an error)"),               \
      P(DISAGG_##S_##_ROUTER, "disaggregation." name ".router", NULL, NULL, S, 0, 0, 0,            \
        "hardware.router", KVC, "how requests pick a " name " instance (as hardware.router)"),     \
      P(DISAGG_##S_##_ENGINE, "disaggregation." name ".engine", NULL, NULL, O, 0, 0, 0, "none",    \
        KVC, "engine keys laid over the scenario's engine for the " name " side")

static const kvsim_param_t table[KVSIM_PARAM_COUNT] = {
    P(SEED, "seed", NULL, NULL, I, 0, JMAX, MW, "1", ALL, "seed of the run's one random generator"),
    P(MODEL, "model", "--model", NULL, S, 0, 0, 0, "required", ALL,
      "catalog name, HF id or path to config.json"),
    P(GPU, "hardware.gpu", "--gpu", NULL, S, 0, 0, 0, "h100-sxm", ALL,
      "catalog name or path to a GPU JSON"),
    P(GPU_MEMORY_GIB, "hardware.gpu_memory_gib", "--gpu-memory-gib", NULL, N,
      KVSIM_GPU_MEMORY_MIN_GIB, (double)KVSIM_GPU_MAX_MEMORY_BYTES / KVSIM_GIB, 0, "the GPU's", ALL,
      "override the GPU's total memory (the engine's total_gpu_memory)"),
    P(TENSOR_PARALLEL_SIZE, "hardware.tensor_parallel_size", "--tensor-parallel-size",
      "sglang --tp-size, tgi --num-shard", I, 1, KVSIM_MAX_PARALLEL, 0, "1", ALL,
      "TP degree (default 1)"),
    P(PIPELINE_PARALLEL_SIZE, "hardware.pipeline_parallel_size", "--pipeline-parallel-size", NULL,
      I, 1, KVSIM_MAX_PARALLEL, 0, "1", ALL, "PP degree (default 1)"),
    P(REPLICAS, "hardware.replicas", NULL, NULL, I, 1, KVSIM_MAX_REPLICAS, 0, "1", ALL,
      "engine instances (data-parallel replicas) behind the router"),
    P(ROUTER, "hardware.router", NULL, NULL, S, 0, 0, 0, "round_robin", ALL,
      "round_robin, least_loaded, least_kv or prefix_affinity"),
    P(ROUTER_IMBALANCE, "hardware.router_imbalance", NULL, NULL, I, 0, INT32_MAX, 0, "16", ALL,
      "prefix_affinity leaves a replica more than this many requests above the least loaded"),
    /* ep = tp x data-parallel ranks, and the ranks are replicas. */
    P(EXPERT_PARALLEL_SIZE, "hardware.expert_parallel_size", NULL, NULL, I, 1,
      (double)KVSIM_MAX_PARALLEL *KVSIM_MAX_REPLICAS, KVSIM_PARAM_ZERO_DEFAULT, "1 (off)", V01,
      "experts spread over tensor_parallel_size x some replicas (--enable-expert-parallel)"),
    P(PROFILE, "engine.profile", "--engine", NULL, S, 0, 0, 0, "vllm-v1", ALL,
      "the engine profile (docs/engines.md)"),
    P(GPU_MEMORY_UTILIZATION, "engine.gpu_memory_utilization", "--gpu-memory-utilization", NULL, N,
      0, 1, MO, "0.9", V01, "fraction of total memory for the instance (default 0.9)"),
    P(MAX_MODEL_LEN, "engine.max_model_len", "--max-model-len", "sglang --context-length", I, 1,
      CTX, ZD, "the model's max_position_embeddings", ALL,
      "context length, 8192 or 8k/8K as vLLM (default: the model's max_position_embeddings)"),
    P(BLOCK_SIZE, "engine.block_size", "--block-size", NULL, I, 1, KVSIM_MAX_BLOCK_SIZE, ZD,
      "16 (MLA: 64 on Hopper, 128 on Blackwell)", V01, "tokens per KV block (default 16)"),
    P(MAX_NUM_SEQS, "engine.max_num_seqs", "--max-num-seqs", NULL, I, 1,
      (double)KVSIM_PLAN_MAX_SEQS, ZD, "the engine's for this GPU", V01,
      "default: the engine's for this GPU"),
    P(MAX_NUM_BATCHED_TOKENS, "engine.max_num_batched_tokens", "--max-num-batched-tokens", NULL, I,
      1, CTX, ZD, "the engine's for this GPU", V01, "default: the engine's for this GPU"),
    P(ENABLE_PREFIX_CACHING, "engine.enable_prefix_caching", "--enable-prefix-caching", NULL, B, 0,
      0, 0, "the profile's", ALL, "accepted for pasted serve commands (no effect on the plan)"),
    P(ENABLE_CHUNKED_PREFILL, "engine.enable_chunked_prefill", "--enable-chunked-prefill", NULL, B,
      0, 0, 0, "the engine's", V01, "V0: profile with chunked prefill"),
    P(KV_CACHE_DTYPE, "engine.kv_cache_dtype", "--kv-cache-dtype", NULL, S, 0, 0, 0, "auto", ALL,
      "auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, int8, int4"),
    P(KV_QUANT_GROUP, "engine.kv_quant_group", "--kv-quant-group", NULL, I, 1,
      KVSIM_MAX_QUANT_GROUP, 0, "64", V01,
      "int8/int4 cache: elements per scale group (default 64)"),
    P(KV_RESIDUAL_TOKENS, "engine.kv_residual_tokens", "--kv-residual-tokens", NULL, I, 0, CTX, MW,
      "128", V01, "int8/int4 cache: recent tokens kept unquantized (default 128)"),
    P(DTYPE, "engine.dtype", "--dtype", NULL, S, 0, 0, 0, "auto", ALL,
      "auto, bfloat16, float16, float32 (weights and auto KV)"),
    P(QUANTIZATION, "engine.quantization", "--quantization", NULL, S, 0, 0, 0, "the model's", ALL,
      "weight quantization: none, fp8, int8, awq, gptq, int4, mxfp4"),
    P(NUM_GPU_BLOCKS_OVERRIDE, "engine.num_gpu_blocks_override", "--num-gpu-blocks-override", NULL,
      I, 1, (double)KVSIM_PLAN_MAX_BLOCKS, ZD, "the profiled pool", V01, "use this many blocks"),
    P(KV_CACHE_MEMORY_BYTES, "engine.kv_cache_memory_bytes", "--kv-cache-memory-bytes", NULL, I, 1,
      (double)KVSIM_GPU_MAX_MEMORY_BYTES, ZD, "profiled", "vllm-v1",
      "bypass profiling: KV budget in bytes"),
    P(ENFORCE_EAGER, "engine.enforce_eager", "--enforce-eager", NULL, B, 0, 0, 0, "false", V01,
      "no CUDA graphs"),
    P(ESTIMATE_CUDAGRAPHS, "engine.estimate_cudagraphs", "--estimate-cudagraphs", NULL, B, 0, 0, 0,
      "false", "vllm-v1",
      "subtract CUDA-graph memory (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1, default from "
      "~v0.21)"),
    P(DISABLE_HYBRID_KV_CACHE_MANAGER, "engine.disable_hybrid_kv_cache_manager",
      "--disable-hybrid-kv-cache-manager", NULL, B, 0, 0, 0, "false", "vllm-v1",
      "treat sliding-window layers as full attention"),
    P(SCHEDULING_POLICY, "engine.scheduling_policy", NULL, NULL, S, 0, 0, 0, "fcfs", ALL,
      "fcfs or priority"),
    P(PREEMPTION_MODE, "engine.preemption_mode", NULL, NULL, S, 0, 0, 0, "recompute", V01,
      "recompute or swap (V0)"),
    P(SWAP_SPACE, "engine.swap_space", "--swap-space", NULL, N, 0, KVSIM_PLAN_MAX_GIB, GIB,
      "the profile's", "vllm-v0", "V0: CPU swap space in GiB per GPU (reports # CPU blocks)"),
    P(KV_OFFLOADING_SIZE, "engine.kv_offloading_size", "--kv-offloading-size", NULL, N, 0,
      KVSIM_PLAN_MAX_HOST_GIB, GIB, "0 (off)", "vllm-v1",
      "V1: CPU offload buffer in GiB, total over TP ranks (reports its blocks)"),
    /* Compared with 32-bit lookup counts (memory/kvcache_lookup.c). */
    P(OFFLOAD_STORE_THRESHOLD, "engine.offload_store_threshold", NULL, NULL, I, 0, UINT32_MAX, MW,
      "0 (every block stored)", "vllm-v1", "lookups before a block is offloaded to the CPU tier"),
    P(TRANSFER_OVERLAP, "engine.transfer_overlap", NULL, NULL, B, 0, 0, 0, "the profile's", V01,
      "whether a step's KV transfers overlap its compute"),
    P(QUANT_STEP_FACTOR, "engine.quant_step_factor", NULL, NULL, N, KVSIM_STEP_SCALE_MIN,
      KVSIM_STEP_SCALE_MAX, 0, "1", ALL, "step-time factor for a quantized KV cache"),
    P(WEIGHTS_GIB, "engine.weights_gib", "--weights-gib", NULL, N, 0, KVSIM_PLAN_MAX_GIB, GIB,
      "predicted", V01, "measured weights (GiB) instead of the prediction"),
    P(ACTIVATION_GIB, "engine.activation_gib", "--activation-gib", NULL, N, 0, KVSIM_PLAN_MAX_GIB,
      GIB, "predicted", V01, "measured activation peak (GiB)"),
    P(NON_TORCH_GIB, "engine.non_torch_gib", "--non-torch-gib", NULL, N, 0, KVSIM_PLAN_MAX_GIB, GIB,
      "predicted", V01, "measured non-torch memory (GiB)"),
    P(CUDA_GRAPH_GIB, "engine.cuda_graph_gib", "--cuda-graph-gib", NULL, N, 0, KVSIM_PLAN_MAX_GIB,
      GIB, "predicted", V01,
      "measured CUDA-graph memory (GiB); subtracted only with --estimate-cudagraphs"),
    P(VLLM_VERSION, "engine.vllm_version", "--vllm-version", NULL, S, 0, 0, 0,
      "the newest modelled", V01,
      "vLLM release X.Y.Z whose sizing rules apply (default: the newest modelled)"),
    P(ENABLE_LORA, "engine.enable_lora", "--enable-lora", NULL, B, 0, 0, 0, "false", V01,
      "preallocate LoRA adapter slots (counted with the weights); serve the requests' adapters"),
    P(MAX_LORAS, "engine.max_loras", "--max-loras", NULL, I, 1, KVSIM_MAX_LORAS, ZD, "1", V01,
      "LoRA slots on the GPU (default 1); vllm-v1 runs: distinct adapters per step"),
    P(MAX_LORA_RANK, "engine.max_lora_rank", "--max-lora-rank", NULL, I, 1, KVSIM_MAX_LORA_RANK, ZD,
      "16", V01, "slot rank: 1, 8, 16 (default), 32, 64, 128, 256, 320, 512"),
    P(MAX_CPU_LORAS, "engine.max_cpu_loras", "--max-cpu-loras", NULL, I, 1, KVSIM_MAX_LORAS, ZD,
      "max_loras", V01, "adapters cached in host memory (default: max_loras); vllm-v1 runs read others from disk"),
    P(FULLY_SHARDED_LORAS, "engine.fully_sharded_loras", "--fully-sharded-loras", NULL, B, 0, 0, 0,
      "false", V01, "shard LoRA A and B over TP"),
    P(SPECULATIVE, "engine.speculative", "--speculative-config", NULL, O, 0, 0, 0, "none",
      "vllm-v1, sglang",
      "vLLM's --speculative-config, plus acceptance_rate (a run needs it); sglang: method eagle or "
      "eagle3 and model (its --speculative-algorithm and --speculative-draft-model-path)"),
    P(MEM_FRACTION_STATIC, "engine.mem_fraction_static", "--mem-fraction-static", NULL, N, 0, 1,
      MO | KVSIM_PARAM_MAX_OPEN | PO, "SGLang's for the GPU", "sglang",
      "weights + KV pool as a fraction of the free memory (default: automatic)"),
    P(PAGE_SIZE, "engine.page_size", "--page-size", NULL, I, 1, KVSIM_MAX_BLOCK_SIZE, POZ, "1",
      "sglang", "tokens per page (default 1)"),
    P(MAX_TOTAL_TOKENS, "engine.max_total_tokens", "--max-total-tokens", NULL, I, 1, CTX, POZ,
      "the engine's", "sglang, tgi", "cap of the KV pool (SGLang) or of one request (TGI), tokens"),
    P(MAX_RUNNING_REQUESTS, "engine.max_running_requests", "--max-running-requests", NULL, I, 1,
      (double)KVSIM_PLAN_MAX_SEQS, POZ, "the engine's", "sglang",
      "default: min(pool // 2, req_to_token pool)"),
    P(CHUNKED_PREFILL_SIZE, "engine.chunked_prefill_size", "--chunked-prefill-size", NULL, I, -1,
      CTX, PO, "the engine's for the GPU", "sglang",
      "default: by GPU memory; -1 disables chunking"),
    P(MAX_PREFILL_TOKENS, "engine.max_prefill_tokens", "--max-prefill-tokens", NULL, I, 1, CTX, POZ,
      "16384", "sglang", "prefill budget per batch (default 16384)"),
    /* SchedulerRecvSkipper (python/sglang/srt/managers/
     * scheduler_recv_skipper.py): with N > 1 the scheduler polls for new
     * requests once its last batches' weights reach N, a decode batch
     * weighing 1 and an extend (prefill, prebuilt) batch 1000. */
    P(SCHEDULER_RECV_INTERVAL, "engine.scheduler_recv_interval", "--scheduler-recv-interval", NULL, I, 1,
      1000, POZ, "1", "sglang",
      "read new requests once N decode steps have run, or after a prefill (a disaggregated run: both sides)"),
    P(GPU_MEMORY_CAPACITY_MIB, "engine.gpu_memory_capacity_mib", "--gpu-memory-capacity-mib", NULL,
      N, 1024, (double)KVSIM_GPU_MAX_MEMORY_BYTES / 1048576.0, PO, "the GPU's", "sglang",
      "nvidia-smi's memory.total, which the automatic fraction reads (default: the runtime total)"),
    /* SGLang's EAGLE tree (server_args.py; engine.speculative names the
     * method and the draft): all three given or none (auto_choose_
     * speculative_params). The bounds keep a tree within kvsim's draft
     * limit. */
    P(SPECULATIVE_NUM_STEPS, "engine.speculative_num_steps", "--speculative-num-steps", NULL, I, 1,
      KVSIM_SPEC_MAX_TOKENS, POZ, "5", "sglang", "EAGLE draft depth (default 5)"),
    P(SPECULATIVE_EAGLE_TOPK, "engine.speculative_eagle_topk", "--speculative-eagle-topk", NULL, I,
      1, 16, POZ, "4", "sglang", "EAGLE branches per draft step (default 4)"),
    P(SPECULATIVE_NUM_DRAFT_TOKENS, "engine.speculative_num_draft_tokens",
      "--speculative-num-draft-tokens", NULL, I, 2, 64, POZ, "8", "sglang",
      "tokens verified per request and step (default 8; steps + 1 when topk is 1)"),
    P(CUDA_MEMORY_FRACTION, "engine.cuda_memory_fraction", "--cuda-memory-fraction", NULL, N, 0, 1,
      MO | PO, "1.0", "tgi", "fraction of total memory TGI may use (default 1.0)"),
    P(TGI_VERSION, "engine.tgi_version", "--tgi-version", NULL, S, 0, 0, PO, "3.3", "tgi",
      "TGI release: 2.0.0-2.4.1 (room x free memory; 4096-token launcher defaults to 2.4.0), 3.0 "
      "(wiggle room 0.95), 3.1-3.2 (0.93), 3.3+ (0.90; default)"),
    P(ATTENTION, "engine.attention", "--attention", NULL, S, 0, 0, PO, "the release's", "tgi",
      "flashinfer (default from 2.3, BLOCK_SIZE 1), flashdecoding (256), paged (16; default before "
      "2.3)"),
    P(MAX_INPUT_TOKENS, "engine.max_input_tokens", "--max-input-tokens", NULL, I, 1, CTX, POZ,
      "the server's", "tgi", "default: max_total_tokens - 1"),
    P(MAX_BATCH_PREFILL_TOKENS, "engine.max_batch_prefill_tokens", "--max-batch-prefill-tokens",
      NULL, I, 1, CTX, POZ, "the server's", "tgi", "warmup prefill budget (default 4096)"),
    P(MAX_BATCH_TOTAL_TOKENS, "engine.max_batch_total_tokens", "--max-batch-total-tokens", NULL, I,
      1, CTX, POZ, "from the warmup", "tgi", "ignored by flash models (as TGI warns)"),
    P(BATCH, "engine.batch", "--batch", NULL, I, 1, (double)KVSIM_PLAN_MAX_SEQS, PO, "1",
      "hf-transformers", "sequences per generate() batch (default 1)"),
    P(MAX_CACHE_LEN, "engine.max_cache_len", "--max-cache-len", NULL, I, 1, CTX, PO,
      "max_model_len", "hf-transformers",
      "cache length in tokens (default: max_position_embeddings)"),
    P(NBITS, "engine.nbits", "--nbits", NULL, I, 2, 4, PO, "4", "hf-transformers",
      "quantized: 2 or 4 (default 4)"),
    P(Q_GROUP_SIZE, "engine.q_group_size", "--q-group-size", NULL, I, 1, KVSIM_MAX_QUANT_GROUP, PO,
      "64", "hf-transformers", "quantized: elements per scale/zero point (default 64)"),
    P(RESIDUAL_LENGTH, "engine.residual_length", "--residual-length", NULL, I, 0, CTX, PO, "128",
      "hf-transformers", "quantized: tokens kept unquantized (default 128)"),
    /* The profiles' options below came after the others in a scenario's
     * config while they had no row; their rows keep that place. */
    P(CACHE, "engine.cache", "--cache", NULL, S, 0, 0, PO, "dynamic", "hf-transformers",
      "dynamic (default), static, quantized, offloaded"),
    P(SCHEDULE_POLICY, "engine.schedule_policy", "--schedule-policy", NULL, S, 0, 0, PO, "fcfs",
      "sglang", "fcfs (default), lpm, lof, random (a run's; no effect on the plan)"),
    /* server_args.py --schedule-conservativeness; the bounds are parse_opts'. */
    P(SCHEDULE_CONSERVATIVENESS, "engine.schedule_conservativeness", NULL, NULL, N, 1e-3, 1e3, PO,
      "1.0", "sglang", "scales the new-token ratio that admission reserves for decodes"),
    /* launcher/src/main.rs Args: --waiting-served-ratio, --max-waiting-tokens. */
    P(WAITING_SERVED_RATIO, "engine.waiting_served_ratio", NULL, NULL, N, 0, 1e6, PO, "0.3", "tgi",
      "without chunking, a new batch forms once it has batch size x this many entries"),
    P(MAX_WAITING_TOKENS, "engine.max_waiting_tokens", NULL, NULL, I, 0, CTX, PO, "20", "tgi",
      "without chunking, decode steps after which a new batch forms whatever its size"),
    P(RESERVE_MAX_TOTAL_TOKENS, "engine.reserve_max_total_tokens", NULL, NULL, B, 0, 0, PO, "false",
      "tgi", "max_new_tokens is max_total_tokens - input_length (a client that gives none)"),
    /* block_manager.py: watermark = 0.01 (a fraction in [0, 1)). */
    P(WATERMARK, "engine.watermark", NULL, NULL, N, 0, 1, KVSIM_PARAM_MAX_OPEN | PO, "0.01",
      "vllm-v0", "fraction of blocks kept free when admitting a request"),
    P(LONG_PREFILL_TOKEN_THRESHOLD, "engine.long_prefill_token_threshold", NULL, NULL, I, 0, JMAX,
      PO, "0 (off)", "vllm-v1", "a prefill's chunk per step is capped at this many tokens"),
    P(ORACLE_LENGTHS, "engine.oracle_lengths", NULL, NULL, B, 0, 0, PO, "false", "contiguous",
      "Orca (Oracle): reserve each request's true length, not max_model_len"),
    P(TTFT_P99_S, "slo.ttft_p99_s", NULL, NULL, N, 0, KVSIM_TIME_MAX_S, MO, "none", ALL,
      "p99 time-to-first-token target, seconds"),
    P(TPOT_P99_S, "slo.tpot_p99_s", NULL, NULL, N, 0, KVSIM_TIME_MAX_S, MO, "none", ALL,
      "p99 time-per-output-token target, seconds"),
    P(E2E_P99_S, "slo.e2e_p99_s", NULL, NULL, N, 0, KVSIM_TIME_MAX_S, MO, "none", ALL,
      "p99 end-to-end latency target, seconds"),
    P(SAMPLE_INTERVAL_S, "output.sample_interval_s", NULL, NULL, N, 1e-3, 86400, 0, "1", ALL,
      "time-series period, seconds"),
    P(MAX_TIME_S, "output.max_time_s", NULL, NULL, N, 0, KVSIM_TIME_MAX_S, ZNL, "0 (no limit)", ALL,
      "stop simulating at this time, seconds"),
    P(MAX_PROMPT_TOKENS, "admission.max_prompt_tokens", NULL, NULL, I, 0, JMAX, MW, "0 (no limit)",
      ALL, "longer prompts are rejected"),
    P(MAX_OUTPUT_TOKENS, "admission.max_output_tokens", NULL, NULL, I, 0, JMAX, MW, "0 (no limit)",
      ALL, "requests asking for more output are rejected"),
    P(MAX_QUEUE_LENGTH, "admission.max_queue_length", NULL, NULL, I, 0, JMAX, MW, "0 (no limit)",
      ALL, "waiting requests per replica before new ones are rejected"),
    P(MAX_WAIT_S, "admission.max_wait_s", NULL, NULL, N, 0, KVSIM_TIME_MAX_S, ZNL, "0 (no limit)",
      ALL, "a request still waiting after this long is rejected, seconds"),
    P(STEP_TIME_SCALE, "perf.step_time_scale", NULL, NULL, N, KVSIM_STEP_SCALE_MIN,
      KVSIM_STEP_SCALE_MAX, 0, "1", ALL, "every step's duration is multiplied by it"),
    P(PREFILL_TIME_SCALE, "perf.prefill_time_scale", NULL, NULL, N, KVSIM_STEP_SCALE_MIN,
      KVSIM_STEP_SCALE_MAX, 0, "step_time_scale", ALL,
      "multiplies the prefill tokens' share of each step's duration instead"),
    /* The disaggregation block (engine/disagg_cfg.c). Its rows at each
     * level are in the order the block's key lists had, for "did you mean"
     * ties; each side's keys are read in the side's place, then laid over
     * the scenario and checked again as the side's hardware and engine. */
    P(DISAGG_FLOW, "disaggregation.flow", NULL, NULL, S, 0, 0, 0,
      "the profile's engine (sglang for sglang, else vllm)", KVC,
      "KV hand-off: vllm (connector, blocks kept until pulled) or sglang (bootstrap, decode "
      "pre-allocation)"),
    P(DISAGG_TRANSFER, "disaggregation.transfer", NULL, NULL, S, 0, 0, 0,
      "the prefill profile's (chunk for sglang under the sglang flow, else request)", KVC,
      "what one transfer moves: request (the whole KV after the prefill), chunk (each "
      "chunked-prefill chunk's KV as computed; sglang flow only) or layer (each layer's KV as "
      "its forward ends, a step's time split evenly over the layers; vllm flow only)"),
    SIDE(PREFILL, "prefill"),
    SIDE(DECODE, "decode"),
    P(DISAGG_LINK, "disaggregation.link", NULL, NULL, O, 0, 0, 0, "infiniband's defaults", KVC,
      "the KV-transfer link between the sides: kind, bandwidth_GBps, latency_us"),
    P(DISAGG_LINK_KIND, "disaggregation.link.kind", NULL, NULL, S, 0, 0, 0, "infiniband", KVC,
      "nvlink (within a node), infiniband or roce (between nodes)"),
    /* From 0.1 GB/s (a 1 GbE fallback) to 10 TB/s (past NVLink 5's 1.8 TB/s both ways). */
    P(DISAGG_LINK_BANDWIDTH_GBPS, "disaggregation.link.bandwidth_GBps", NULL, NULL, N, 0.1, 10000,
      0, "the kind's: nvlink 0.84 x the GPU's spec link, infiniband and roce 43", KVC,
      "GB/s per GPU and direction (a transfer uses min(prefill TP, decode TP) lanes)"),
    /* Up to 1 s per transfer. */
    P(DISAGG_LINK_LATENCY_US, "disaggregation.link.latency_us", NULL, NULL, N, 0, 1e6, 0,
      "the kind's: nvlink 10, infiniband and roce 30", KVC,
      "fixed time per transfer, microseconds"),
    /* ---- workload (workload/config.c; its wording, these bounds) ---- */
    /* Seconds stay below KVSIM_TIME_MAX_S so that a time in nanoseconds,
     * and a sum of two, fit in int64; rates are bounded so that a gap
     * (1 / rate) is a number of seconds we can hold. */
    P(WL_TRACE, "workload.trace", NULL, NULL, S, 0, 0, 0, "trace or synthetic", ALL,
      "a trace file (formats: workloads/README.md); give trace or synthetic"),
    P(WL_SYNTHETIC, "workload.synthetic", NULL, NULL, O, 0, 0, 0, "trace or synthetic", ALL,
      "a synthetic generator: requests and an arrival process"),
    P(WL_FORMAT, "workload.format", NULL, NULL, S, 0, 0, 0, "auto", ALL,
      "traces: the trace's format, or auto (found by content)"),
    P(WL_TIME_SCALE, "workload.time_scale", NULL, NULL, N, 0, 1e6, MO, "1", ALL,
      "traces: every inter-arrival gap multiplied by it"),
    P(WL_LIMIT, "workload.limit", NULL, NULL, I, 1, JMAX, 0, "all", ALL,
      "traces: only the first N requests (counted after skipped rows)"),
    P(WL_SKIP_BAD_ROWS, "workload.skip_bad_rows", NULL, NULL, B, 0, 0, 0, "false", ALL,
      "traces: skip malformed rows and count them instead of failing"),
    P(WL_MAX_TOTAL_TOKENS, "workload.max_total_tokens", NULL, NULL, I, 2, JMAX, 0, "none", ALL,
      "clip each request so prompt + output <= N (the prompt first)"),
    P(WL_HASH_BLOCK_TOKENS, "workload.hash_block_tokens", NULL, NULL, I, 1, JMAX, 0, "512", ALL,
      "traces: tokens per Mooncake hash id"),
    P(WL_RATE, "workload.rate", NULL, NULL, N, 1e-6, 1e9, 0, "the workload's own", ALL,
      "mean rate, req/s: replaces a trace's time_scale or the synthetic arrival rate"),
    P(WL_REQUESTS, "workload.synthetic.requests", NULL, NULL, I, 1, JMAX, 0, "no limit", ALL,
      "requests to generate (give requests or duration_s or both)"),
    P(WL_DURATION_S, "workload.synthetic.duration_s", NULL, NULL, N, 0, KVSIM_TIME_MAX_S, MO,
      "no limit", ALL, "seconds of arrivals to generate"),
    P(WL_ARRIVAL, "workload.synthetic.arrival", NULL, NULL, O, 0, 0, 0, "required", ALL,
      "the arrival process: process and its own keys"),
    P(WL_ARRIVAL_PROCESS, "workload.synthetic.arrival.process", NULL, NULL, S, 0, 0, 0, "required",
      ALL, "poisson, gamma, constant, closed_loop, bursts or diurnal"),
    /* bursts' rate is the rate between bursts, which may be 0 (workload/config.c). */
    P(WL_ARRIVAL_RATE, "workload.synthetic.arrival.rate", NULL, NULL, N, 1e-6, 1e9, 0, "required",
      ALL, "requests per second (bursts: between bursts, from 0)"),
    P(WL_ARRIVAL_CV, "workload.synthetic.arrival.cv", NULL, NULL, N, 1e-3, 1e3, 0, "required",
      ALL, "gamma: coefficient of variation of the gaps"),
    P(WL_ARRIVAL_CLIENTS, "workload.synthetic.arrival.clients", NULL, NULL, I, 1, 1e6, 0,
      "required", ALL, "closed_loop: concurrent clients"),
    P(WL_ARRIVAL_THINK_S, "workload.synthetic.arrival.think_s", NULL, NULL, N, 0,
      KVSIM_TIME_MAX_S, 0, "0", ALL, "closed_loop: seconds before a client's next request"),
    P(WL_ARRIVAL_BURST_RATE, "workload.synthetic.arrival.burst_rate", NULL, NULL, N, 1e-6, 1e9, 0,
      "required", ALL, "bursts: requests per second in a burst"),
    P(WL_ARRIVAL_BURST_S, "workload.synthetic.arrival.burst_s", NULL, NULL, N, 0,
      KVSIM_TIME_MAX_S, MO, "required", ALL, "bursts: seconds of each burst (<= period_s)"),
    P(WL_ARRIVAL_PERIOD_S, "workload.synthetic.arrival.period_s", NULL, NULL, N, 0,
      KVSIM_TIME_MAX_S, MO, "bursts: required; diurnal: 86400", ALL,
      "bursts: seconds from one burst's start to the next; diurnal: seconds of a cycle"),
    P(WL_ARRIVAL_AMPLITUDE, "workload.synthetic.arrival.amplitude", NULL, NULL, N, 0, 1, 0,
      "required", ALL, "diurnal: the rate swings by rate x amplitude"),
    P(WL_ARRIVAL_PHASE_S, "workload.synthetic.arrival.phase_s", NULL, NULL, N, -KVSIM_TIME_MAX_S,
      KVSIM_TIME_MAX_S, 0, "0", ALL, "diurnal: the cycle shifted by this many seconds"),
    P(WL_PROMPT_TOKENS, "workload.synthetic.prompt_tokens", NULL, NULL, O, 0, 0, 0,
      "required (or lengths_from)", ALL, "prompt length distribution (workloads/README.md)"),
    P(WL_OUTPUT_TOKENS, "workload.synthetic.output_tokens", NULL, NULL, O, 0, 0, 0,
      "required (or lengths_from)", ALL, "output length distribution (workloads/README.md)"),
    P(WL_LENGTHS_FROM, "workload.synthetic.lengths_from", NULL, NULL, S, 0, 0, 0, "none", ALL,
      "a file of (prompt, output) lengths, or {\"file\": ...}, instead of the distributions"),
    P(WL_PREFIX, "workload.synthetic.prefix", NULL, NULL, O, 0, 0, 0, "none", ALL,
      "a shared system prompt (popularity, zipf_s: which group a request takes)"),
    P(WL_PREFIX_SHARED_TOKENS, "workload.synthetic.prefix.shared_tokens", NULL, NULL, I, 1, JMAX,
      0, "required", ALL, "tokens of the shared prompt"),
    P(WL_PREFIX_GROUPS, "workload.synthetic.prefix.groups", NULL, NULL, I, 1, JMAX, 0, "1", ALL,
      "distinct shared prompts"),
    P(WL_PREFIX_FRACTION, "workload.synthetic.prefix.fraction", NULL, NULL, N, 0, 1, 0, "1", ALL,
      "share of requests with a shared prompt"),
    P(WL_FEW_SHOT, "workload.synthetic.few_shot", NULL, NULL, O, 0, 0, 0, "none", ALL,
      "few-shot templates (popularity, zipf_s: which template a request takes)"),
    P(WL_FEW_SHOT_TEMPLATES, "workload.synthetic.few_shot.templates", NULL, NULL, I, 1, 1e7, 0,
      "required", ALL, "distinct templates"),
    P(WL_FEW_SHOT_TOKENS, "workload.synthetic.few_shot.tokens", NULL, NULL, O, 0, 0, 0,
      "required", ALL, "template length distribution"),
    P(WL_FEW_SHOT_FRACTION, "workload.synthetic.few_shot.fraction", NULL, NULL, N, 0, 1, 0, "1",
      ALL, "share of requests with a template"),
    P(WL_SESSIONS, "workload.synthetic.sessions", NULL, NULL, O, 0, 0, 0, "none", ALL,
      "multi-turn sessions"),
    P(WL_SESSIONS_TURNS, "workload.synthetic.sessions.turns", NULL, NULL, O, 0, 0, 0, "required",
      ALL, "turns per session: a distribution or an integer"),
    P(WL_SESSIONS_THINK_S, "workload.synthetic.sessions.think_s", NULL, NULL, N, 0,
      KVSIM_TIME_MAX_S, 0, "0", ALL, "seconds from a turn's end to the next turn"),
    P(WL_SESSIONS_USER_TOKENS, "workload.synthetic.sessions.user_tokens", NULL, NULL, O, 0, 0, 0,
      "prompt_tokens", ALL, "new user text per later turn: a distribution"),
    P(WL_SESSIONS_MAX_CONTEXT, "workload.synthetic.sessions.max_context", NULL, NULL, I, 2, JMAX,
      0, "none", ALL, "a session ends rather than send a turn past this many tokens"),
    P(WL_TENANTS, "workload.synthetic.tenants", NULL, NULL, O, 0, 0, 0, "none", ALL,
      "tenants, each its own cache salt (popularity, zipf_s: which tenant sends)"),
    P(WL_TENANTS_COUNT, "workload.synthetic.tenants.count", NULL, NULL, I, 1, INT32_MAX, 0,
      "required", ALL, "tenants"),
    P(WL_PRIORITY, "workload.synthetic.priority", NULL, NULL, O, 0, 0, 0, "none", ALL,
      "request priorities 0..levels-1 by weight, lower served first"),
    P(WL_PRIORITY_LEVELS, "workload.synthetic.priority.levels", NULL, NULL, I, 1,
      KVSIM_MAX_PRIORITY_LEVELS, 0, "required", ALL, "priority levels"),
    P(WL_PRIORITY_WEIGHTS, "workload.synthetic.priority.weights", NULL, NULL, O, 0, 0, 0,
      "all 1", ALL, "an array of levels weights >= 0, not all 0"),
    P(WL_LORA, "workload.synthetic.lora", NULL, NULL, O, 0, 0, 0, "none", ALL,
      "LoRA adapters named by the requests (popularity, zipf_s: which); needs "
      "engine.enable_lora"),
    P(WL_LORA_ADAPTERS, "workload.synthetic.lora.adapters", NULL, NULL, I, 1, INT32_MAX, 0,
      "required", ALL, "distinct adapters"),
    P(WL_LORA_FRACTION, "workload.synthetic.lora.fraction", NULL, NULL, N, 0, 1, 0, "1", ALL,
      "share of requests with an adapter (the rest use the base model)"),
};

const kvsim_param_t *kvsim_param_get(int id) {
  return id > KVSIM_PARAM_NONE && id < KVSIM_PARAM_COUNT ? &table[id] : NULL;
}

const kvsim_param_t *kvsim_param_by_key(const char *key_path) {
  for (int i = 1; i < KVSIM_PARAM_COUNT; i++)
    if (!strcmp(table[i].key, key_path))
      return &table[i];
  return NULL;
}

const kvsim_param_t *kvsim_param_by_flag(const char *flag) {
  for (int i = 1; i < KVSIM_PARAM_COUNT; i++)
    if (table[i].flag && !strcmp(table[i].flag, flag))
      return &table[i];
  return NULL;
}

const char *kvsim_param_leaf(const kvsim_param_t *p) {
  const char *dot = strrchr(p->key, '.');
  return dot ? dot + 1 : p->key;
}

const char *kvsim_param_note(const kvsim_param_t *p) {
  /* 0 is the plan's "the engine's default" (memory/plan.c), never a value to give. */
  return p->flags & KVSIM_PARAM_DEFAULT_NOTE ? " (leave the key out for the default)" : "";
}

bool kvsim_param_in_range(const kvsim_param_t *p, double v) {
  bool lo = p->flags & KVSIM_PARAM_MIN_OPEN ? v > p->min : v >= p->min;
  bool hi = p->flags & KVSIM_PARAM_MAX_OPEN ? v < p->max : v <= p->max;
  return lo && hi;
}

int kvsim_param_check_int(int id, int64_t v, const char *name, kvsim_err *err) {
  const kvsim_param_t *p = kvsim_param_get(id);
  if (kvsim_param_in_range(p, (double)v))
    return KVSIM_OK;
  return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "%lld is out of range [%lld, %lld]",
                             (long long)v, (long long)p->min, (long long)p->max);
}

int kvsim_param_check_plan_int(int id, int64_t v, const char *name, kvsim_err *err) {
  const kvsim_param_t *p = kvsim_param_get(id);
  if (!(p->flags & KVSIM_PARAM_ZERO_DEFAULT))
    return kvsim_param_check_int(id, v, name, err);
  if (v >= 0 && (double)v <= p->max)
    return KVSIM_OK;
  return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "%lld is out of range [0, %lld]",
                             (long long)v, (long long)p->max);
}

int kvsim_param_check_num(int id, double v, const char *name, kvsim_err *err) {
  const kvsim_param_t *p = kvsim_param_get(id);
  if (kvsim_param_in_range(p, v))
    return KVSIM_OK;
  if (p->flags & KVSIM_PARAM_MIN_WORDING && v < p->min)
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "%g must be >= %g", v, p->min);
  if (p->flags & KVSIM_PARAM_UNIT_GIB)
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "%g GiB is out of range [%g, %g]", v,
                               p->min, p->max);
  return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "%g is outside %c%g, %g%c%s", v,
                             p->flags & KVSIM_PARAM_MIN_OPEN ? '(' : '[', p->min, p->max,
                             p->flags & KVSIM_PARAM_MAX_OPEN ? ')' : ']',
                             p->flags & KVSIM_PARAM_ZERO_NO_LIMIT ? " (0: no limit)" : "");
}

const char *kvsim_param_calc_name(int id, char *buf, size_t cap) {
  const kvsim_param_t *p = kvsim_param_get(id);
  if (p->flag)
    snprintf(buf, cap, "%s (%s)", p->flag, p->key);
  else
    snprintf(buf, cap, "%s", p->key);
  return buf;
}

static const char *type_name(kvsim_param_type t) {
  static const char *const names[] = {"integer", "number", "boolean", "string", "object"};
  return names[t];
}

/* The range column: "[1, 4096]", "(0, 1]", or "" for a name or a switch. */
static void range_text(const kvsim_param_t *p, char *buf, size_t cap) {
  if (p->type != KVSIM_PARAM_INT && p->type != KVSIM_PARAM_NUM) {
    buf[0] = '\0';
    return;
  }
  snprintf(buf, cap, "%c%.16g, %.16g%c", p->flags & KVSIM_PARAM_MIN_OPEN ? '(' : '[', p->min,
           p->max, p->flags & KVSIM_PARAM_MAX_OPEN ? ')' : ']');
}

/* The calc flag column: "`--tensor-parallel-size`; sglang --tp-size". */
static void flag_text(const kvsim_param_t *p, char *buf, size_t cap) {
  snprintf(buf, cap, "%s%s%s%s%s", p->flag ? "`" : "", p->flag ? p->flag : "", p->flag ? "`" : "",
           p->flag && p->flags_other ? "; " : "", p->flags_other ? p->flags_other : "");
}

void kvsim_param_markdown(FILE *out) {
  fprintf(out, "| key | type | range | default | profiles | calc flag | what |\n");
  fprintf(out, "|---|---|---|---|---|---|---|\n");
  for (int i = 1; i < KVSIM_PARAM_COUNT; i++) {
    const kvsim_param_t *p = &table[i];
    char range[96], flags[160];
    range_text(p, range, sizeof range);
    flag_text(p, flags, sizeof flags);
    fprintf(out, "| `%s` | %s | %s | %s | %s | %s | %s |\n", p->key, type_name(p->type), range,
            p->dflt, p->profiles, flags, p->doc);
  }
}
