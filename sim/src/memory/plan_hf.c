/* HF Transformers' cache classes in one process, no paging
 * (huggingface/transformers src/transformers/cache_utils.py):
 * - DynamicCache / DynamicLayer.update: torch.cat along the sequence, so
 *   the cache grows per token, shape [B, H_kv, T, D] per layer for K and
 *   for V; DynamicSlidingWindowLayer keeps the last sliding_window - 1.
 * - StaticCache / StaticLayer.lazy_initialization: torch.zeros((B, H_kv,
 *   max_cache_len, D)) for K and V at the first update: all of it at once;
 *   StaticSlidingWindowLayer holds min(sliding_window, max_cache_len).
 * - QuantizedCache / QuantizedLayer (KIVI; quanto backend nbits 2 or 4,
 *   q_group_size 64, residual_length 128): the quantized part plus a
 *   residual of at most residual_length tokens in the model dtype; quanto's
 *   MaxOptimizer stores a scale and a zero point per group of q_group_size.
 * - Offloading (Cache(offloading=True), OffloadedCache): update() prefetches
 *   layer i+1 and offloads layer i, so about two layers are on the GPU.
 * The seeds' formula is the dynamic/static memory: 2 x B x L x T x Hkv x D x S. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/arith.h"
#include "memory/overheads.h"
#include "memory/plan_engines.h"

#define cdiv kvsim__cdiv

/* Layers resident on the GPU with offloading: the one updated and the one
 * prefetched (cache_utils.py Cache.update: prefetch(layer_idx + 1), then
 * offload(layer_idx)). */
#define HF_OFFLOAD_RESIDENT_LAYERS 2

static int64_t gib_bytes(double gib) { return (int64_t)llround(gib * KVSIM_GIB); }

static int check(const kvsim_model_t *m, const kvsim_plan_params_t *p, kvsim_err *err) {
  const kvsim_plan_hf_params_t *h = &p->hf;
  if (p->tp != 1 || p->pp != 1)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_TENSOR_PARALLEL_SIZE,
                               "--tensor-parallel-size",
                               "hf-transformers runs one process on one GPU "
                               "(tensor and pipeline parallel sizes must be 1)");
  /* 0 is each one's default here (the front ends refuse a typed 0), so
   * the range named is the one checked. */
  if (h->batch < 0 || h->batch > KVSIM_PLAN_MAX_SEQS)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_BATCH, "--batch (engine.batch)",
                               "%lld is out of range [0, %lld] (0: one row)", (long long)h->batch,
                               (long long)KVSIM_PLAN_MAX_SEQS);
  if (h->max_cache_len < 0 || h->max_cache_len > KVSIM_MODEL_MAX_CONTEXT)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MAX_CACHE_LEN,
                               "--max-cache-len (engine.max_cache_len)",
                               "%lld is out of range [0, %lld] "
                               "(0: max_model_len, else the model's max_position_embeddings)",
                               (long long)h->max_cache_len, (long long)KVSIM_MODEL_MAX_CONTEXT);
  if (kvsim__plan_refuse_kv_cache_bytes(p, "hf-transformers",
                                        "its cache holds what engine.batch and "
                                        "engine.max_cache_len ask for",
                                        err) < 0)
    return err->code;
  if (m->max_position_embeddings > 0 && h->max_cache_len > m->max_position_embeddings)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MAX_CACHE_LEN,
                               "--max-cache-len (engine.max_cache_len)",
                               "%lld is greater than the model's "
                               "max_position_embeddings (%lld)",
                               (long long)h->max_cache_len, (long long)m->max_position_embeddings);
  if (h->cache == KVSIM_HF_QUANTIZED) {
    /* QuantoQuantizedLayer: "nbits must be either 2 or 4". */
    if (h->nbits != 2 && h->nbits != 4)
      return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_NBITS, "--nbits (engine.nbits)",
                                 "%d (quanto takes 2 or 4)", h->nbits);
    char name[160];
    int rc = kvsim_param_check_int(
        KVSIM_PARAM_Q_GROUP_SIZE, h->q_group_size,
        kvsim_param_calc_name(KVSIM_PARAM_Q_GROUP_SIZE, name, sizeof name), err);
    if (rc < 0)
      return rc;
    if (h->residual_length < 0 || h->residual_length > KVSIM_MODEL_MAX_CONTEXT)
      return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_RESIDUAL_LENGTH,
                                 "--residual-length (engine.residual_length)", "%d is out of range",
                                 h->residual_length);
  }
  if (p->kv_dtype == KVSIM_KV_INT8 || p->kv_dtype == KVSIM_KV_INT4)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_KV_CACHE_DTYPE, "--kv-cache-dtype",
                               "use --cache quantized --nbits N for a quantized HF cache");
  return KVSIM_OK;
}

