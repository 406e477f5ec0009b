/* The static memory plan, as vLLM sizes the KV cache at start-up (V1:
 * vllm/v1/worker/gpu_worker.py Worker.determine_available_memory and
 * vllm/v1/core/kv_cache_utils.py get_kv_cache_configs; V0:
 * vllm/worker/worker.py Worker.determine_num_available_blocks and
 * vllm/worker/cache_engine.py CacheEngine.get_cache_block_size). Numbers
 * are per GPU rank; the pool is the minimum over pipeline stages, like the
 * engine's unify_kv_cache_configs / min over workers.
 *
 * Which engine versions the two profiles follow:
 * - vllm-v1: the profiling of #19312 (v0.9.2+: budget = ceil(total x util)
 *   minus the increases since the init snapshot, so the CUDA context and
 *   other processes are not charged), with NCCL initialised before that
 *   snapshot as from #25359 (v0.11+: NCCL buffers not charged), the null
 *   block and the hybrid allocator, and CUDA graphs charged only with
 *   VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (--estimate-cudagraphs; the
 *   default from ~v0.21). That is the default, the newest release
 *   modelled (0.20.x); vllm_version selects V1 0.8.0-0.9.1 (non-torch incl.
 *   the context) or 0.9.2-0.10.x (NCCL charged) instead (version.c).
 * - vllm-v0: 0.6.5 to the end of V0 (#10511/#12126: increases since the
 *   baseline snapshot taken before NCCL init, so NCCL is charged; no
 *   context) by default; vllm_version 0.6.4 also charges the context;
 *   <= 0.6.3 measured total - free after the profile run; not modelled. */
#include "kvsim/plan.h"
#include "kvsim/spec.h"

#include "core/arith.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "memory/lora.h"
#include "memory/spec.h"
#include "memory/overheads.h"
#include "memory/plan_sglang.h"
#include "memory/plan_engines.h"

void kvsim_plan_params_default(kvsim_plan_params_t *p) {
  memset(p, 0, sizeof *p);
  p->engine = KVSIM_PLAN_V1;
  p->tp = p->pp = 1;
  /* vllm/config/cache.py: gpu_memory_utilization = 0.9. */
  p->gpu_memory_utilization = 0.9;
  p->enable_chunked_prefill = -1;
  p->weights_gib = p->activation_gib = p->non_torch_gib = p->cuda_graph_gib = -1;
  p->kv_quant_group = 64;
  p->kv_residual_tokens = 128;
  p->sglang.avail_gib_before_load = p->sglang.avail_gib_after_load = -1;
  /* launcher/src/main.rs: --cuda-memory-fraction 1.0; the current 3.3 line. */
  p->tgi.cuda_memory_fraction = 1.0;
  p->tgi.version_major = 3;
  p->tgi.version_minor = 3;
  /* cache_utils.py QuantizedCache: nbits=4, q_group_size=64, residual_length=128. */
  p->hf.nbits = 4;
  p->hf.q_group_size = 64;
  p->hf.residual_length = 128;
}

static const struct {
  const char *name;
  kvsim_kv_dtype d;
} kv_names[] = {{"auto", KVSIM_KV_AUTO},     {"bfloat16", KVSIM_KV_BF16}, {"float16", KVSIM_KV_FP16},
                {"half", KVSIM_KV_FP16},     {"fp8", KVSIM_KV_FP8},       {"fp8_e4m3", KVSIM_KV_FP8},
                {"fp8_e5m2", KVSIM_KV_FP8},  {"fp8_inc", KVSIM_KV_FP8},   {"int8", KVSIM_KV_INT8},
                {"int4", KVSIM_KV_INT4}};

int kvsim_kv_dtype_parse(const char *s, kvsim_kv_dtype *out) {
  for (size_t i = 0; i < sizeof kv_names / sizeof *kv_names; i++)
    if (!strcasecmp(s, kv_names[i].name)) {
      *out = kv_names[i].d;
      return KVSIM_OK;
    }
  return KVSIM_EINVAL;
}

const char *kvsim_kv_dtype_name(kvsim_kv_dtype d) {
  for (size_t i = 0; i < sizeof kv_names / sizeof *kv_names; i++)
    if (kv_names[i].d == d)
      return kv_names[i].name;
  return "?";
}

#define cdiv kvsim__cdiv

/* Checked byte and block arithmetic: a product of user values (tokens x
 * bytes per token x layers) can pass 2^63 even when each value is within
 * its range. overflow() turns a failed step into the plan's error. */
static int overflow(kvsim_err *err, const char *what) {
  return kvsim_err_set(err, KVSIM_EINVAL, "memory plan: %s overflows 64-bit bytes", what);
}

static bool mul3(int64_t a, int64_t b, int64_t c, int64_t *out) {
  int64_t ab;
  return kvsim__mul_i64(a, b, &ab) && kvsim__mul_i64(ab, c, out);
}

/* GiB to bytes: llround for the measured overrides (as the engine's logged
 * GiB were), truncation for the CPU tiers (vLLM int(swap_space * GiB)).
 * The callers have range-checked gib, so the result fits. */
static int64_t gib_round(double gib) { return (int64_t)llround(gib * KVSIM_GIB); }
static int64_t gib_trunc(double gib) {
  int64_t b = 0;
  kvsim__double_to_i64(gib * KVSIM_GIB, &b);
  return b;
}

