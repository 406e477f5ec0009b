/* TGI's KV pool, as its warmup sizes it (huggingface/text-generation-
 * inference >= 3.0):
 * - server/text_generation_server/models/flash_causal_lm.py
 *   FlashCausalLM.warmup: one prefill of max_batch_prefill_tokens tokens
 *   with its blocks allocated, then
 *     free_memory = get_free_memory(device, MEMORY_FRACTION * TGI_WIGGLE_ROOM)
 *     num_blocks  = int(free_memory // total_cache_size) + batch.num_blocks
 *   and "KV-cache blocks: {num_blocks}, size: {BLOCK_SIZE}"; the router logs
 *   "Setting max batch total tokens to {num_blocks * BLOCK_SIZE}"
 *   (backends/v3/src/lib.rs connect_backend);
 * - server/text_generation_server/utils/import_utils.py get_cuda_free_memory:
 *   max(0, mem_get_info().free - (1 - fraction) * total_memory);
 * - server/text_generation_server/models/globals.py: TGI_WIGGLE_ROOM 0.90
 *   since v3.3.0 (#3189), 0.93 in v3.1-v3.2, 0.95 in v3.0 (#2808, which
 *   also moved the room inside get_free_memory); BLOCK_SIZE 1 for
 *   flashinfer, 256 for flashdecoding, 16 otherwise (paged).
 * Free memory is what cudaMemGetInfo reports, so the CUDA context, NCCL
 * buffers and the warmup's activation peak (held by PyTorch's caching
 * allocator) are charged, unlike vLLM's profiling.
 *
 * TGI 2.x (tags v2.0.0 to v2.4.1), the same file and function:
 *   free_memory = get_free_memory(device, MEMORY_FRACTION)
 *   num_blocks  = int((free_memory * 0.95) // total_cache_size) + batch.num_blocks
 * i.e. the room multiplies what the fraction leaves ("Leave 5% for some
 * wiggle room"; TGI_WIGGLE_ROOM, default 0.95, from v2.3.0 and 0.90 in
 * v2.4.x, globals.py), and the router logs "Setting max batch total
 * tokens to {num_blocks * 16}". BLOCK_SIZE is 16 (paged) or 256
 * (FLASH_DECODING=1) before v2.3.0, which added ATTENTION and flashinfer.
 * Up to v2.4.0 the launcher (launcher/src/main.rs main) caps the model's
 * max_position_embeddings at 4096 and defaults max_input_tokens to it
 * minus 1, max_total_tokens to it and max_batch_prefill_tokens to
 * max_input_tokens + 50; the router then warms up with requests of
 * max_input_tokens prompt tokens and max_total_tokens - truncate new ones
 * (router/client/src/v3/client.rs warmup), each holding
 * ceil((max_total_tokens - 1) / BLOCK_SIZE) blocks (flash_causal_lm.py
 * FlashCausalLMBatch.from_tokenized: input_length + max_new_tokens - 1).
 * v2.4.1 took the 3.x launcher (defaults from the warmup, chunked
 * prefill) but kept the room on the free memory. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/arith.h"
#include "memory/overheads.h"
#include "memory/plan_engines.h"

#define cdiv kvsim__cdiv

/* launcher/src/main.rs: with neither --max-batch-prefill-tokens nor a
 * compute estimate the default is 4096 (then capped by the model's
 * max_position_embeddings). The compute_optimal estimate (GPU f16 FLOPs /
 * model FLOPs) is not modelled. */
#define TGI_DEFAULT_PREFILL_TOKENS 4096

/* What a release's warmup and launcher do differently. */
typedef struct rules {
  double wiggle_room;
  bool room_on_free;   /* 2.x: room x (free - (1 - fraction) x total) */
  bool fixed_defaults; /* 2.0.0-2.4.0: the 4096-capped launcher defaults, no chunking */
  int logits_tensors;  /* 2.x: [tokens x vocab] tensors of the warmup's prefill logprobs at TP 1 */
  bool flashinfer;     /* ATTENTION=flashinfer exists (v2.3.0+) */
  bool kv_dtype;       /* --kv-cache-dtype exists (v2.4.0+) */
} rules;

