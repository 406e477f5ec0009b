/* SGLang's KV pool, sized as the engine sizes it at start-up:
 * python/sglang/srt/model_executor/model_runner.py (ModelRunner.__init__
 * takes pre_model_load_memory from init_torch_distributed: the free GiB
 * after the distributed init, MIN over the ranks; profile_max_num_token,
 * later moved to model_runner_kv_cache_mixin.py, measures the free GiB
 * after the weights and keeps
 *   rest = available_after - pre_model_load x (1 - mem_fraction_static)
 *   max_num_token = int(rest x 2^30) // cell_size
 * ; init_memory_pool then caps it by --max-total-tokens and rounds it down
 * to whole pages), python/sglang/srt/mem_cache/memory_pool.py
 * (MHATokenToKVPool: per layer a K and a V buffer of size + page_size
 * tokens, the padded page 0 taking the padded tokens' dummy writes) and
 * python/sglang/srt/managers/tp_worker.py (TpModelWorker.__init__:
 * max_running_requests). Numbers are per rank. */
#include "memory/plan_sglang.h"
#include "memory/plan_engines.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/arith.h"
#include "memory/overheads.h"
#include "memory/spec.h"
#include "memory/spec_sglang.h"

/* Memory a rank has lost before its distributed init: the CUDA context
 * and the torch init. SGLang logs it indirectly, as the total minus
 * "Load weight begin. avail mem" minus "Init torch distributed ends. mem
 * usage" (ModelRunner.init_torch_distributed measures free memory before
 * and after init_distributed_environment / initialize_model_parallel;
 * load_model logs the free memory that follows). 0.50 GiB is the median
 * of three SGLang logs:
 * - 0.19 GiB: QwQ-32B on 4 x L4, TP 4 (21.95 - 21.63 - 0.13), github.com/
 *   didier-durand/llms-in-clouds docs/sglang.md;
 * - 0.50 GiB: 8 x H200, TP 8 (139.80 - 137.29 - 2.01), sgl-project/sglang
 *   PR #11716;
 * - 0.57 GiB: 4 x RTX PRO 6000, TP 4 (94.97 - 94.01 - 0.39), sgl-project/
 *   sglang issue #40558.
 * It replaces 1.08 GiB, taken from a ktransformers log on an RTX 4090
 * (kvcache-ai/ktransformers#1870: "avail mem=19.08 GB, mem usage=3.76
 * GB") against nvidia-smi's 23.99 GiB rather than the 23.52 GiB the
 * runtime reports: that charged ~0.6 GiB too much on every rank and put
 * the predicted pool of the L4 log 16 % under its 46,611 tokens. The
 * NCCL / custom all-reduce share comes on top for TP or PP > 1, sized by
 * the interconnect as for vLLM V0 (overheads.c). A measured
 * --avail-gib-before-load replaces the whole prediction. */
#define SGL_PRELOAD_GIB 0.50

/* python/sglang/srt/server_args.py: max_prefill_tokens = 16384. */
#define SGL_MAX_PREFILL_TOKENS 16384

double kvsim_plan_sglang_auto_fraction(double gpu_mem_mb, int tp, int pp,
                                       int64_t *chunked_prefill_size, int64_t max_prefill_tokens,
                                       int64_t *cuda_graph_max_bs, double *reserved_mb) {
  /* ServerArgs._handle_gpu_memory_settings (sgl-project/sglang#10975):
   * chunked_prefill_size and cuda_graph_max_bs by GPU memory, then the
   * reserve they imply, in MB. */
  int64_t chunk, bs;
  if (gpu_mem_mb < 20 * 1024)
    chunk = 2048, bs = 8;
  else if (gpu_mem_mb < 35 * 1024)
    chunk = 2048, bs = tp < 4 ? 24 : 80;
  else if (gpu_mem_mb < 60 * 1024)
    chunk = 4096, bs = tp < 4 ? 32 : 160;
  else if (gpu_mem_mb < 160 * 1024)
    chunk = 8192, bs = tp < 4 ? 256 : 512; /* H100/A100-80G and H20/H200 alike */
  else
    chunk = 16384, bs = 512;
  if (*chunked_prefill_size == 0)
    *chunked_prefill_size = chunk;
  *cuda_graph_max_bs = bs;
  /* "Constant meta data", the activations of the largest prefill, the
   * CUDA graphs, "some adjustments for large parallel size". */
  double reserved = 512;
  int64_t prefill = *chunked_prefill_size > 0 ? *chunked_prefill_size : max_prefill_tokens;
  reserved += (double)(prefill > 2048 ? prefill : 2048) * 1.5;
  reserved += (double)bs * 2;
  reserved += (double)tp * pp / 8 * 1024;
  if (gpu_mem_mb > 60 * 1024 && reserved < 10 * 1024)
    reserved = 10 * 1024;
  *reserved_mb = reserved;
  /* round((gpu_mem - reserved_mem) / gpu_mem, 3) */
  return round((gpu_mem_mb - reserved) / gpu_mem_mb * 1000) / 1000;
}

