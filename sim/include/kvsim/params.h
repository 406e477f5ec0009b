/* The parameter registry: every scenario parameter that kvsim checks, once,
 * with its scenario key, the calc flag that sets it, its type, the bounds
 * of a given value, its default rule, the profiles that read it and one
 * line of doc. The scenario parser, the typed setters, `--set` and sweep
 * key checks, calc's flags, the memory plan's checks and the generated
 * table of docs/scenario.md all read this one table (sim/src/core/params.c).
 * An error about one parameter carries its id (kvsim/error.h), so each
 * caller names the key or the flag itself. */
#ifndef KVSIM_PARAMS_H
#define KVSIM_PARAMS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kvsim/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The limits that more than one parameter or check shares, defined once. */
/* TP and PP degrees: 128 nodes of 8 GPUs. */
#define KVSIM_MAX_PARALLEL 1024
/* Replicas (data-parallel engines) of one deployment, and so the largest
 * replica count a diagnosis proposes. */
#define KVSIM_MAX_REPLICAS 4096
/* Tokens per KV block or page: far above any engine's default (vLLM 16,
 * its MLA backends 64 or 128) while a page's bytes stay exact in int64. */
#define KVSIM_MAX_BLOCK_SIZE 4096
/* LoRA slots: vllm/config/lora.py has no upper bound on max_loras; every
 * slot is preallocated on every layer, so 4096 is far above what fits. */
#define KVSIM_MAX_LORAS 4096
/* vllm/config/lora.py MaxLoRARanks' largest. */
#define KVSIM_MAX_LORA_RANK 512
/* perf.step_time_scale and its kin (a multiplier of step times): a factor
 * of 1e6 makes a run of minutes one of weeks, and its time series as long. */
#define KVSIM_STEP_SCALE_MIN 0.01
#define KVSIM_STEP_SCALE_MAX 100.0
/* A KV quantization scale group wider than any head vector is one group per head. */
#define KVSIM_MAX_QUANT_GROUP (1 << 20)
/* workload.synthetic.priority.levels: the weights are held in a fixed array. */
#define KVSIM_MAX_PRIORITY_LEVELS 64