static rules release_rules(const kvsim_plan_tgi_params_t *t) {
  int major = t->version_major ? t->version_major : 3, minor = t->version_minor;
  if (major == 3)
    return (rules){minor >= 3 ? 0.90 : minor >= 1 ? 0.93 : 0.95, false, false, 0, true, true};
  /* The logits and their log_softmax up to v2.3.1; v2.4.0 computes the
   * log_softmax in place (flash_causal_lm.py generate_token, #2661). */
  rules r = {minor >= 4 ? 0.90 : 0.95, true, true, minor >= 4 ? 1 : 2, minor >= 3, minor >= 4};
  r.fixed_defaults = minor < 4 || (minor == 4 && t->version_patch == 0);
  return r;
}

static int64_t gib_bytes(double gib) { return (int64_t)llround(gib * KVSIM_GIB); }

static int check(const kvsim_model_t *m, const kvsim_plan_params_t *p, kvsim_err *err) {
  const kvsim_plan_tgi_params_t *t = &p->tgi;
  char name[160];
  int rc = kvsim_param_check_num(
      KVSIM_PARAM_CUDA_MEMORY_FRACTION, t->cuda_memory_fraction,
      kvsim_param_calc_name(KVSIM_PARAM_CUDA_MEMORY_FRACTION, name, sizeof name), err);
  if (rc < 0)
    return rc;
  int major = t->version_major ? t->version_major : 3;
  if ((major != 2 && major != 3) || t->version_minor < 0 || t->version_minor > 99 ||
      t->version_patch < 0 || t->version_patch > 99 ||
      (major == 2 && (t->version_minor > 4 || (t->version_minor == 4 && t->version_patch > 1))))
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_TGI_VERSION,
                               "--tgi-version (engine.tgi_version)",
                               "%d.%d.%d is not a modelled TGI "
                               "release (2.0.0 to 2.4.1, 3.x)",
                               major, t->version_minor, t->version_patch);
  rules r = release_rules(t);
  if (!r.flashinfer && t->attention == KVSIM_TGI_FLASHINFER)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_ATTENTION, "--attention flashinfer",
                               "TGI %d.%d has no flashinfer backend (added in "
                               "2.3.0); use paged (BLOCK_SIZE 16) or flashdecoding (256)",
                               major, t->version_minor);
  if (!r.kv_dtype && p->kv_dtype != KVSIM_KV_AUTO)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_KV_CACHE_DTYPE, "--kv-cache-dtype",
                               "TGI %d.%d has no such flag (added in 2.4.0); its "
                               "cache is in the model's dtype",
                               major, t->version_minor);
  const char *tp_flag = p->tp_flag ? p->tp_flag : "--num-shard (hardware.tensor_parallel_size)";
  if ((rc = kvsim_param_check_int(KVSIM_PARAM_TENSOR_PARALLEL_SIZE, p->tp, tp_flag, err)) < 0)
    return rc;
  if (p->pp != 1)
    return kvsim_err_set(
        err, KVSIM_EINVAL,
        "hardware.pipeline_parallel_size: %d (TGI shards by tensor parallelism only)", p->pp);
  if (m->num_heads % p->tp)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_TENSOR_PARALLEL_SIZE, tp_flag,
                               "%d does not divide the model's %lld attention heads", p->tp,
                               (long long)m->num_heads);
  /* 0 is the launcher's default here; each names its flag and key. */
  const int toks[] = {KVSIM_PARAM_MAX_INPUT_TOKENS, KVSIM_PARAM_MAX_TOTAL_TOKENS,
                      KVSIM_PARAM_MAX_BATCH_PREFILL_TOKENS, KVSIM_PARAM_MAX_BATCH_TOTAL_TOKENS};
  const int64_t vals[] = {t->max_input_tokens, t->max_total_tokens, t->max_batch_prefill_tokens,
                          t->max_batch_total_tokens};
  for (size_t i = 0; i < sizeof toks / sizeof *toks; i++)
    if ((rc = kvsim_param_check_plan_int(
             toks[i], vals[i], kvsim_param_calc_name(toks[i], name, sizeof name), err)) < 0)
      return rc;
  if (kvsim__plan_refuse_kv_cache_bytes(p, "TGI",
                                        "size the pool with engine.cuda_memory_fraction "
                                        "(--cuda-memory-fraction) or engine.max_batch_total_tokens",
                                        err) < 0)
    return err->code;
  if (p->kv_dtype == KVSIM_KV_INT8 || p->kv_dtype == KVSIM_KV_INT4)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_KV_CACHE_DTYPE, "--kv-cache-dtype",
                               "TGI accepts fp8_e4m3fn and fp8_e5m2 only");
  /* layers/attention/kv_cache.py KVCache.__init__: FP8 KV with flashinfer
   * or paged attention on CUDA, not flashdecoding. */
  if (p->kv_dtype == KVSIM_KV_FP8 && t->attention == KVSIM_TGI_FLASHDECODING)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_KV_CACHE_DTYPE, "--kv-cache-dtype",
                               "FP8 KV cache is currently only supported for flashinfer "
                               "on CUDA and paged attention (--attention flashdecoding)");
  return KVSIM_OK;
}