/* ceil(t / bs) without the overflow of (t + bs - 1) when t is near 2^63
 * (a token count from a scheduler can be any int64). */
static int64_t blocks_of(int64_t t, int64_t bs) {
  return t > 0 ? t / bs + (t % bs != 0) : cdiv(t, bs);
}

/* Bytes of one head vector of one token (K or V, or the MLA latent). */
static int64_t head_vector_bytes(const kvsim_model_t *m, const kvsim_plan_params_t *p,
                                 int64_t head, double *elem_bytes) {
  switch (p->kv_dtype) {
  case KVSIM_KV_FP8:
    /* STR_DTYPE_TO_TORCH_DTYPE maps every fp8 variant to a 1-byte dtype;
     * no scale storage in the page. */
    *elem_bytes = 1;
    return head;
  case KVSIM_KV_INT8:
  case KVSIM_KV_INT4: {
    /* HF QuantizedCache: per group of kv_quant_group elements one fp16
     * scale and one fp16 zero point. */
    int bits = p->kv_dtype == KVSIM_KV_INT8 ? 8 : 4;
    int64_t groups = cdiv(head, p->kv_quant_group);
    int64_t bytes = cdiv(head * bits, 8) + groups * 4;
    *elem_bytes = (double)bytes / head;
    return bytes;
  }
  case KVSIM_KV_BF16:
  case KVSIM_KV_FP16:
    *elem_bytes = 2;
    return head * 2;
  case KVSIM_KV_AUTO:
  default:
    *elem_bytes = m->dtype_bytes;
    return head * m->dtype_bytes;
  }
}

/* V1 hybrid allocator grouping (kv_cache_utils.py
 * _get_kv_cache_groups_uniform_page_size): group_size = min layers per
 * type, or the max when max < 1.5 x min; each type is cut into groups of
 * group_size layers, the last padded. */
static void make_groups(const kvsim_model_t *m, int n_full, int n_sw, kvsim_plan_t *pl) {
  if (n_full == 0 || n_sw == 0) {
    pl->num_groups = 1;
    pl->group_size = n_full + n_sw;
    pl->groups[0] = (kvsim_plan_group_t){n_sw > 0, m->sliding_window, n_full + n_sw};
    return;
  }
  int lo = n_full < n_sw ? n_full : n_sw, hi = n_full < n_sw ? n_sw : n_full;
  int gs = (double)hi < 1.5 * lo ? hi : lo;
  pl->group_size = gs;
  int n = 0;
  for (int left = n_full; left > 0 && n < KVSIM_PLAN_MAX_GROUPS; left -= gs)
    pl->groups[n++] = (kvsim_plan_group_t){false, 0, left < gs ? left : gs};
  for (int left = n_sw; left > 0 && n < KVSIM_PLAN_MAX_GROUPS; left -= gs)
    pl->groups[n++] = (kvsim_plan_group_t){true, m->sliding_window, left < gs ? left : gs};
  pl->num_groups = n;
}

int64_t kvsim_plan_blocks_for_tokens(const kvsim_plan_t *pl, int64_t tokens) {
  const int64_t bs = pl->p.block_size;
  int64_t blocks = 0;
  for (int g = 0; g < pl->num_groups; g++) {
    const kvsim_plan_group_t *gr = &pl->groups[g];
    if (gr->sliding && pl->p.engine == KVSIM_PLAN_V1) {
      /* SlidingWindowSpec.max_memory_usage_bytes: the window plus one
       * step's tokens, plus one block for the unaligned start. */
      int64_t span = gr->window - 1 + pl->p.max_num_batched_tokens;
      if (span > tokens)
        span = tokens;
      blocks += blocks_of(span, bs) + 1;
    } else {
      /* At most KVSIM_PLAN_MAX_GROUPS groups of at most 2^63 / 16 blocks:
       * saturate rather than wrap. */
      int64_t b = blocks_of(tokens, bs);
      blocks = blocks > INT64_MAX - b ? INT64_MAX : blocks + b;
    }
  }
  return blocks;
}