/* The token counts: the registry's ranges, 0 being SGLang's automatic
 * value here (the chunk's row takes -1, off, and refuses 0 itself). The
 * context length is named by SGLang's flag. */
static int check_counts(const kvsim_plan_params_t *p, kvsim_err *err) {
  const kvsim_plan_sglang_params_t *s = &p->sglang;
  int rc;
  const struct {
    int id;
    int64_t v;
    const char *flag; /* NULL: the registry's */
  } ints[] = {
      {KVSIM_PARAM_PAGE_SIZE, p->block_size, NULL},
      {KVSIM_PARAM_MAX_MODEL_LEN, p->max_model_len, "--context-length"},
      {KVSIM_PARAM_MAX_TOTAL_TOKENS, s->max_total_tokens, NULL},
      {KVSIM_PARAM_MAX_RUNNING_REQUESTS, s->max_running_requests, NULL},
      {KVSIM_PARAM_CHUNKED_PREFILL_SIZE, s->chunked_prefill_size, NULL},
      {KVSIM_PARAM_MAX_PREFILL_TOKENS, s->max_prefill_tokens, NULL},
  };
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
    const kvsim_param_t *row = kvsim_param_get(ints[i].id);
    char name[160];
    snprintf(name, sizeof name, "%s (%s)", ints[i].flag ? ints[i].flag : row->flag, row->key);
    rc = row->flags & KVSIM_PARAM_ZERO_DEFAULT
             ? kvsim_param_check_plan_int(row->id, ints[i].v, name, err)
             : kvsim_param_check_int(row->id, ints[i].v, name, err);
    if (rc < 0)
      return rc;
  }
  return KVSIM_OK;
}

/* The measured "avail mem" pair, the GPU's capacity and total memory. */
static int check_memory(const kvsim_plan_params_t *p, kvsim_err *err) {
  const kvsim_plan_sglang_params_t *s = &p->sglang;
  double b = s->avail_gib_before_load, a = s->avail_gib_after_load;
  if ((b >= 0) != (a >= 0))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--avail-gib-before-load and --avail-gib-after-load go together (the two "
                         "\"avail mem\" figures of one log)");
  if (b >= 0 && !(b <= KVSIM_PLAN_MAX_GIB && a <= b))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--avail-gib-after-load: %g GiB must be <= --avail-gib-before-load (%g "
                         "GiB) <= %g",
                         a, b, KVSIM_PLAN_MAX_GIB);
  double cap = s->gpu_memory_capacity_mib;
  if (isnan(cap) || cap > (double)KVSIM_GPU_MAX_MEMORY_BYTES / 1048576.0)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_GPU_MEMORY_CAPACITY_MIB,
                               "--gpu-memory-capacity-mib (engine.gpu_memory_capacity_mib)",
                               "%g is out of "
                               "range (0, %g]",
                               cap, (double)KVSIM_GPU_MAX_MEMORY_BYTES / 1048576.0);
  if (p->total_memory_bytes < 0 || p->total_memory_bytes > KVSIM_GPU_MAX_MEMORY_BYTES)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_GPU_MEMORY_GIB,
                               "--gpu-memory-gib (hardware.gpu_memory_gib)", "out of range");
  return KVSIM_OK;
}

