/* hf-transformers: model.generate() in one process over batches of a fixed
 * size, the way scripts and notebooks serve a model with Hugging Face
 * Transformers: static batching (static.c) with the cache class choosing
 * the memory of a row (src/transformers/cache_utils.py):
 * - static: StaticCache preallocates max_cache_len per row at the first
 *   forward (StaticLayer.lazy_initialization) — static.c's reservation;
 * - dynamic: DynamicCache grows by torch.cat per token on the [batch,
 *   heads, seq, dim] tensor, so every row, finished or padded, holds the
 *   batch's padded prompt plus the steps so far — static.c's growing rows;
 * - quantized: the growing rows at nbits per element plus a scale and zero
 *   point per q_group_size elements, and the residual of residual_length
 *   tokens in the model dtype (the plan's per-token and residual bytes);
 * - offloaded: growing rows kept in host memory; each step streams every
 *   layer in and out over the host link (Cache.update: prefetch layer i+1 on
 *   a side stream, offload layer i), which the step waits for beside its
 *   compute.
 * The allocation-waste metrics show what each class holds beyond its
 * tokens: a static row's unused max_cache_len, a dynamic row's padding and
 * post-finish growth, a quantized row's scales and residual. */
#include <cJSON.h>
#include <string.h>

#include "core/params_json.h"
#include "core/util.h"
#include "kvsim/sched.h"
#include "sched/opts_print.h"
#include "sched/static.h"

typedef struct hf_opts {
  int32_t cache; /* kvsim_hf_cache */
  int32_t nbits, q_group_size, residual_length;
  int64_t batch, max_cache_len;
} hf_opts_t;
_Static_assert(sizeof(hf_opts_t) <= KVSIM_SCHED_OPTS_BYTES,
               "hf-transformers options fit the buffer");

static const char *const option_keys[] = {
    "cache", "batch", "max_cache_len", "nbits", "q_group_size", "residual_length", NULL};

/* generate() takes what memory is free: no fraction (memory/plan_hf.c). */
static const char *const ignored_keys[] = {"gpu_memory_utilization", NULL};

static int parse_opts(const cJSON *engine, const char *w, kvsim_sched_opts_t *opts,
                      kvsim_err *err) {
  hf_opts_t *o = (hf_opts_t *)opts->bytes;
  char cache[16] = "dynamic";
  int64_t batch = 1, len = 0, nbits = 4, group = 64, res = 128;
  int rc;
  kvsim_hf_cache c = KVSIM_HF_DYNAMIC;
  if ((rc = kvsim__json_str(engine, "cache", cache, sizeof cache, w, err)) < 0 ||
      (rc = kvsim__json_param_int(engine, KVSIM_PARAM_BATCH, &batch, w, err)) < 0 ||
      /* Absent: 0, the plan's default (max_model_len, else the model's
       * max_position_embeddings); a written 0 was silently that default. */
      (rc = kvsim__json_param_int(engine, KVSIM_PARAM_MAX_CACHE_LEN, &len, w, err)) < 0 ||
      (rc = kvsim__json_int(engine, "nbits", &nbits, w, err)) < 0 ||
      (rc = kvsim__json_param_int(engine, KVSIM_PARAM_Q_GROUP_SIZE, &group, w, err)) < 0 ||
      (rc = kvsim__json_param_int(engine, KVSIM_PARAM_RESIDUAL_LENGTH, &res, w, err)) < 0)
    return rc;
  if (kvsim_hf_cache_parse(cache, &c) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.cache: '%s' (expected dynamic, static, quantized or offloaded)", w,
                         cache);
  /* As calc --nbits: QuantoQuantizedLayer takes 2 or 4 ("[2, 4]" read as
   * if 3 were one), whatever the cache class. */
  if (nbits != 2 && nbits != 4)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.nbits: %lld is out of range (2 or 4: transformers' quanto "
                         "QuantizedCache)",
                         w, (long long)nbits);
  o->cache = (int32_t)c;
  o->batch = batch;
  o->max_cache_len = len;
  o->nbits = (int32_t)nbits;
  o->q_group_size = (int32_t)group;
  o->residual_length = (int32_t)res;
  return KVSIM_OK;
}