/* Budget of one stage's rank; fills the memory terms. */
static int64_t stage_available(const kvsim_model_t *m, const kvsim_gpu_t *g,
                               const kvsim_plan_params_t *p, const kvsim_quant_t *q, int stage,
                               kvsim_plan_t *pl) {
  /* The LoRA slots are allocated while the model loads (lora.c): a
   * measured "Model loading took" already holds them. */
  pl->lora_bytes = kvsim__lora_bytes(m, p, stage);
  /* The drafter loads in the same load_model (gpu_model_runner.py:
   * "Loading drafter model..." inside the memory profiler of "Model
   * loading took"), so a measured figure holds it too. */
  pl->weights_bytes = p->weights_gib >= 0 ? gib_round(p->weights_gib)
                                          : kvsim__weights_bytes_ep(m, q, p->tp, p->ep, p->pp, stage) +
                                                pl->lora_bytes + pl->spec_weights_bytes;
  /* The profiling batch: max_num_batched_tokens (V1; V0 with chunked
   * prefill), or max(max_model_len, 2048) in V0 without it (resolved in
   * resolve_defaults). Only the last pipeline stage samples (V1
   * profile_run: `if get_pp_group().is_last_rank`), so earlier stages
   * profile the forward pass alone. */
  int64_t prof_tokens = p->max_num_batched_tokens;
  int64_t prof_seqs = stage == p->pp - 1 ? p->max_num_seqs : 0;
  pl->activation_bytes = p->activation_gib >= 0
                             ? gib_round(p->activation_gib)
                             : kvsim__activation_bytes(m, p->tp, prof_tokens, prof_seqs,
                                                       p->engine);
  pl->non_torch_bytes = p->non_torch_gib >= 0 ? gib_round(p->non_torch_gib)
                                              : kvsim__non_torch_bytes(m, g, p->tp, p->pp, p->engine,
                                                                       p->vllm_version);
  pl->cuda_graph_bytes = p->enforce_eager ? 0
                         : p->cuda_graph_gib >= 0
                             ? gib_round(p->cuda_graph_gib)
                             : kvsim__cuda_graph_bytes(m, p->tp, p->pp, p->max_num_seqs);
  /* CUDA graphs are captured after the KV cache is allocated and are not
   * charged to it (capture_model runs in _warm_up_model /
   * compile_or_warm_up_model, V0 and V1), except where V1 profiles them:
   * VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 (opt-in in vllm#30515,
   * vllm/envs.py default "0"; the default from ~v0.21 per start-up logs,
   * e.g. LMCache#3326, "default since v0.21.0"). A measured
   * --cuda-graph-gib replaces the estimate's value; it does not make an
   * engine subtract what it does not. */
  pl->cuda_graph_subtracted =
      p->engine == KVSIM_PLAN_V1 && !p->enforce_eager && p->estimate_cudagraphs;
  if (p->kv_cache_memory_bytes > 0)
    return p->kv_cache_memory_bytes;
  return pl->requested_bytes - pl->weights_bytes - pl->activation_bytes - pl->non_torch_bytes -
         (pl->cuda_graph_subtracted ? pl->cuda_graph_bytes : 0);
}

/* Range checks of every parameter a user gives, before any arithmetic,
 * named by the vLLM flag and the scenario key. The bounds (plan.h) are far
 * above any real deployment and keep every product below exact in int64;
 * the memory bound also bounds the block pool a run allocates. */
int kvsim__plan_check_int(int64_t v, int64_t lo, int64_t hi, const char *flag, const char *key,
                          kvsim_err *err) {
  if (v >= lo && v <= hi)
    return KVSIM_OK;
  return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s%s: %lld is out of range [%lld, %lld]", flag,
                       key ? " (" : "", key ? key : "", key ? ")" : "", (long long)v,
                       (long long)lo, (long long)hi);
}

/* One parameter's error named as calc names it, "--flag (key)" (the
 * registry's); a scenario caller names the key itself from the id. */
static int param_range_int(int id, int64_t v, kvsim_err *err) {
  char name[160];
  return kvsim_param_check_plan_int(id, v, kvsim_param_calc_name(id, name, sizeof name), err);
}
static int param_range_num(int id, double v, kvsim_err *err) {
  char name[160];
  return kvsim_param_check_num(id, v, kvsim_param_calc_name(id, name, sizeof name), err);
}

static int check_params(const kvsim_plan_params_t *p, kvsim_err *err) {
  int rc;
  if ((rc = kvsim_param_check_num(KVSIM_PARAM_GPU_MEMORY_UTILIZATION, p->gpu_memory_utilization,
                                  "--gpu-memory-utilization", err)) < 0)
    return rc;
  /* Given in GiB, held in bytes: 0 is "the GPU's"; a negative count is a
   * GiB value that did not convert (1e12 GiB is 2^69 bytes). */
  char gname[160];
  kvsim_param_calc_name(KVSIM_PARAM_GPU_MEMORY_GIB, gname, sizeof gname);
  if (p->total_memory_bytes < 0)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_GPU_MEMORY_GIB, gname,
                               "outside " KVSIM_GPU_MEMORY_RANGE
                               " GiB (the value overflowed its byte count)");
  if (p->total_memory_bytes > KVSIM_GPU_MAX_MEMORY_BYTES)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_GPU_MEMORY_GIB, gname,
                               "%.6g GiB is outside " KVSIM_GPU_MEMORY_RANGE,
                               (double)p->total_memory_bytes / KVSIM_GIB);
  /* The registry's ranges (kvsim/params.h); the plan also takes 0 for a
   * ZERO_DEFAULT row, the engine's default (or off). */
  const struct {
    int id;
    int64_t v;
  } ints[] = {
      {KVSIM_PARAM_TENSOR_PARALLEL_SIZE, p->tp},
      {KVSIM_PARAM_PIPELINE_PARALLEL_SIZE, p->pp},
      {KVSIM_PARAM_EXPERT_PARALLEL_SIZE, p->ep},
      {KVSIM_PARAM_MAX_MODEL_LEN, p->max_model_len},
      {KVSIM_PARAM_BLOCK_SIZE, p->block_size},
      {KVSIM_PARAM_MAX_NUM_BATCHED_TOKENS, p->max_num_batched_tokens},
      {KVSIM_PARAM_MAX_NUM_SEQS, p->max_num_seqs},
      {KVSIM_PARAM_KV_QUANT_GROUP, p->kv_quant_group},
      {KVSIM_PARAM_KV_RESIDUAL_TOKENS, p->kv_residual_tokens},
      {KVSIM_PARAM_KV_CACHE_MEMORY_BYTES, p->kv_cache_memory_bytes},
      {KVSIM_PARAM_NUM_GPU_BLOCKS_OVERRIDE, p->num_gpu_blocks_override},
  };
  /* Measured sizes may be negative, "predict". */
  const struct {
    int id;
    double v;
    bool predict_ok;
  } gibs[] = {
      {KVSIM_PARAM_WEIGHTS_GIB, p->weights_gib, true},
      {KVSIM_PARAM_ACTIVATION_GIB, p->activation_gib, true},
      {KVSIM_PARAM_NON_TORCH_GIB, p->non_torch_gib, true},
      {KVSIM_PARAM_CUDA_GRAPH_GIB, p->cuda_graph_gib, true},
      {KVSIM_PARAM_SWAP_SPACE, p->swap_space_gib, false},
      {KVSIM_PARAM_KV_OFFLOADING_SIZE, p->kv_offloading_gib, false},
  };
  if ((rc = kvsim__plan_check_version(p->engine, p->vllm_version, err)) < 0)
    return rc;
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
    if ((rc = param_range_int(ints[i].id, ints[i].v, err)) < 0)
      return rc;
  for (size_t i = 0; i < sizeof gibs / sizeof *gibs; i++) {
    const double v = gibs[i].v;
    if (!(gibs[i].predict_ok && v < 0 && isfinite(v)) &&
        (rc = param_range_num(gibs[i].id, v, err)) < 0)
      return rc;
  }
  return KVSIM_OK;
}