/* launcher/src/main.rs main, v2.0.0 to v2.4.0: "tgi will now set its
 * default to 4096" (max_position_embeddings capped at 4096, 4096 when the
 * config has none), then max_input_tokens = that - 1, max_total_tokens =
 * that, max_batch_prefill_tokens = max_batch_size x max_input_tokens or
 * max_input_tokens + 50 ("some edge ... for block_size alignement"). */
static void fixed_defaults(const kvsim_model_t *m, kvsim_plan_params_t *p, kvsim_plan_tgi_t *t) {
  int64_t pos = m->max_position_embeddings > 0 && m->max_position_embeddings < 4096
                    ? m->max_position_embeddings
                    : 4096;
  t->input_defaulted = p->tgi.max_input_tokens <= 0;
  t->total_defaulted = p->tgi.max_total_tokens <= 0;
  if (t->input_defaulted)
    p->tgi.max_input_tokens = pos - 1;
  if (t->total_defaulted)
    p->tgi.max_total_tokens = pos;
  if (t->max_batch_prefill_tokens <= 0) {
    int64_t v = p->tgi.max_input_tokens + 50;
    /* A u32 in the launcher; held to the plan's token bound here. */
    if (p->max_num_seqs > 0 &&
        (!kvsim__mul_i64(p->max_num_seqs, p->tgi.max_input_tokens, &v) || v > KVSIM_MODEL_MAX_CONTEXT))
      v = KVSIM_MODEL_MAX_CONTEXT;
    t->max_batch_prefill_tokens = v;
  }
}

/* TGI 2.x's warmup requests ask for prefill_logprobs (router/client/src/
 * v3/client.rs warmup: prefill_logprobs: true; 3.x drops it unless
 * REQUEST_LOGPROBS is set), so FlashCausalLMBatch.from_tokenized keeps
 * every prompt position for the LM head (prefill_head_indices None) and
 * generate_token holds `out`, the [tokens x vocab] logits in the model
 * dtype, while torch.log_softmax(out, -1) allocates its result: two such
 * tensors up to v2.3.1, one from v2.4.0 (in place, #2661). At TP > 1
 * TensorParallelHead.forward (layers/tensor_parallel.py, v2.0.3-v2.4.1)
 * computes this rank's [vocab / tp x tokens] slice, all-gathers it into a
 * [vocab x tokens] tensor and returns its transpose, a view that is not
 * contiguous, so log_softmax copies it first (PyTorch host_softmax,
 * aten/src/ATen/native/cuda/SoftMax.cu: input_.contiguous()): one more
 * full tensor and the slice. A vocabulary that tp does not divide loads
 * the whole head on every rank and gathers nothing (TensorParallelHead.load). */
static int64_t prefill_logits_bytes(const kvsim_model_t *m, int tp, int tensors, int64_t tokens) {
  int64_t full = tokens * m->vocab_size * m->dtype_bytes, bytes = tensors * full;
  if (tp > 1 && m->vocab_size % tp == 0)
    bytes += full + tokens * (m->vocab_size / tp) * m->dtype_bytes;
  return bytes;
}

/* The warmup's share of what the caching allocator holds when
 * get_free_memory runs (it reads cudaMemGetInfo, which counts reserved
 * segments, and nothing calls empty_cache between generate_token and it):
 * the forward pass's segments and, on top of them, the logits. Each
 * logits tensor is larger than any cached forward block and PyTorch's
 * allocator never merges separate segments (c10/cuda/
 * CUDACachingAllocator.cpp), so it gets a segment of its own rather than
 * reusing the forward's: the two add, where vLLM's peak-allocated
 * profile would take the larger. */