static int check(const kvsim_plan_params_t *p, kvsim_err *err) {
  const kvsim_plan_sglang_params_t *s = &p->sglang;
  char tp_name[160], pp_name[160];
  int rc;
  if ((rc = kvsim_param_check_int(
           KVSIM_PARAM_TENSOR_PARALLEL_SIZE, p->tp,
           kvsim_param_calc_name(KVSIM_PARAM_TENSOR_PARALLEL_SIZE, tp_name, sizeof tp_name), err)) <
          0 ||
      (rc = kvsim_param_check_int(
           KVSIM_PARAM_PIPELINE_PARALLEL_SIZE, p->pp,
           kvsim_param_calc_name(KVSIM_PARAM_PIPELINE_PARALLEL_SIZE, pp_name, sizeof pp_name),
           err)) < 0)
    return rc;
  if (isnan(s->mem_fraction_static) || s->mem_fraction_static >= 1) /* <= 0: automatic */
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MEM_FRACTION_STATIC,
                               "--mem-fraction-static (engine.mem_fraction_static)",
                               "%g is outside (0, 1)", s->mem_fraction_static);
  if (p->kv_dtype == KVSIM_KV_INT8 || p->kv_dtype == KVSIM_KV_INT4)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_KV_CACHE_DTYPE, "--kv-cache-dtype",
                               "%s is not an SGLang KV cache dtype (auto, bfloat16, "
                               "float16, fp8_e4m3, fp8_e5m2)",
                               kvsim_kv_dtype_name(p->kv_dtype));
  /* vLLM's pool overrides, which SGLang has no flag for and this plan once
   * ignored without a word. Refused rather than translated: the nearest
   * SGLang option, --max-total-tokens, only caps the profiled pool
   * (max_total_num_tokens = min(profiled, max_total_tokens), with a
   * warning when the value is larger), while vLLM's override replaces the
   * profile, upward too. A translation would model a pool SGLang cannot
   * have whenever the count exceeds the profile, and a vLLM scenario
   * switched to the sglang profile would keep vLLM's measured block count
   * as SGLang's. The error names the option that does exist. */
  if (p->num_gpu_blocks_override > 0)
    return kvsim_err_set_param(
        err, KVSIM_EINVAL, KVSIM_PARAM_NUM_GPU_BLOCKS_OVERRIDE,
        "--num-gpu-blocks-override (engine.num_gpu_blocks_override)",
        "%lld is "
        "vLLM's; SGLang has no such option: cap the pool with "
        "engine.max_total_tokens (--max-total-tokens, in tokens), which can lower "
        "the profiled pool but not raise it",
        (long long)p->num_gpu_blocks_override);
  if (kvsim__plan_refuse_kv_cache_bytes(p, "SGLang",
                                        "size the pool with engine.mem_fraction_static "
                                        "(--mem-fraction-static) or cap it with "
                                        "engine.max_total_tokens (--max-total-tokens)",
                                        err) < 0)
    return err->code;
  return (rc = check_counts(p, err)) < 0 ? rc : check_memory(p, err);
}

/* Bytes of one element of the cache: --kv-cache-dtype auto is the model's
 * dtype (ModelRunner.configure_kv_cache_dtype), fp8_e4m3/e5m2 one byte. */
static double elem_bytes(const kvsim_model_t *m, kvsim_kv_dtype d) {
  return d == KVSIM_KV_FP8 ? 1 : d == KVSIM_KV_BF16 || d == KVSIM_KV_FP16 ? 2 : m->dtype_bytes;
}