static int print_opts(const kvsim_sched_opts_t *opts, const kvsim_plan_params_t *p, cJSON *engine) {
  (void)p;
  const hf_opts_t *o = (const hf_opts_t *)opts->bytes;
  kvsim__optout_t out = kvsim__optout(option_keys, opts, engine);
  kvsim__optout_str(&out, "cache", kvsim_hf_cache_name((kvsim_hf_cache)o->cache));
  kvsim__optout_num(&out, "batch", (double)o->batch);
  kvsim__optout_num(&out, "max_cache_len", (double)o->max_cache_len);
  kvsim__optout_num(&out, "nbits", o->nbits);
  kvsim__optout_num(&out, "q_group_size", o->q_group_size);
  kvsim__optout_num(&out, "residual_length", o->residual_length);
  return out.rc;
}

static void plan_opts(const kvsim_sched_opts_t *opts, kvsim_plan_params_t *p) {
  const hf_opts_t *o = (const hf_opts_t *)opts->bytes;
  p->hf.cache = (kvsim_hf_cache)o->cache;
  p->hf.batch = o->batch;
  p->hf.max_cache_len = o->max_cache_len;
  p->hf.nbits = o->nbits;
  p->hf.q_group_size = o->q_group_size;
  p->hf.residual_length = o->residual_length;
}

static int init(kvsim_sched_t *s, kvsim_err *err) {
  const hf_opts_t *o = kvsim_sched_opts(s);
  if (s->cfg.enable_prefix_caching)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "engine.enable_prefix_caching: hf-transformers has no prefix cache "
                         "(generate() recomputes every prompt)");
  return kvsim__static_init(s, o->cache != KVSIM_HF_STATIC, err);
}

static int schedule(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step) {
  int rc = kvsim__static_schedule(s, now, step);
  const hf_opts_t *o = kvsim_sched_opts(s);
  if (rc < 0 || o->cache != KVSIM_HF_OFFLOADED || !step->reqs.n)
    return rc;
  /* Every layer of the batch's cache goes to the GPU and back each step:
   * the rows' tokens (one-token blocks of all layers' bytes) over the link
   * one way, the other direction in parallel. */
  kvsim_request_t *const *held;
  int32_t nheld = kvsim__static_held(s, &held);
  int64_t tokens = 0;
  for (int32_t i = 0; i < s->running.n + nheld; i++) {
    const kvsim_request_t *r = i < s->running.n ? s->running.v[i] : held[i - s->running.n];
    tokens += kvsim_kvcache_held(s->kv, r);
  }
  step->extra_ns += kvsim_cpu_tier_transfer_ns(s->cpu, tokens);
  return KVSIM_OK;
}

const kvsim_sched_ops_t kvsim__sched_hf = {
    .name = "hf-transformers",
    .help = "HF Transformers generate(): static batches of `batch` rows; dynamic, static, "
            "quantized or offloaded cache",
    .size = sizeof(static_t),
    /* No prefix cache; offloading prefetches on a side stream, overlapping
     * compute (cache_utils.py Cache.prefetch). */
    .plan_engine = KVSIM_PLAN_HF,
    .defaults = {.enable_prefix_caching = false, .transfer_overlap = true, .recompute_only = true},
    .option_keys = option_keys,
    .parse_opts = parse_opts,
    .print_opts = print_opts,
    .plan_params = plan_opts,
    .ignored_keys = ignored_keys,
    .init = init,
    .fini = kvsim__static_fini,
    .add = kvsim__static_add,
    .schedule = schedule,
    .update = kvsim__static_update,
    .held = kvsim__static_held,
};