static int resolve_defaults(const kvsim_model_t *m, const kvsim_gpu_t *g, kvsim_plan_params_t *p,
                            kvsim_err *err) {
  int rc = check_params(p, err);
  if (rc < 0)
    return rc;
  /* vLLM verify_with_parallel_config: attention heads must split evenly.
   * Named as the caller typed it (a scenario: the flag, which the
   * scenario loader turns into the key). */
  const char *tp_flag = p->tp_flag ? p->tp_flag : "--tensor-parallel-size";
  if (m->num_heads % p->tp)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_TENSOR_PARALLEL_SIZE, tp_flag,
                               "%d does not divide the model's %lld attention heads", p->tp,
                               (long long)m->num_heads);
  if (!m->mla && p->tp < m->num_kv_heads && m->num_kv_heads % p->tp)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_TENSOR_PARALLEL_SIZE, tp_flag,
                               "%d does not divide the model's %lld KV heads", p->tp,
                               (long long)m->num_kv_heads);
  if (!m->mla && p->tp > m->num_kv_heads && p->tp % m->num_kv_heads)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_TENSOR_PARALLEL_SIZE, tp_flag,
                               "%d is not a multiple of the model's %lld KV heads", p->tp,
                               (long long)m->num_kv_heads);
  if (p->pp > m->num_layers)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_PIPELINE_PARALLEL_SIZE,
                               "--pipeline-parallel-size", "%d exceeds the %d layers", p->pp,
                               m->num_layers);
  int lrc = kvsim__lora_resolve(m, p, err);
  if (lrc < 0)
    return lrc;
  /* The newest modelled release unless one is named (version.c). */
  if (!p->vllm_version)
    p->vllm_version = kvsim_plan_version_newest(p->engine);
  if (p->block_size == 0) {
    /* CacheConfig.DEFAULT_BLOCK_SIZE = 16, unless the MLA backend vLLM
     * picks for the GPU insists (vllm/platforms/cuda.py,
     * CudaPlatformBase.check_and_update_config): on compute capability
     * 10.x (B200, GB200) the default is CUTLASS_MLA ("Forcing kv cache
     * block size to 128 for CUTLASS_MLA backend"); elsewhere FlashMLA,
     * which forces 64 only where is_flashmla_supported() holds, i.e. on
     * capability 9.x (vllm/attention/ops/flashmla.py: "FlashMLA is only
     * supported on Hopper devices"); other GPUs (Ampere, Ada, RTX 50xx at
     * 12.0) run Triton MLA at the default 16. ROCm's own platform rules
     * (vllm/platforms/rocm.py) are not modelled: 16. */
    p->block_size = 16;
    if (m->mla && p->engine == KVSIM_PLAN_V1) {
      int major = (int)g->compute_capability;
      p->block_size = major == 10 ? 128 : major == 9 ? 64 : 16;
    }
  }
  /* The resolved size, given or the default: the registry's range. */
  if ((rc = kvsim_param_check_int(KVSIM_PARAM_BLOCK_SIZE, p->block_size, "--block-size", err)) < 0)
    return rc;
  if (p->total_memory_bytes <= 0)
    p->total_memory_bytes = g->memory_total_bytes;
  if (p->max_model_len <= 0)
    p->max_model_len = m->max_position_embeddings;
  if (p->max_model_len <= 0)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MAX_MODEL_LEN, "--max-model-len",
                               "required (the model config has no max_position_embeddings)");
  if (m->max_position_embeddings > 0 && p->max_model_len > m->max_position_embeddings)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MAX_MODEL_LEN, "--max-model-len",
                               "%lld is greater than the model's max_position_embeddings (%lld)",
                               (long long)p->max_model_len, (long long)m->max_position_embeddings);
  if (p->kv_quant_group < 1 || p->kv_residual_tokens < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "kv cache quantization group must be >= 1 and residual >= 0");
  if (p->kv_cache_memory_bytes > 0 && p->engine == KVSIM_PLAN_V0)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_KV_CACHE_MEMORY_BYTES,
                               "--kv-cache-memory-bytes",
                               "not available in vllm-v0 (a V1 option, vllm#21489)");
  if (p->estimate_cudagraphs && p->engine == KVSIM_PLAN_V0)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_ESTIMATE_CUDAGRAPHS,
                               "--estimate-cudagraphs",
                               "vllm-v0 never charges CUDA graphs to the KV budget");
  if (p->enable_chunked_prefill < 0) {
    /* V1 always chunks. V0 (EngineArgs.create_engine_config, v0.6-v0.8)
     * turns chunked prefill on by default for long-context models
     * (max_model_len > 32000) on CUDA unless the model has a sliding
     * window, uses MLA or is multimodal, "to avoid OOM errors in the
     * initial memory profiling phase". */
    if (p->engine == KVSIM_PLAN_V1)
      p->enable_chunked_prefill = 1;
    else
      p->enable_chunked_prefill = p->max_model_len > 32000 && m->sliding_window == 0 && !m->mla;
  }
  /* vllm/engine/arg_utils.py get_batch_defaults (OpenAI server context):
   * GPUs with >= 70 GiB whose name is not A100 get 8192 tokens and 1024
   * sequences, the others 2048 and 256. V0 keeps 256 sequences. */
  bool big = (double)p->total_memory_bytes >= 70 * KVSIM_GIB && !strstr(g->name, "a100");
  if (p->max_num_seqs <= 0)
    p->max_num_seqs = p->engine == KVSIM_PLAN_V1 ? (big ? 1024 : 256) : 256;
  if (p->max_num_batched_tokens <= 0) {
    if (p->engine == KVSIM_PLAN_V1) {
      p->max_num_batched_tokens = big ? 8192 : 2048;
      if (p->max_num_batched_tokens > p->max_num_seqs * p->max_model_len)
        p->max_num_batched_tokens = p->max_num_seqs * p->max_model_len;
    } else {
      /* V0 SchedulerConfig: max(max_model_len, 2048) without chunked
       * prefill (the profile batch grows with max_model_len), 2048 with. */
      p->max_num_batched_tokens = p->enable_chunked_prefill
                                      ? 2048
                                      : (p->max_model_len > 2048 ? p->max_model_len : 2048);
    }
  }
  if (p->max_num_seqs > p->max_num_batched_tokens)
    p->max_num_seqs = p->max_num_batched_tokens;
  if (!p->enable_chunked_prefill && p->max_num_batched_tokens < p->max_model_len)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MAX_NUM_BATCHED_TOKENS,
                               "--max-num-batched-tokens",
                               "%lld is smaller than max_model_len (%lld) "
                               "without chunked prefill",
                               (long long)p->max_num_batched_tokens, (long long)p->max_model_len);
  return KVSIM_OK;
}