/* Fills the tokens of one pipeline stage; returns them (may be <= 0). */
static int64_t stage_tokens(const kvsim_model_t *m, const kvsim_gpu_t *g,
                            const kvsim_plan_params_t *p, const kvsim_quant_t *q, int stage,
                            kvsim_plan_t *st) {
  kvsim_plan_sglang_t *o = &st->sglang;
  int first, last;
  kvsim_model_pp_layers(m->num_layers, p->pp, stage, &first, &last);
  st->num_layers = last - first;
  st->weights_bytes = kvsim__weights_bytes_ep(m, q, p->tp, p->ep, p->pp, stage);
  /* The NCCL share: V0's non-torch charge is the base plus the buffers. */
  const int v0 = kvsim_plan_version_newest(KVSIM_PLAN_V0);
  int64_t nccl = kvsim__non_torch_bytes(m, g, p->tp, p->pp, KVSIM_PLAN_V0, v0) -
                 kvsim__non_torch_bytes(m, g, 1, 1, KVSIM_PLAN_V0, v0);
  if (p->sglang.avail_gib_before_load >= 0) {
    o->avail_gib_before_load = p->sglang.avail_gib_before_load;
    o->avail_gib_after_load = p->sglang.avail_gib_after_load;
  } else {
    o->avail_gib_before_load =
        ((double)p->total_memory_bytes - (double)nccl) / KVSIM_GIB - SGL_PRELOAD_GIB;
    o->avail_gib_after_load = o->avail_gib_before_load - (double)st->weights_bytes / KVSIM_GIB;
  }
  st->non_torch_bytes = (int64_t)((double)p->total_memory_bytes - o->avail_gib_before_load * KVSIM_GIB);
  /* get_cell_size_per_token: MHA/GQA get_num_kv_heads(tp) x (head_dim +
   * v_head_dim) x layers x element size, KV heads replicated when TP
   * exceeds them; MLA (kv_lora_rank + qk_rope_head_dim) x layers x element
   * size, the latent replicated on every rank. */
  double eb = elem_bytes(m, p->kv_dtype);
  st->kv_bytes_per_element = eb;
  st->kv_heads_per_rank = kvsim_model_kv_heads_per_rank(m, p->tp);
  st->head_dim = kvsim_model_kv_head_size(m);
  int64_t per_layer =
      st->kv_heads_per_rank * st->head_dim * kvsim_model_kv_factor(m) * (int64_t)eb;
  o->cell_size = per_layer * st->num_layers;
  o->rest_gib = o->avail_gib_after_load - o->avail_gib_before_load * (1 - o->mem_fraction_static);
  int64_t rest_bytes = 0;
  kvsim__double_to_i64(trunc(o->rest_gib * KVSIM_GIB), &rest_bytes);
  st->available_kv_bytes = rest_bytes;
  /* Python's // floors: a negative rest stays negative. */
  int64_t t = rest_bytes / o->cell_size;
  if (rest_bytes < 0 && rest_bytes % o->cell_size)
    t--;
  return t;
}

/* max_total_num_tokens and what follows from it (init_memory_pool,
 * TpModelWorker.__init__). */
static void pool_numbers(const kvsim_model_t *m, const kvsim_plan_params_t *p, kvsim_plan_t *pl) {
  kvsim_plan_sglang_t *o = &pl->sglang;
  const kvsim_plan_sglang_params_t *s = &p->sglang;
  int64_t t = o->profiled_tokens;
  if (s->max_total_tokens > 0 && s->max_total_tokens < t)
    t = s->max_total_tokens;
  t = t > 0 ? t / p->block_size * p->block_size : t;
  o->max_total_num_tokens = t;
  /* max_num_reqs = min(max(int(max_total_num_tokens / context_len * 512),
   * 2048), 4096) unless --max-running-requests. */
  int64_t reqs = s->max_running_requests;
  if (reqs <= 0) {
    double x = t > 0 ? (double)t / (double)o->context_len * 512 : 0;
    reqs = x > 4096 ? 4096 : x > 2048 ? (int64_t)x : 2048;
  }
  o->req_to_token_size = reqs;
  int64_t run = s->max_running_requests > 0 ? s->max_running_requests : (t > 0 ? t / 2 : 0);
  o->max_running_requests = run < reqs ? run : reqs;
  /* max_req_len = min(context_len - 1, max_total_num_tokens - 1);
   * max_req_input_len = max_req_len - 5. */
  int64_t max_req = o->context_len - 1 < t - 1 ? o->context_len - 1 : t - 1;
  o->max_req_input_len = max_req - 5;
  /* The buffers hold size + page_size tokens; an MLA pool has one
   * latent buffer per layer (logged as "KV size"). */
  int64_t rows = t > 0 ? t + p->block_size : 0;
  int64_t k = o->cell_size / kvsim_model_kv_factor(m);
  o->k_size_bytes = rows * k;
  o->v_size_bytes = m->mla ? 0 : rows * k;
}

/* The EAGLE draft worker (EAGLEWorker.__init__), which loads after the
 * target's pool: its weights (shared embedding, and lm_head for EAGLE-1/2,
 * as _share_embed_head does; the same bytes as vLLM's head,
 * kvsim__spec_weights_bytes), and its pool of the draft's layers over the
 * target's max_total_num_tokens (+ page_size padded) indices
 * (draft_runner_cache_size, model_runner_kv_cache_mixin.py init_memory).
 * Neither is in the target's budget: both come out of what the fraction
 * left (the 2 GB more reserve is for them), and a rank without room for
 * them fails with CUDA's out-of-memory error. */