typedef enum kvsim_param_id {
  KVSIM_PARAM_NONE = 0,
  /* top level */
  KVSIM_PARAM_SEED,
  KVSIM_PARAM_MODEL,
  /* hardware */
  KVSIM_PARAM_GPU,
  KVSIM_PARAM_GPU_MEMORY_GIB,
  KVSIM_PARAM_TENSOR_PARALLEL_SIZE,
  KVSIM_PARAM_PIPELINE_PARALLEL_SIZE,
  KVSIM_PARAM_REPLICAS,
  KVSIM_PARAM_ROUTER,
  KVSIM_PARAM_ROUTER_IMBALANCE,
  KVSIM_PARAM_EXPERT_PARALLEL_SIZE,
  /* engine, every profile */
  KVSIM_PARAM_PROFILE,
  KVSIM_PARAM_GPU_MEMORY_UTILIZATION,
  KVSIM_PARAM_MAX_MODEL_LEN,
  KVSIM_PARAM_BLOCK_SIZE,
  KVSIM_PARAM_MAX_NUM_SEQS,
  KVSIM_PARAM_MAX_NUM_BATCHED_TOKENS,
  KVSIM_PARAM_ENABLE_PREFIX_CACHING,
  KVSIM_PARAM_ENABLE_CHUNKED_PREFILL,
  KVSIM_PARAM_KV_CACHE_DTYPE,
  KVSIM_PARAM_KV_QUANT_GROUP,
  KVSIM_PARAM_KV_RESIDUAL_TOKENS,
  KVSIM_PARAM_DTYPE,
  KVSIM_PARAM_QUANTIZATION,
  KVSIM_PARAM_NUM_GPU_BLOCKS_OVERRIDE,
  KVSIM_PARAM_KV_CACHE_MEMORY_BYTES,
  KVSIM_PARAM_ENFORCE_EAGER,
  KVSIM_PARAM_ESTIMATE_CUDAGRAPHS,
  KVSIM_PARAM_DISABLE_HYBRID_KV_CACHE_MANAGER,
  KVSIM_PARAM_SCHEDULING_POLICY,
  KVSIM_PARAM_PREEMPTION_MODE,
  KVSIM_PARAM_SWAP_SPACE,
  KVSIM_PARAM_KV_OFFLOADING_SIZE,
  KVSIM_PARAM_OFFLOAD_STORE_THRESHOLD,
  KVSIM_PARAM_TRANSFER_OVERLAP,
  KVSIM_PARAM_QUANT_STEP_FACTOR,
  KVSIM_PARAM_WEIGHTS_GIB,
  KVSIM_PARAM_ACTIVATION_GIB,
  KVSIM_PARAM_NON_TORCH_GIB,
  KVSIM_PARAM_CUDA_GRAPH_GIB,
  KVSIM_PARAM_VLLM_VERSION,
  KVSIM_PARAM_ENABLE_LORA,
  KVSIM_PARAM_MAX_LORAS,
  KVSIM_PARAM_MAX_LORA_RANK,
  KVSIM_PARAM_MAX_CPU_LORAS,
  KVSIM_PARAM_FULLY_SHARDED_LORAS,
  KVSIM_PARAM_SPECULATIVE,
  /* engine, one profile's own options (parsed by the profile, sched/) */
  KVSIM_PARAM_MEM_FRACTION_STATIC,
  KVSIM_PARAM_PAGE_SIZE,
  KVSIM_PARAM_MAX_TOTAL_TOKENS,
  KVSIM_PARAM_MAX_RUNNING_REQUESTS,
  KVSIM_PARAM_CHUNKED_PREFILL_SIZE,
  KVSIM_PARAM_MAX_PREFILL_TOKENS,
  KVSIM_PARAM_GPU_MEMORY_CAPACITY_MIB,
  KVSIM_PARAM_SPECULATIVE_NUM_STEPS,
  KVSIM_PARAM_SPECULATIVE_EAGLE_TOPK,
  KVSIM_PARAM_SPECULATIVE_NUM_DRAFT_TOKENS,
  KVSIM_PARAM_CUDA_MEMORY_FRACTION,
  KVSIM_PARAM_TGI_VERSION,
  KVSIM_PARAM_ATTENTION,
  KVSIM_PARAM_MAX_INPUT_TOKENS,
  KVSIM_PARAM_MAX_BATCH_PREFILL_TOKENS,
  KVSIM_PARAM_MAX_BATCH_TOTAL_TOKENS,
  KVSIM_PARAM_BATCH,
  KVSIM_PARAM_MAX_CACHE_LEN,
  KVSIM_PARAM_NBITS,
  KVSIM_PARAM_Q_GROUP_SIZE,
  KVSIM_PARAM_RESIDUAL_LENGTH,
  KVSIM_PARAM_CACHE,
  KVSIM_PARAM_SCHEDULE_POLICY,
  KVSIM_PARAM_SCHEDULE_CONSERVATIVENESS,
  KVSIM_PARAM_SCHEDULER_RECV_INTERVAL,
  KVSIM_PARAM_WAITING_SERVED_RATIO,
  KVSIM_PARAM_MAX_WAITING_TOKENS,
  KVSIM_PARAM_RESERVE_MAX_TOTAL_TOKENS,
  KVSIM_PARAM_WATERMARK,
  KVSIM_PARAM_LONG_PREFILL_TOKEN_THRESHOLD,
  KVSIM_PARAM_ORACLE_LENGTHS,
  /* slo, output, admission, perf */
  KVSIM_PARAM_TTFT_P99_S,
  KVSIM_PARAM_TPOT_P99_S,
  KVSIM_PARAM_E2E_P99_S,
  KVSIM_PARAM_SAMPLE_INTERVAL_S,
  KVSIM_PARAM_MAX_TIME_S,
  KVSIM_PARAM_MAX_PROMPT_TOKENS,
  KVSIM_PARAM_MAX_OUTPUT_TOKENS,
  KVSIM_PARAM_MAX_QUEUE_LENGTH,
  KVSIM_PARAM_MAX_WAIT_S,
  KVSIM_PARAM_STEP_TIME_SCALE,
  KVSIM_PARAM_PREFILL_TIME_SCALE,
  /* disaggregation: the block, each side's own keys, the link */
  KVSIM_PARAM_DISAGG_FLOW,
  KVSIM_PARAM_DISAGG_TRANSFER,
  KVSIM_PARAM_DISAGG_PREFILL,
  KVSIM_PARAM_DISAGG_PREFILL_GPU,
  KVSIM_PARAM_DISAGG_PREFILL_TP,
  KVSIM_PARAM_DISAGG_PREFILL_REPLICAS,
  KVSIM_PARAM_DISAGG_PREFILL_ROUTER,
  KVSIM_PARAM_DISAGG_PREFILL_ENGINE,
  KVSIM_PARAM_DISAGG_DECODE,
  KVSIM_PARAM_DISAGG_DECODE_GPU,
  KVSIM_PARAM_DISAGG_DECODE_TP,
  KVSIM_PARAM_DISAGG_DECODE_REPLICAS,
  KVSIM_PARAM_DISAGG_DECODE_ROUTER,
  KVSIM_PARAM_DISAGG_DECODE_ENGINE,
  KVSIM_PARAM_DISAGG_LINK,
  KVSIM_PARAM_DISAGG_LINK_KIND,
  KVSIM_PARAM_DISAGG_LINK_BANDWIDTH_GBPS,
  KVSIM_PARAM_DISAGG_LINK_LATENCY_US,
  /* workload: the trace's keys, then the synthetic generator's (workload/config.c) */
  KVSIM_PARAM_WL_TRACE,
  KVSIM_PARAM_WL_SYNTHETIC,
  KVSIM_PARAM_WL_FORMAT,
  KVSIM_PARAM_WL_TIME_SCALE,
  KVSIM_PARAM_WL_LIMIT,
  KVSIM_PARAM_WL_SKIP_BAD_ROWS,
  KVSIM_PARAM_WL_MAX_TOTAL_TOKENS,
  KVSIM_PARAM_WL_HASH_BLOCK_TOKENS,
  KVSIM_PARAM_WL_RATE,
  KVSIM_PARAM_WL_REQUESTS,
  KVSIM_PARAM_WL_DURATION_S,
  KVSIM_PARAM_WL_ARRIVAL,
  KVSIM_PARAM_WL_ARRIVAL_PROCESS,
  KVSIM_PARAM_WL_ARRIVAL_RATE,
  KVSIM_PARAM_WL_ARRIVAL_CV,
  KVSIM_PARAM_WL_ARRIVAL_CLIENTS,
  KVSIM_PARAM_WL_ARRIVAL_THINK_S,
  KVSIM_PARAM_WL_ARRIVAL_BURST_RATE,
  KVSIM_PARAM_WL_ARRIVAL_BURST_S,
  KVSIM_PARAM_WL_ARRIVAL_PERIOD_S,
  KVSIM_PARAM_WL_ARRIVAL_AMPLITUDE,
  KVSIM_PARAM_WL_ARRIVAL_PHASE_S,
  KVSIM_PARAM_WL_PROMPT_TOKENS,
  KVSIM_PARAM_WL_OUTPUT_TOKENS,
  KVSIM_PARAM_WL_LENGTHS_FROM,
  KVSIM_PARAM_WL_PREFIX,
  KVSIM_PARAM_WL_PREFIX_SHARED_TOKENS,
  KVSIM_PARAM_WL_PREFIX_GROUPS,
  KVSIM_PARAM_WL_PREFIX_FRACTION,
  KVSIM_PARAM_WL_FEW_SHOT,
  KVSIM_PARAM_WL_FEW_SHOT_TEMPLATES,
  KVSIM_PARAM_WL_FEW_SHOT_TOKENS,
  KVSIM_PARAM_WL_FEW_SHOT_FRACTION,
  KVSIM_PARAM_WL_SESSIONS,
  KVSIM_PARAM_WL_SESSIONS_TURNS,
  KVSIM_PARAM_WL_SESSIONS_THINK_S,
  KVSIM_PARAM_WL_SESSIONS_USER_TOKENS,
  KVSIM_PARAM_WL_SESSIONS_MAX_CONTEXT,
  KVSIM_PARAM_WL_TENANTS,
  KVSIM_PARAM_WL_TENANTS_COUNT,
  KVSIM_PARAM_WL_PRIORITY,
  KVSIM_PARAM_WL_PRIORITY_LEVELS,
  KVSIM_PARAM_WL_PRIORITY_WEIGHTS,
  KVSIM_PARAM_WL_LORA,
  KVSIM_PARAM_WL_LORA_ADAPTERS,
  KVSIM_PARAM_WL_LORA_FRACTION,
  KVSIM_PARAM_COUNT
} kvsim_param_id;