static void fmt_gib(char *buf, size_t cap, double bytes) { snprintf(buf, cap, "%.2f", bytes / KVSIM_GIB); }

/* The drafter in the plan (spec.c): its weights, and its attention layers
 * in the KV cache. vLLM registers the drafter's layers in the same
 * forward context, so get_kv_cache_spec returns them with the target's
 * (gpu_model_runner.py get_kv_cache_spec) and every block holds them: a
 * layer of the target's page joins its group
 * (_get_kv_cache_groups_uniform_spec), one of another page size makes a
 * UniformTypeKVCacheSpecs group whose page is the sum
 * (kv_cache_utils.py); either way a block costs the target's layers plus
 * the drafter's. */
static int plan_spec(const kvsim_model_t *m, kvsim_plan_t *pl, kvsim_err *err) {
  kvsim_plan_params_t *p = &pl->p;
  kvsim_model_t draft;
  int rc = kvsim__spec_resolve(m, p, &draft, err);
  if (rc < 0)
    return rc;
  pl->num_lookahead_tokens = kvsim_spec_lookahead_tokens(&p->spec);
  if (p->spec.method == KVSIM_SPEC_NONE || p->spec.method == KVSIM_SPEC_NGRAM)
    return KVSIM_OK;
  pl->spec_weights_bytes =
      kvsim__spec_weights_bytes(m, &draft, p, &pl->spec_embed_shared, &pl->spec_lm_head_shared);
  pl->spec_draft_layers = draft.num_layers;
  double elem;
  int64_t vec = head_vector_bytes(&draft, p, kvsim_model_kv_head_size(&draft), &elem), per_layer;
  if (!mul3(kvsim_model_kv_heads_per_rank(&draft, p->tp), vec, kvsim_model_kv_factor(&draft),
            &per_layer) ||
      !kvsim__mul_i64(per_layer, draft.num_layers, &pl->spec_per_token_bytes) ||
      !kvsim__mul_i64(pl->spec_per_token_bytes, p->block_size, &pl->spec_block_bytes))
    return overflow(err, "the drafter's KV bytes per block");
  return KVSIM_OK;
}