/* Tokens layer i keeps of a sequence of t tokens under the cache class. */
static int64_t layer_tokens(const kvsim_model_t *m, kvsim_hf_cache c, int i, int64_t t) {
  if (!m->layer_sliding[i] || m->sliding_window <= 0)
    return t;
  int64_t w = c == KVSIM_HF_STATIC ? m->sliding_window : m->sliding_window - 1;
  return t < w ? t : w;
}

int kvsim__plan_hf(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *pin,
                   kvsim_plan_t *pl, kvsim_err *err) {
  memset(pl, 0, sizeof *pl);
  pl->p = *pin;
  kvsim_plan_params_t *p = &pl->p;
  kvsim_plan_hf_params_t *h = &p->hf;
  kvsim_plan_hf_t *o = &pl->hf;
  int rc = check(m, p, err);
  if (rc < 0)
    return rc;
  kvsim_quant_t q;
  if ((rc = kvsim__quant_resolve(m, p->quantization, &q, err)) < 0)
    return rc;
  if (h->batch <= 0)
    h->batch = 1;
  if (h->max_cache_len <= 0)
    h->max_cache_len = p->max_model_len > 0 ? p->max_model_len : m->max_position_embeddings;
  if (h->max_cache_len <= 0)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MAX_CACHE_LEN, "--max-cache-len",
                               "required (the model config has no max_position_embeddings)");
  const int64_t B = h->batch, T = h->max_cache_len, D = kvsim_model_kv_head_size(m);
  const int64_t H = kvsim_model_kv_heads_per_rank(m, 1), kvf = kvsim_model_kv_factor(m);
  const int S = p->kv_dtype == KVSIM_KV_FP8 ? 1 : p->kv_dtype == KVSIM_KV_AUTO ? m->dtype_bytes : 2;
  pl->num_layers = m->num_layers;
  pl->kv_heads_per_rank = H;
  pl->head_dim = D;
  /* Bytes of one token of one sequence in one layer, as stored. */
  double elem = S;
  int64_t scale_per_layer_token = 0;
  if (h->cache == KVSIM_HF_QUANTIZED) {
    /* nbits per element, and per group of q_group_size elements one scale
     * and one zero point in the model dtype. */
    elem = h->nbits / 8.0;
    scale_per_layer_token = kvf * H * cdiv(D, h->q_group_size) * 2 * m->dtype_bytes;
  }
  pl->kv_bytes_per_element = elem;
  int64_t data_per_layer_token = (int64_t)ceil((double)(kvf * H * D) * elem);
  int64_t full_per_layer_token = kvf * H * D * S;
  /* The seeds' formula over the layers, each holding its own length. */
  int64_t tok_layers = 0; /* sum over layers of the tokens each keeps at T */
  for (int i = 0; i < m->num_layers; i++)
    tok_layers += layer_tokens(m, h->cache, i, T);
  /* Offloading: two layers of the full length on the GPU (the largest). */
  int64_t resident =
      (m->num_layers < HF_OFFLOAD_RESIDENT_LAYERS ? m->num_layers : HF_OFFLOAD_RESIDENT_LAYERS) * T;
  o->kv_bytes = B * tok_layers * data_per_layer_token;
  o->scale_bytes = B * tok_layers * scale_per_layer_token;
  if (h->cache == KVSIM_HF_QUANTIZED) {
    int64_t r = h->residual_length < T ? h->residual_length : T;
    o->residual_bytes = B * m->num_layers * r * full_per_layer_token;
  }
  int64_t all = o->kv_bytes + o->scale_bytes + o->residual_bytes;
  o->gpu_bytes = all;
  if (h->cache == KVSIM_HF_OFFLOADED) {
    o->gpu_bytes = B * resident * data_per_layer_token;
    o->host_bytes = all - o->gpu_bytes;
  }
  o->per_token_bytes = m->num_layers * (data_per_layer_token + scale_per_layer_token);
  /* Memory of the one process. */
  pl->total_memory_bytes =
      p->total_memory_bytes > 0 ? p->total_memory_bytes : g->memory_total_bytes;
  p->total_memory_bytes = pl->total_memory_bytes;
  pl->requested_bytes = pl->total_memory_bytes;
  p->gpu_memory_utilization = 1.0; /* no fraction: the process takes what is free */
  pl->weights_bytes =
      p->weights_gib >= 0 ? gib_bytes(p->weights_gib) : kvsim__weights_bytes(m, &q, 1, 1, 0);
  /* The batch's prefill (generate runs it whole, no chunking). */
  pl->activation_bytes =
      p->activation_gib >= 0
          ? gib_bytes(p->activation_gib)
          : kvsim__activation_bytes(
                m, 1, B * T < KVSIM_MODEL_MAX_CONTEXT ? B * T : KVSIM_MODEL_MAX_CONTEXT, B,
                KVSIM_PLAN_V1);
  pl->non_torch_bytes =
      p->non_torch_gib >= 0
          ? gib_bytes(p->non_torch_gib)
          : gib_bytes(KVSIM__CUDA_CONTEXT_GIB) + kvsim__non_torch_bytes(m, g, 1, 1, KVSIM_PLAN_V1,
                                                                         kvsim_plan_version_newest(KVSIM_PLAN_V1));
  int64_t avail =
      pl->total_memory_bytes - pl->weights_bytes - pl->activation_bytes - pl->non_torch_bytes;
  pl->available_kv_bytes = avail > 0 ? avail : 0;
  /* The run's pool: one-token blocks (no paging) of one token's bytes on
   * the GPU, as many as the free memory holds; with offloading the cache
   * lives in host memory, the batch's whole cache. */
  pl->per_token_kv_bytes = o->per_token_bytes;
  pl->kv_scale_bytes_per_token = m->num_layers * scale_per_layer_token;
  if (h->cache == KVSIM_HF_QUANTIZED) {
    pl->residual_bytes_per_request = o->residual_bytes / B;
    p->kv_residual_tokens = h->residual_length;
    p->kv_quant_group = h->q_group_size;
  }
  p->block_size = 1;
  pl->block_bytes = pl->per_token_kv_bytes;
  pl->page_bytes = data_per_layer_token + scale_per_layer_token;
  int64_t blocks = h->cache == KVSIM_HF_OFFLOADED ? B * T
                   : pl->block_bytes > 0          ? pl->available_kv_bytes / pl->block_bytes
                                                  : 0;
  if (p->num_gpu_blocks_override > 0)
    blocks = p->num_gpu_blocks_override;
  if (blocks > KVSIM_PLAN_MAX_BLOCKS - 1)
    blocks = KVSIM_PLAN_MAX_BLOCKS - 1;
  pl->num_gpu_blocks = blocks;
  pl->kv_cache_tokens = blocks;
  p->max_model_len = T;
  p->max_num_seqs = B;
  p->max_num_batched_tokens = B * T < KVSIM_MODEL_MAX_CONTEXT ? B * T : KVSIM_MODEL_MAX_CONTEXT;
  p->enable_chunked_prefill = 0;
  pl->num_groups = 1;
  pl->group_size = m->num_layers;
  pl->groups[0] = (kvsim_plan_group_t){false, 0, m->num_layers};
  pl->blocks_per_request_max = T;
  int64_t per_seq = all / B;
  pl->max_concurrency =
      per_seq > 0 ? (double)(h->cache == KVSIM_HF_OFFLOADED ? o->gpu_bytes > 0 ? B : 0
                                                            : pl->available_kv_bytes / per_seq)
                  : 0;
  pl->fits = o->gpu_bytes <= pl->available_kv_bytes;
  pl->max_model_len_fit = T;
  if (!pl->fits) {
    /* torch's own words for a failed allocation. */
    snprintf(pl->error, sizeof pl->error,
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB for the %s "
             "cache of batch %lld x %lld tokens; %.2f GiB free after weights and activations",
             (double)o->gpu_bytes / KVSIM_GIB, kvsim_hf_cache_name(h->cache), (long long)B,
             (long long)T, (double)pl->available_kv_bytes / KVSIM_GIB);
    int64_t per_tok = per_seq / T;
    pl->max_model_len_fit = per_tok > 0 ? pl->available_kv_bytes / (B * per_tok) : 0;
    if (pl->max_model_len_fit > T)
      pl->max_model_len_fit = T;
  }
  return KVSIM_OK;
}