typedef enum kvsim_param_type {
  KVSIM_PARAM_INT,    /* an integer */
  KVSIM_PARAM_NUM,    /* a number */
  KVSIM_PARAM_BOOL,   /* true or false */
  KVSIM_PARAM_STR,    /* a string (a name from a fixed set, a path, a release) */
  KVSIM_PARAM_OBJECT, /* a JSON object with keys of its own */
} kvsim_param_type;

/* kvsim_param_t.flags */
enum {
  /* The plan takes 0 for "the engine's default" (or "off"), so a given
   * value must be >= min while the plan also accepts 0. */
  KVSIM_PARAM_ZERO_DEFAULT = 1,
  /* A given value below min reads "must be >= MIN (leave the key out for
   * the default)": a 0 written would otherwise silently be the default. */
  KVSIM_PARAM_DEFAULT_NOTE = 2,
  /* A value below min reads "must be >= MIN" rather than "out of range". */
  KVSIM_PARAM_MIN_WORDING = 4,
  /* One profile's own option: its profile parses it (sched/), so it is not
   * among the engine keys every profile shares. */
  KVSIM_PARAM_PROFILE_OPTION = 8,
  /* min is excluded from the range: (min, max]. */
  KVSIM_PARAM_MIN_OPEN = 16,
  /* 0 means no limit: said after the range, "(0: no limit)". */
  KVSIM_PARAM_ZERO_NO_LIMIT = 32,
  /* A size in GiB: "NAME: V GiB is out of range [MIN, MAX]". */
  KVSIM_PARAM_UNIT_GIB = 64,
  /* max is excluded from the range: [min, max) or (min, max). */
  KVSIM_PARAM_MAX_OPEN = 128,
};