static void draft_pool(const kvsim_model_t *m, const kvsim_model_t *draft, kvsim_plan_t *pl) {
  kvsim_plan_sglang_t *o = &pl->sglang;
  const kvsim_plan_params_t *p = &pl->p;
  o->alloc_len_per_decode = kvsim__spec_sglang_alloc_len(&p->spec);
  if (p->spec.method == KVSIM_SPEC_NONE)
    return;
  pl->spec_weights_bytes =
      kvsim__spec_weights_bytes(m, draft, p, &pl->spec_embed_shared, &pl->spec_lm_head_shared);
  const int64_t k = kvsim_model_kv_heads_per_rank(draft, p->tp) * kvsim_model_kv_head_size(draft) *
                    (int64_t)elem_bytes(draft, p->kv_dtype) * draft->num_layers;
  pl->spec_per_token_bytes = k * kvsim_model_kv_factor(draft);
  const int64_t rows = o->max_total_num_tokens > 0 ? o->max_total_num_tokens + p->block_size : 0;
  o->draft_k_size_bytes = rows * k;
  o->draft_v_size_bytes = draft->mla ? 0 : rows * k;
  const double left = o->avail_gib_after_load -
                      (double)(o->k_size_bytes + o->v_size_bytes + pl->spec_weights_bytes +
                               o->draft_k_size_bytes + o->draft_v_size_bytes) /
                          KVSIM_GIB;
  if (pl->fits && left < 0) {
    pl->fits = false;
    snprintf(pl->error, sizeof pl->error,
             "CUDA out of memory: the EAGLE draft's weights and KV pool need %.2f GB more than "
             "the rank has after the target's pool (lower --mem-fraction-static)",
             -left);
  }
}