static int64_t warmup_peak(const kvsim_model_t *m, int tp, const kvsim_plan_tgi_t *t) {
  int64_t fwd = kvsim__activation_bytes(m, tp, t->max_batch_prefill_tokens, 1, KVSIM_PLAN_V1);
  return fwd + t->prefill_logits_bytes;
}

/* Fills the geometry and the memory terms; returns the bytes of one block. */
static int geometry(const kvsim_model_t *m, const kvsim_gpu_t *g, kvsim_plan_t *pl,
                    kvsim_err *err) {
  kvsim_plan_params_t *p = &pl->p;
  kvsim_plan_tgi_t *t = &pl->tgi;
  kvsim_quant_t q;
  int rc = kvsim__quant_resolve(m, p->quantization, &q, err);
  if (rc < 0)
    return rc;
  rules r = release_rules(&p->tgi);
  t->wiggle_room = r.wiggle_room;
  t->room_on_free = r.room_on_free;
  t->launcher_fixed_defaults = r.fixed_defaults;
  t->block_size = p->tgi.attention == KVSIM_TGI_FLASHINFER      ? 1
                  : p->tgi.attention == KVSIM_TGI_FLASHDECODING ? 256
                                                                : 16;
  /* launcher resolve_attention: prefix caching needs flashinfer or
   * flashdecoding; paged attention turns it off. */
  t->prefix_caching = p->tgi.attention != KVSIM_TGI_PAGED &&
                      (p->tgi.version_major != 2 || p->tgi.version_minor >= 3);
  pl->num_layers = m->num_layers;
  /* warmup: num_kv_heads = kv_heads // world_size (one head when fewer). */
  pl->kv_heads_per_rank = kvsim_model_kv_heads_per_rank(m, p->tp);
  pl->head_dim = kvsim_model_kv_head_size(m);
  pl->kv_bytes_per_element = p->kv_dtype == KVSIM_KV_FP8    ? 1
                             : p->kv_dtype == KVSIM_KV_AUTO ? m->dtype_bytes
                                                            : 2;
  int64_t elem = (int64_t)pl->kv_bytes_per_element;
  /* total_cache_size = num_layers * BLOCK_SIZE * num_kv_heads * head_size * 2 * dtype_size */
  pl->per_token_kv_bytes =
      pl->num_layers * pl->kv_heads_per_rank * pl->head_dim * kvsim_model_kv_factor(m) * elem;
  pl->page_bytes = pl->per_token_kv_bytes / pl->num_layers * t->block_size;
  pl->block_bytes = pl->per_token_kv_bytes * t->block_size;
  pl->total_memory_bytes =
      p->total_memory_bytes > 0 ? p->total_memory_bytes : g->memory_total_bytes;
  p->total_memory_bytes = pl->total_memory_bytes;
  /* A scenario shared with vLLM profiles names the same limits by vLLM's
   * keys: max_model_len is TGI's max_total_tokens, max_num_batched_tokens
   * its max_batch_prefill_tokens and max_num_seqs its --max-batch-size;
   * TGI's own keys win. */
  if (p->tgi.max_total_tokens <= 0)
    p->tgi.max_total_tokens = p->max_model_len;
  t->max_batch_prefill_tokens = p->tgi.max_batch_prefill_tokens > 0
                                    ? p->tgi.max_batch_prefill_tokens
                                    : p->max_num_batched_tokens;
  if (r.fixed_defaults)
    fixed_defaults(m, p, t);
  else if (t->max_batch_prefill_tokens <= 0) {
    t->max_batch_prefill_tokens = TGI_DEFAULT_PREFILL_TOKENS;
    if (m->max_position_embeddings > 0 && m->max_position_embeddings < t->max_batch_prefill_tokens)
      t->max_batch_prefill_tokens = m->max_position_embeddings;
  }
  pl->weights_bytes =
      p->weights_gib >= 0 ? gib_bytes(p->weights_gib) : kvsim__weights_bytes(m, &q, p->tp, 1, 0);
  if (r.logits_tensors > 0)
    t->prefill_logits_bytes =
        prefill_logits_bytes(m, p->tp, r.logits_tensors, t->max_batch_prefill_tokens);
  pl->activation_bytes =
      p->activation_gib >= 0 ? gib_bytes(p->activation_gib) : warmup_peak(m, p->tp, t);
  /* Context, workspaces and (TP > 1) NCCL buffers: all lower cudaMemGetInfo's
   * free memory (the V0 rule charges NCCL as well). */
  pl->non_torch_bytes = p->non_torch_gib >= 0
                            ? gib_bytes(p->non_torch_gib)
                            : gib_bytes(KVSIM__CUDA_CONTEXT_GIB) +
                                  kvsim__non_torch_bytes(m, g, p->tp, 1, KVSIM_PLAN_V0, kvsim_plan_version_newest(KVSIM_PLAN_V0));
  return KVSIM_OK;
}