/* V1's check_enough_kv_cache_memory need: kv_cache_utils.
 * _check_enough_kv_cache_memory runs on the profiled (or
 * --kv-cache-memory-bytes) budget before num_gpu_blocks_override replaces
 * the block count, so the override does not rescue a budget that is too
 * small. It sums max_memory_usage_bytes over the real layers (padding
 * layers of a hybrid group do not count); the drafter's layers are
 * full-attention layers of the same check. false on int64 overflow. */
static bool v1_need_bytes(const kvsim_plan_t *pl, int64_t *need) {
  const kvsim_plan_params_t *p = &pl->p;
  *need = 0;
  for (int gi = 0; gi < pl->num_groups; gi++) {
    kvsim_plan_t one = *pl;
    one.num_groups = 1;
    one.groups[0] = pl->groups[gi];
    int64_t group_need;
    if (!mul3(kvsim_plan_blocks_for_tokens(&one, p->max_model_len), pl->page_bytes,
              pl->groups[gi].num_layers, &group_need) ||
        !kvsim__add_i64(*need, group_need, need))
      return false;
  }
  int64_t draft_need;
  return kvsim__mul_i64(blocks_of(p->max_model_len, p->block_size), pl->spec_block_bytes,
                        &draft_need) &&
         kvsim__add_i64(*need, draft_need, need);
}

/* V1's error when one max_model_len request needs more than the budget,
 * in the engine's words; with the estimated maximum length when
 * `estimate` >= 0, as the engine's message goes on once it has searched
 * (kv_cache_utils.py estimate_max_model_len). Composed whole each time. */
static void v1_need_error(kvsim_plan_t *pl, int64_t need, int64_t estimate) {
  char n[32], a[32], est[128] = "";
  fmt_gib(n, sizeof n, (double)need);
  fmt_gib(a, sizeof a, (double)pl->available_kv_bytes);
  if (estimate >= 0)
    snprintf(est, sizeof est,
             " Based on the available memory, the estimated maximum model length is %lld.",
             (long long)estimate);
  snprintf(pl->error, sizeof pl->error,
           "To serve at least one request with the models's max seq len (%lld), (%s GiB KV "
           "cache is needed, which is larger than the available KV cache memory (%s GiB).%s "
           "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
           "initializing the engine.",
           (long long)pl->p.max_model_len, n, a, est);
}