int kvsim__plan_sglang(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *pin,
                       kvsim_plan_t *pl, kvsim_err *err) {
  memset(pl, 0, sizeof *pl);
  pl->p = *pin;
  kvsim_plan_params_t *p = &pl->p;
  kvsim_plan_sglang_t *o = &pl->sglang;
  int rc = check(p, err);
  if (rc < 0)
    return rc;
  /* The model's attention layers split heads evenly over TP
   * (QKVParallelLinear); KV heads divide TP or TP divides them. */
  const char *tp_flag = p->tp_flag ? p->tp_flag : "--tensor-parallel-size"; /* as typed */
  if (m->num_heads % p->tp)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_TENSOR_PARALLEL_SIZE, tp_flag,
                               "%d does not divide the model's %lld attention heads", p->tp,
                               (long long)m->num_heads);
  if (!m->mla && (p->tp < m->num_kv_heads ? m->num_kv_heads % p->tp : p->tp % m->num_kv_heads))
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_TENSOR_PARALLEL_SIZE, tp_flag,
                               "%d and the model's %lld KV heads do not divide", p->tp,
                               (long long)m->num_kv_heads);
  if (p->pp > m->num_layers)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_PIPELINE_PARALLEL_SIZE,
                               "--pipeline-parallel-size", "%d exceeds the %d layers", p->pp,
                               m->num_layers);
  kvsim_quant_t q;
  if ((rc = kvsim__quant_resolve(m, p->quantization, &q, err)) < 0)
    return rc;
  if (p->total_memory_bytes <= 0)
    p->total_memory_bytes = g->memory_total_bytes;
  pl->total_memory_bytes = p->total_memory_bytes;
  /* --page-size 1; --context-length: the model's. */
  if (p->block_size <= 0)
    p->block_size = 1;
  kvsim_model_t draft;
  memset(&draft, 0, sizeof draft);
  if ((rc = kvsim__spec_sglang_resolve(m, p, &draft, err)) < 0)
    return rc;
  const bool eagle = p->spec.method != KVSIM_SPEC_NONE;
  pl->spec_draft_layers = eagle ? draft.num_layers : 0;
  /* _handle_speculative_decoding: "Max running requests is reset to 48
   * for speculative decoding". */
  if (eagle && p->sglang.max_running_requests <= 0)
    p->sglang.max_running_requests = 48;
  if (p->max_model_len <= 0)
    p->max_model_len = m->max_position_embeddings;
  if (p->max_model_len <= 0)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MAX_MODEL_LEN, "--context-length",
                               "required (the model config has no max_position_embeddings)");
  o->context_len = p->max_model_len;
  o->max_prefill_tokens = p->sglang.max_prefill_tokens > 0 ? p->sglang.max_prefill_tokens
                                                             : SGL_MAX_PREFILL_TOKENS;
  o->chunked_prefill_size = p->sglang.chunked_prefill_size;
  /* get_device_memory_capacity (python/sglang/srt/utils.py
   * get_nvgpu_memory_capacity) reads nvidia-smi's memory.total in MiB,
   * the minimum over the GPUs; the catalog's total is the runtime's, a
   * few hundred MiB under it (L4: 23,034 against 22,478 MiB), which moves
   * the automatic fraction by ~0.004 on a 24 GB card. Given
   * (--gpu-memory-capacity-mib), nvidia-smi's figure is used. */
  double mem_mb = p->sglang.gpu_memory_capacity_mib > 0 ? p->sglang.gpu_memory_capacity_mib
                                                         : (double)p->total_memory_bytes / (1 << 20);
  double frac = kvsim_plan_sglang_auto_fraction(mem_mb, p->tp, p->pp, &o->chunked_prefill_size,
                                                o->max_prefill_tokens, &o->cuda_graph_max_bs,
                                                &o->reserved_mb);
  if (eagle) { /* "eagle draft models and cuda graphs" */
    o->reserved_mb += KVSIM_SGL_EAGLE_RESERVE_MB;
    frac = round((mem_mb - o->reserved_mb) / mem_mb * 1000) / 1000;
  }
  o->fraction_auto = !(p->sglang.mem_fraction_static > 0);
  o->mem_fraction_static = o->fraction_auto ? frac : p->sglang.mem_fraction_static;

  /* Every stage; the pool is the MIN over the ranks (all_reduce MIN). */
  bool first = true;
  for (int s = 0; s < p->pp; s++) {
    kvsim_plan_t st = *pl;
    int64_t t = stage_tokens(m, g, p, &q, s, &st);
    if (first || t < pl->sglang.profiled_tokens) {
      st.sglang.profiled_tokens = t;
      st.binding_stage = s;
      *pl = st;
      first = false;
    }
  }
  pool_numbers(m, p, pl);
  int64_t t = o->max_total_num_tokens;
  /* The rest of the plan in kvsim's shared terms: one full-attention
   * group, pages of page_size tokens, page 0 the padded dummy page (the
   * run adds it as the pool's null block). */
  p->max_num_seqs = o->max_running_requests > 0 ? o->max_running_requests : 1;
  p->enable_chunked_prefill = o->chunked_prefill_size > 0;
  p->max_num_batched_tokens = o->chunked_prefill_size > 0 ? o->chunked_prefill_size
                                                          : o->max_prefill_tokens;
  pl->num_groups = 1;
  pl->group_size = pl->num_layers;
  pl->groups[0] = (kvsim_plan_group_t){false, 0, pl->num_layers};
  pl->per_token_kv_bytes = o->cell_size;
  if (!kvsim__mul_i64(o->cell_size, p->block_size, &pl->block_bytes))
    return kvsim_err_set(err, KVSIM_EINVAL, "memory plan: one page overflows 64-bit bytes");
  pl->page_bytes = pl->block_bytes / (pl->num_layers > 0 ? pl->num_layers : 1);
  pl->requested_bytes = (int64_t)(o->avail_gib_before_load * o->mem_fraction_static * KVSIM_GIB);
  pl->num_gpu_blocks = t > 0 ? t / p->block_size : 0;
  pl->kv_cache_tokens = t > 0 ? t : 0;
  pl->blocks_per_request_max = (p->max_model_len + p->block_size - 1) / p->block_size;
  pl->max_concurrency = (double)pl->kv_cache_tokens / (double)p->max_model_len;
  if (pl->num_gpu_blocks > KVSIM_PLAN_MAX_BLOCKS)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "memory plan: %lld pages exceed the %lld a pool can hold (raise --page-size)",
                         (long long)pl->num_gpu_blocks, (long long)KVSIM_PLAN_MAX_BLOCKS);
  pl->fits = t > 0;
  if (!pl->fits)
    snprintf(pl->error, sizeof pl->error,
             "Not enough memory. Please try to increase --mem-fraction-static. Current value: "
             "server_args.mem_fraction_static=%g",
             o->mem_fraction_static);
  draft_pool(m, &draft, pl);
  /* SGLang serves any request up to min(context_len, pool) - 1 tokens. */
  pl->max_model_len_fit = pl->fits ? (t < p->max_model_len ? t : p->max_model_len) : 0;
  return KVSIM_OK;
}