typedef struct kvsim_param {
  kvsim_param_id id;
  const char *key;         /* scenario key path, "engine.block_size" */
  const char *flag;        /* the calc flag (vLLM's spelling where vLLM has one), NULL if none */
  const char *flags_other; /* other engines' calc flags for it, "sglang --tp-size", or NULL */
  kvsim_param_type type;
  /* Bounds of a given INT or NUM value, inclusive (see MIN_OPEN, MAX_OPEN); exact
   * as doubles (every integer bound is below 2^53). */
  double min, max;
  unsigned flags;
  const char *dflt;     /* the default rule, one phrase */
  const char *profiles; /* the profiles that read it: "all", "vllm-v1, vllm-v0" */
  const char *doc;      /* one line; calc's --help line where calc has the flag */
} kvsim_param_t;

/* The row of id; NULL for KVSIM_PARAM_NONE or an id out of range. */
const kvsim_param_t *kvsim_param_get(int id);
/* The row whose key is key_path ("engine.block_size"), NULL if none. */
const kvsim_param_t *kvsim_param_by_key(const char *key_path);
/* The row whose calc flag is flag ("--block-size"), NULL if none. */
const kvsim_param_t *kvsim_param_by_flag(const char *flag);
/* The last part of the row's key ("block_size"). */
const char *kvsim_param_leaf(const kvsim_param_t *p);
/* How a given value below min is told apart: " (leave the key out for the
 * default)" for DEFAULT_NOTE rows, "" otherwise. */
const char *kvsim_param_note(const kvsim_param_t *p);

/* Whether v lies in the row's bounds. */
bool kvsim_param_in_range(const kvsim_param_t *p, double v);

/* The range check of a given integer, named `name` (the key path with its
 * file, or the flag): KVSIM_EINVAL "NAME: V is out of range [MIN, MAX]"
 * with the parameter's id (kvsim/error.h), else KVSIM_OK. */
int kvsim_param_check_int(int id, int64_t v, const char *name, kvsim_err *err);
/* The memory plan's range of the same integer: a ZERO_DEFAULT row also
 * takes 0 (the engine's default), and names its range [0, MAX]. */
int kvsim_param_check_plan_int(int id, int64_t v, const char *name, kvsim_err *err);
/* The same for a number: "NAME: V is outside [MIN, MAX]" ("(MIN" and "MAX)" for
 * MIN_OPEN and MAX_OPEN rows, then " (0: no limit)" for ZERO_NO_LIMIT rows; "V GiB is
 * out of range [MIN, MAX]" for UNIT_GIB rows), or for MIN_WORDING rows
 * below min "NAME: V must be >= MIN". */
int kvsim_param_check_num(int id, double v, const char *name, kvsim_err *err);

/* The calc context's name of a parameter: "FLAG (KEY)", or KEY without a
 * flag. Written into buf (cap bytes); returns buf. */
const char *kvsim_param_calc_name(int id, char *buf, size_t cap);

/* The registry as the Markdown table of docs/scenario.md (one row per
 * parameter: key, type, range, default, profiles, calc flag, doc). */
void kvsim_param_markdown(FILE *out);

#ifdef __cplusplus
}
#endif

#endif