/* Computes the plan for the resolved parameters, without max_model_len_fit. */
int kvsim__plan_vllm(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *pin,
                     kvsim_plan_t *pl, kvsim_err *err) {
  memset(pl, 0, sizeof *pl);
  pl->p = *pin;
  kvsim_plan_params_t *p = &pl->p;
  int rc = resolve_defaults(m, g, p, err);
  if (rc < 0)
    return rc;
  kvsim_quant_t q;
  if ((rc = kvsim__quant_resolve(m, p->quantization, &q, err)) < 0)
    return rc;

  pl->kv_heads_per_rank = kvsim_model_kv_heads_per_rank(m, p->tp);
  pl->head_dim = kvsim_model_kv_head_size(m);
  int64_t head = pl->head_dim;
  /* V0 pads the MLA latent to 256 bytes of the model dtype
   * (cache_engine.py _align_cache, VLLM_CUDA_MEM_ALIGN_KV_CACHE=1): 576 -> 640. */
  if (p->engine == KVSIM_PLAN_V0 && m->mla) {
    int64_t align = 256 / m->dtype_bytes;
    head = cdiv(head, align) * align;
  }
  int64_t vec = head_vector_bytes(m, p, head, &pl->kv_bytes_per_element);
  int64_t per_layer_token;
  if (!mul3(pl->kv_heads_per_rank, vec, kvsim_model_kv_factor(m), &per_layer_token) ||
      !kvsim__mul_i64(per_layer_token, p->block_size, &pl->page_bytes))
    return overflow(err, "one KV page (KV heads x head bytes x block_size)");
  if ((rc = plan_spec(m, pl, err)) < 0)
    return rc;
  pl->total_memory_bytes = p->total_memory_bytes;
  /* V1 request_memory: ceil(total x utilization); V0 a plain product. */
  double req = (double)p->total_memory_bytes * p->gpu_memory_utilization;
  pl->requested_bytes = p->engine == KVSIM_PLAN_V1 ? (int64_t)ceil(req) : (int64_t)req;

  /* Every stage: its layers, its weights, its pool; keep the smallest. */
  pl->num_gpu_blocks = -1;
  for (int s = 0; s < p->pp; s++) {
    int first, last;
    kvsim_model_pp_layers(m->num_layers, p->pp, s, &first, &last);
    int n_sw = 0, n_full = 0;
    for (int i = first; i < last; i++) {
      /* V0 and V1 with the hybrid manager off treat sliding layers as full
       * attention (unify_hybrid_kv_cache_specs); a model whose every layer
       * slides stays a sliding model. */
      bool sw = m->layer_sliding[i] &&
                (p->engine == KVSIM_PLAN_V1 &&
                 (!p->disable_hybrid_kv_cache_manager || !kvsim_model_is_hybrid(m)));
      n_sw += sw;
      n_full += !sw;
    }
    kvsim_plan_t st = *pl;
    make_groups(m, n_full, n_sw, &st);
    st.num_layers = last - first;
    int64_t avail = stage_available(m, g, p, &q, s, &st);
    st.available_kv_bytes = avail;
    int64_t per_block;
    if (!kvsim__mul_i64(pl->page_bytes, st.group_size, &per_block) ||
        !kvsim__add_i64(per_block, pl->spec_block_bytes, &per_block))
      return overflow(err, "one KV block (page bytes x layers per group)");
    int64_t blocks = avail > 0 ? avail / per_block : 0;
    if (pl->num_gpu_blocks < 0 || blocks < pl->num_gpu_blocks ||
        (blocks == pl->num_gpu_blocks && avail < pl->available_kv_bytes)) {
      st.num_gpu_blocks = blocks;
      st.block_bytes = per_block;
      st.binding_stage = s;
      *pl = st;
    }
  }
  if (p->num_gpu_blocks_override > 0)
    pl->num_gpu_blocks = p->num_gpu_blocks_override;
  if (pl->num_gpu_blocks > KVSIM_PLAN_MAX_BLOCKS)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "memory plan: %lld blocks of %lld bytes exceed the %lld block ids a pool "
                         "can hold (raise --block-size)",
                         (long long)pl->num_gpu_blocks, (long long)pl->block_bytes,
                         (long long)KVSIM_PLAN_MAX_BLOCKS);
  if (!kvsim__mul_i64(per_layer_token, pl->num_layers, &pl->per_token_kv_bytes) ||
      !kvsim__add_i64(pl->per_token_kv_bytes, pl->spec_per_token_bytes, &pl->per_token_kv_bytes))
    return overflow(err, "KV bytes per token");
  /* CPU tiers: V0 CacheEngine num_cpu_blocks = int(swap_space x GiB) //
   * block bytes, per GPU; V1 CPUOffloadingSpec: kv_offloading_size //
   * (block bytes x world size), the size being the total over the ranks. */
  if (pl->block_bytes > 0) {
    int64_t per_world;
    if (!mul3(pl->block_bytes, p->tp, p->pp, &per_world))
      return overflow(err, "one KV block over the TP x PP ranks");
    pl->swap_blocks = gib_trunc(p->swap_space_gib) / pl->block_bytes;
    pl->offload_blocks = gib_trunc(p->kv_offloading_gib) / per_world;
    /* A tier given but too small for one block is no tier at all: every
     * swap preemption would find no room (V0 aborts the request, "lack of
     * CPU swap space"; the run recomputes instead), and the offloading
     * connector would be turned on (prefix caching, no hybrid allocator)
     * and then store nothing, without a word. 0 is no tier. */
    if (p->swap_space_gib > 0 && pl->swap_blocks < 1)
      return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SWAP_SPACE,
                                 "--swap-space (engine.swap_space)",
                                 "%g GiB is smaller than the one KV "
                                 "block it must hold (%d tokens, %lld bytes per GPU, %.3g GiB)",
                                 p->swap_space_gib, p->block_size, (long long)pl->block_bytes,
                                 (double)pl->block_bytes / KVSIM_GIB);
    if (p->kv_offloading_gib > 0 && pl->offload_blocks < 1)
      return kvsim_err_set_param(
          err, KVSIM_EINVAL, KVSIM_PARAM_KV_OFFLOADING_SIZE,
          "--kv-offloading-size (engine.kv_offloading_size)",
          "%g GiB is smaller "
          "than the one KV block it must hold (%d tokens, %lld bytes over the TP "
          "%d x PP %d ranks, %.3g GiB)",
          p->kv_offloading_gib, p->block_size, (long long)per_world, p->tp, p->pp,
          (double)per_world / KVSIM_GIB);
  }
  if (p->kv_dtype == KVSIM_KV_INT8 || p->kv_dtype == KVSIM_KV_INT4) {
    /* The per-group scales and zero points inside each head vector. */
    int64_t groups = cdiv(head, p->kv_quant_group);
    int64_t per_layer;
    if (!mul3(groups * 4, pl->kv_heads_per_rank, kvsim_model_kv_factor(m), &per_layer) ||
        !kvsim__mul_i64(per_layer, pl->num_layers, &pl->kv_scale_bytes_per_token))
      return overflow(err, "KV scale bytes per token");
  }
  if (p->kv_dtype == KVSIM_KV_INT8 || p->kv_dtype == KVSIM_KV_INT4) {
    /* The residual window stays in the model dtype. */
    int64_t per_token, per_layer;
    if (!mul3(pl->kv_heads_per_rank, pl->head_dim, kvsim_model_kv_factor(m), &per_layer) ||
        !mul3(per_layer, m->dtype_bytes, pl->num_layers, &per_token) ||
        !kvsim__mul_i64(per_token, p->kv_residual_tokens, &pl->residual_bytes_per_request))
      return overflow(err, "--kv-residual-tokens (engine.kv_residual_tokens) x KV bytes per token");
  }

  /* Start-up log numbers. */
  pl->blocks_per_request_max = kvsim_plan_blocks_for_tokens(pl, p->max_model_len);
  if (p->engine == KVSIM_PLAN_V1) {
    /* _report_kv_cache_config: num_blocks // len(groups) * block_size;
     * get_max_concurrency_for_kv_cache_config: num_blocks / blocks per
     * max_model_len request (both count the null block). */
    if (!kvsim__mul_i64(pl->num_gpu_blocks / pl->num_groups, p->block_size, &pl->kv_cache_tokens))
      return overflow(err, "GPU KV cache size in tokens");
    pl->max_concurrency = (double)pl->num_gpu_blocks / (double)pl->blocks_per_request_max;
  } else {
    /* V0 executor: num_gpu_blocks * block_size / max_model_len. */
    if (!kvsim__mul_i64(pl->num_gpu_blocks, p->block_size, &pl->kv_cache_tokens))
      return overflow(err, "GPU KV cache size in tokens");
    pl->max_concurrency = (double)pl->kv_cache_tokens / (double)p->max_model_len;
  }

  /* Verdict, in the engine's words. */
  pl->fits = true;
  if (p->engine == KVSIM_PLAN_V1) {
    int64_t need;
    if (!v1_need_bytes(pl, &need))
      return overflow(err, "KV bytes of one --max-model-len (engine.max_model_len) request");
    if (pl->available_kv_bytes <= 0) {
      pl->fits = false;
      snprintf(pl->error, sizeof pl->error,
               "No available memory for the cache blocks. Try increasing "
               "`gpu_memory_utilization` when initializing the engine.");
    } else if (need > pl->available_kv_bytes) {
      pl->fits = false;
      v1_need_error(pl, need, -1); /* kvsim_plan_compute adds the estimate */
    }
  } else if (pl->num_gpu_blocks <= 0) {
    /* V0 worker.raise_if_cache_size_invalid, on the block count after
     * num_gpu_blocks_override (LLMEngine._initialize_kv_caches). */
    pl->fits = false;
    snprintf(pl->error, sizeof pl->error,
             "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
             "when initializing the engine.");
  } else if (p->max_model_len > pl->kv_cache_tokens) {
    pl->fits = false;
    snprintf(pl->error, sizeof pl->error,
             "The model's max seq len (%lld) is larger than the maximum number of tokens that can "
             "be stored in KV cache (%lld). Try increasing `gpu_memory_utilization` or decreasing "
             "`max_model_len` when initializing the engine.",
             (long long)p->max_model_len, (long long)pl->kv_cache_tokens);
  }
  return KVSIM_OK;
}