int kvsim__plan_tgi(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *pin,
                    kvsim_plan_t *pl, kvsim_err *err) {
  memset(pl, 0, sizeof *pl);
  pl->p = *pin;
  kvsim_plan_params_t *p = &pl->p;
  kvsim_plan_tgi_t *t = &pl->tgi;
  int rc = check(m, p, err);
  if (rc < 0 || (rc = geometry(m, g, pl, err)) < 0)
    return rc;
  const int64_t bs = t->block_size, total = pl->total_memory_bytes;
  /* The warmup batch: prompts of max_input_tokens (or the whole budget)
   * up to max_batch_prefill_tokens, one new token each before the server
   * knows max_total_tokens (backends/v3/src/client/grpc_client.rs warmup);
   * up to 2.4.0 the launcher's max_total_tokens - truncate new ones. */
  int64_t in = p->tgi.max_input_tokens > 0 ? p->tgi.max_input_tokens : t->max_batch_prefill_tokens;
  if (in > t->max_batch_prefill_tokens)
    in = t->max_batch_prefill_tokens;
  t->warmup_requests = cdiv(t->max_batch_prefill_tokens, in);
  int64_t per_request =
      t->launcher_fixed_defaults ? cdiv(p->tgi.max_total_tokens - 1, bs) : cdiv(in + 1, bs);
  if (!kvsim__mul_i64(t->warmup_requests, per_request, &t->warmup_blocks) ||
      t->warmup_blocks > KVSIM_PLAN_MAX_BLOCKS)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "memory plan: the TGI warmup batch of %lld requests x %lld blocks exceeds "
                         "%lld blocks (lower --max-batch-prefill-tokens or --max-total-tokens)",
                         (long long)t->warmup_requests, (long long)per_request,
                         (long long)KVSIM_PLAN_MAX_BLOCKS);
  double warm_bytes = (double)t->warmup_blocks * (double)pl->block_bytes;
  double free_now = (double)total - (double)pl->weights_bytes - (double)pl->activation_bytes -
                    (double)pl->non_torch_bytes - warm_bytes;
  double frac = p->tgi.cuda_memory_fraction, kv;
  if (t->room_on_free) {
    /* 2.x: int((get_free_memory(device, MEMORY_FRACTION) * room) // size). */
    double left = free_now - (1.0 - frac) * (double)total;
    kv = t->wiggle_room * (left > 0 ? left : 0);
    pl->requested_bytes = (int64_t)((double)total * frac);
    p->gpu_memory_utilization = frac;
  } else {
    kv = free_now - (1.0 - frac * t->wiggle_room) * (double)total;
    pl->requested_bytes = (int64_t)((double)total * frac * t->wiggle_room);
    /* The share of the GPU the pool may reach, in the plan's common field. */
    p->gpu_memory_utilization = frac * t->wiggle_room;
  }
  if (kv < 0)
    kv = 0;
  int64_t blocks = p->num_gpu_blocks_override > 0 ? p->num_gpu_blocks_override
                                                  : (int64_t)floor(kv / (double)pl->block_bytes) +
                                                        (free_now > 0 ? t->warmup_blocks : 0);
  if (blocks > KVSIM_PLAN_MAX_BLOCKS)
    return kvsim_err_set(err, KVSIM_EINVAL, "memory plan: %lld TGI blocks exceed %lld",
                         (long long)blocks, (long long)KVSIM_PLAN_MAX_BLOCKS);
  t->num_blocks = blocks;
  t->max_batch_total_tokens = blocks * bs;
  pl->available_kv_bytes = blocks * pl->block_bytes;
  t->total_tokens_flag_ignored = p->tgi.max_batch_total_tokens > 0;
  /* warmup: max_total_tokens defaults to min(num_blocks * BLOCK_SIZE,
   * model_max_length, max_position_embeddings) when the model chunks
   * prefill (flashinfer, flashdecoding), else to the warmup batch's cache
   * lengths; max_input_tokens to max_total_tokens - 1. */
  bool chunking = p->tgi.attention != KVSIM_TGI_PAGED && !t->launcher_fixed_defaults;
  t->max_total_tokens = p->tgi.max_total_tokens;
  if (t->max_total_tokens <= 0) {
    t->max_total_tokens = chunking ? t->max_batch_total_tokens : t->max_batch_prefill_tokens;
    if (m->max_position_embeddings > 0 && m->max_position_embeddings < t->max_total_tokens)
      t->max_total_tokens = m->max_position_embeddings;
  }
  t->max_input_tokens =
      p->tgi.max_input_tokens > 0 ? p->tgi.max_input_tokens : t->max_total_tokens - 1;
  /* What the run's scheduler reads. */
  p->block_size = (int)bs;
  p->max_model_len = t->max_total_tokens;
  p->max_num_batched_tokens = t->max_batch_prefill_tokens;
  if (p->max_num_seqs <= 0) /* --max-batch-size: none by default */
    p->max_num_seqs =
        blocks > 1 ? (blocks < KVSIM_PLAN_MAX_SEQS ? blocks : KVSIM_PLAN_MAX_SEQS) : 1;
  p->enable_chunked_prefill = chunking;
  pl->num_gpu_blocks = blocks;
  pl->kv_cache_tokens = t->max_batch_total_tokens;
  pl->num_groups = 1;
  pl->group_size = pl->num_layers;
  pl->groups[0] = (kvsim_plan_group_t){false, 0, pl->num_layers};
  pl->blocks_per_request_max = cdiv(t->max_total_tokens, bs);
  /* Block 0 is reserved for health checks (backends/v3/src/block_allocator.rs). */
  pl->max_concurrency = pl->blocks_per_request_max > 0 ? (double)(blocks > 1 ? blocks - 1 : 0) /
                                                             (double)pl->blocks_per_request_max
                                                       : 0;
  pl->fits = true;
  pl->max_model_len_fit = t->max_total_tokens;
  if (t->max_input_tokens >= t->max_total_tokens) {
    pl->fits = false;
    snprintf(pl->error, sizeof pl->error,
             "`max_input_tokens` must be < `max_total_tokens`. Given: %lld and %lld",
             (long long)t->max_input_tokens, (long long)t->max_total_tokens);
  } else if (t->max_input_tokens < 1) {
    /* A max_total_tokens of 1 leaves the default input limit (the total
     * minus one) at 0: no prompt is ever accepted. */
    pl->fits = false;
    snprintf(pl->error, sizeof pl->error,
             "max_input_tokens is %lld (max_total_tokens %lld - 1): no prompt fits",
             (long long)t->max_input_tokens, (long long)t->max_total_tokens);
  } else if (!chunking && t->max_batch_prefill_tokens < t->max_input_tokens) {
    /* launcher main: without chunking a prompt must fit one prefill. */
    pl->fits = false;
    snprintf(pl->error, sizeof pl->error,
             "`max_batch_prefill_tokens` must be >= `max_input_tokens`. Given: %lld and %lld",
             (long long)t->max_batch_prefill_tokens, (long long)t->max_input_tokens);
  } else if (free_now <= 0) {
    pl->fits = false;
    snprintf(pl->error, sizeof pl->error,
             "Not enough memory to handle %lld prefill tokens. You need to decrease "
             "`--max-batch-prefill-tokens`",
             (long long)t->max_batch_prefill_tokens);
  } else if (t->max_total_tokens > t->max_batch_total_tokens) {
    /* lib.rs connect_backend: the router's NotEnoughMemory. */
    pl->fits = false;
    pl->max_model_len_fit = t->max_batch_total_tokens;
    snprintf(pl->error, sizeof pl->error,
             "Not enough memory to handle %lld total tokens with a batch of %lld tokens "
             "(max_batch_total_tokens); decrease `--max-total-tokens` or raise "
             "`--cuda-memory-fraction`",
             (long long)t->max_total_tokens, (long long)t->max_batch_total_tokens);
  }
  return KVSIM_OK;
}