static _Atomic int64_t plans_computed;

int64_t kvsim__plan_count(void) { return plans_computed; }

int kvsim_plan_compute(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *p,
                       kvsim_plan_t *out, kvsim_err *err) {
  plans_computed++;
  if (p->engine != KVSIM_PLAN_V1 && p->engine != KVSIM_PLAN_V0 &&
      (p->lora.enable || p->lora.max_loras || p->lora.max_lora_rank))
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_ENABLE_LORA,
                               "--enable-lora (engine.enable_lora)",
                               "vLLM's LoRA slots are modelled for "
                               "the vllm-v1 and vllm-v0 engines only, not %s",
                               kvsim_plan_engine_name(p->engine));
  if (p->engine != KVSIM_PLAN_V1 && p->engine != KVSIM_PLAN_SGLANG && p->spec.method != KVSIM_SPEC_NONE)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE,
                               "--speculative-config (engine.speculative)",
                               "speculative decoding is "
                               "modelled for the vllm-v1 and sglang engines only, not %s",
                               kvsim_plan_engine_name(p->engine));
  if (p->engine == KVSIM_PLAN_SGLANG) /* its own rules: plan_sglang.c */
    return kvsim__plan_sglang(m, g, p, out, err);
  /* Engines other than vLLM size their pools by their own rules. */
  if (p->engine == KVSIM_PLAN_TGI)
    return kvsim__plan_tgi(m, g, p, out, err);
  if (p->engine == KVSIM_PLAN_HF)
    return kvsim__plan_hf(m, g, p, out, err);
  int rc = kvsim__plan_vllm(m, g, p, out, err);
  if (rc < 0)
    return rc;
  if (out->fits) {
    out->max_model_len_fit = out->p.max_model_len;
    /* The engine would accept longer requests if the model allowed them;
     * report the largest length the pool could hold, capped by the model. */
  }
  /* Binary search for the largest max_model_len that fits (the engine's
   * estimate_max_model_len), keeping every other setting. A user-given
   * max_num_batched_tokens stays; defaults are re-derived per length
   * (V0 without chunked prefill profiles max(max_model_len, 2048) tokens).
   * The chunked-prefill decision is frozen at this plan's, so that "fits"
   * stays monotone in the length (V0 would otherwise switch chunking on
   * above 32000 tokens). */
  int64_t lo = 0, hi = m->max_position_embeddings > 0 ? m->max_position_embeddings : out->p.max_model_len;
  if (out->fits)
    lo = out->p.max_model_len;
  kvsim_err scratch;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    kvsim_plan_params_t q = *p;
    q.max_model_len = mid;
    q.enable_chunked_prefill = out->p.enable_chunked_prefill;
    kvsim_plan_t t;
    if (kvsim__plan_vllm(m, g, &q, &t, &scratch) == KVSIM_OK && t.fits)
      lo = mid;
    else
      hi = mid - 1;
  }
  out->max_model_len_fit = lo;
  int64_t need;
  if (!out->fits && out->p.engine == KVSIM_PLAN_V1 && out->available_kv_bytes > 0 &&
      v1_need_bytes(out, &need))
    v1_need_error(out, need, lo); /* the message goes on with the estimate, as the engine's does */
  return KVSIM_OK;
}
