/* The plan engines by name, for what compares them (calc
 * --compare-engines) and for the plan's printed engine name. */
#include "memory/plan_engines.h"
#include "kvsim/plan.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Each engine's memory fraction, for the comparison. */
static void v1_fraction(kvsim_plan_params_t *p, double f, int64_t seq_len) {
  p->gpu_memory_utilization = f;
  p->max_model_len = seq_len;
}
static void v1_settings(const kvsim_plan_t *pl, char *buf, size_t cap) {
  snprintf(buf, cap, "gpu_memory_utilization %.2f, block_size %d, max_num_batched_tokens %lld",
           pl->p.gpu_memory_utilization, pl->p.block_size, (long long)pl->p.max_num_batched_tokens);
}
static void sglang_fraction(kvsim_plan_params_t *p, double f, int64_t seq_len) {
  p->sglang.mem_fraction_static = f;
  p->max_model_len = seq_len; /* --context-length */
}
static void sglang_settings(const kvsim_plan_t *pl, char *buf, size_t cap) {
  snprintf(buf, cap, "mem_fraction_static %.3f%s, page_size %d, max_running_requests %lld",
           pl->sglang.mem_fraction_static, pl->sglang.fraction_auto ? " (auto)" : "", pl->p.block_size,
           (long long)pl->sglang.max_running_requests);
}
static void tgi_fraction(kvsim_plan_params_t *p, double f, int64_t seq_len) {
  p->tgi.cuda_memory_fraction = f;
  p->tgi.max_total_tokens = seq_len;
  p->tgi.max_input_tokens = seq_len - 1;
  /* Without chunking, a prompt must fit one prefill: the launcher's rule. */
  if (p->tgi.attention == KVSIM_TGI_PAGED && p->tgi.max_batch_prefill_tokens < seq_len)
    p->tgi.max_batch_prefill_tokens = seq_len;
}
static void tgi_settings(const kvsim_plan_t *pl, char *buf, size_t cap) {
  char v[16];
  kvsim_tgi_release_format(pl->p.tgi.version_major, pl->p.tgi.version_minor,
                           pl->p.tgi.version_patch, v, sizeof v);
  snprintf(buf, cap, "cuda_memory_fraction %.2f x TGI_WIGGLE_ROOM %.2f (%s), %s BLOCK_SIZE %lld",
           pl->p.tgi.cuda_memory_fraction, pl->tgi.wiggle_room, v,
           kvsim_tgi_attention_name(pl->p.tgi.attention), (long long)pl->tgi.block_size);
}
static void hf_fraction(kvsim_plan_params_t *p, double f, int64_t seq_len) {
  (void)f; /* one process takes what is free */
  p->hf.max_cache_len = seq_len;
}
static void hf_settings(const kvsim_plan_t *pl, char *buf, size_t cap) {
  snprintf(buf, cap, "no memory fraction: %s cache in all free memory",
           kvsim_hf_cache_name(pl->p.hf.cache));
}

const kvsim_plan_engine_info_t kvsim_plan_engines[] = {
    {KVSIM_PLAN_V1, "vllm-v1", "vllm-v1", true, v1_fraction, v1_settings},
    {KVSIM_PLAN_V0, "vllm-v0", "vllm-v0", false, v1_fraction, v1_settings},
    {KVSIM_PLAN_SGLANG, "sglang", "sglang", true, sglang_fraction, sglang_settings},
    {KVSIM_PLAN_TGI, "tgi", "tgi", true, tgi_fraction, tgi_settings},
    {KVSIM_PLAN_HF, "hf-transformers", "hf-transformers", true, hf_fraction, hf_settings},
    {KVSIM_PLAN_V1, NULL, NULL, false, NULL, NULL},
};

int kvsim_plan_compare(const kvsim_model_t *m, const kvsim_gpu_t *g,
                       const kvsim_plan_params_t *base, double fraction, int64_t seq_len,
                       kvsim_plan_compare_row_t *rows, int cap, int *n, kvsim_err *err) {
  *n = 0;
  if (!(fraction > 0 && fraction <= 1))
    return kvsim_err_set(err, KVSIM_EINVAL, "--memory-fraction: %g is outside (0, 1]", fraction);
  if (seq_len < 1 || seq_len > KVSIM_MODEL_MAX_CONTEXT)
    return kvsim_err_set(err, KVSIM_EINVAL, "--seq-len: %lld is out of range [1, %lld]",
                         (long long)seq_len, (long long)KVSIM_MODEL_MAX_CONTEXT);
  for (const kvsim_plan_engine_info_t *e = kvsim_plan_engines; e->name && *n < cap; e++) {
    if (!e->compare || !e->set_fraction)
      continue;
    kvsim_plan_compare_row_t *r = &rows[(*n)++];
    memset(r, 0, sizeof *r);
    r->engine = e;
    kvsim_plan_params_t p = *base;
    p.engine = e->engine;
    e->set_fraction(&p, fraction, seq_len);
    kvsim_err e2 = {0};
    r->rc = kvsim_plan_compute(m, g, &p, &r->plan, &e2);
    if (r->rc < 0)
      snprintf(r->error, sizeof r->error, "%s", e2.msg);
    else if (e->settings)
      e->settings(&r->plan, r->settings, sizeof r->settings);
  }
  return KVSIM_OK;
}

const char *kvsim_plan_engine_name(kvsim_plan_engine e) {
  for (const kvsim_plan_engine_info_t *i = kvsim_plan_engines; i->name; i++)
    if (i->engine == e)
      return i->name;
  return "?";
}

int kvsim_tgi_release_parse(const char *s, int *major, int *minor, int *patch) {
  if (!s)
    return KVSIM_EINVAL;
  if (*s == 'v' || *s == 'V')
    s++;
  int maj = 0, min = 0, pat = 0, used = 0;
  char tail[8] = "";
  int n = sscanf(s, "%d.%d%n", &maj, &min, &used);
  if (n < 2 || min < 0 || min > 99)
    return KVSIM_EINVAL;
  s += used;
  if (*s == '.' && sscanf(s, ".%d%7s", &pat, tail) >= 1) {
    if (pat < 0 || pat > 99 || (tail[0] && tail[0] != '-' && tail[0] != '+'))
      return KVSIM_EINVAL;
  } else if (*s)
    return KVSIM_EINVAL;
  /* 2.0.0 to 2.4.1 were the 2.x releases (git tags v2.0.0 ... v2.4.1). */
  bool v2 = maj == 2 && (min < 4 || (min == 4 && pat <= 1));
  if (!v2 && maj != 3)
    return KVSIM_EINVAL;
  *major = maj;
  *minor = min;
  *patch = pat;
  return KVSIM_OK;
}

int kvsim_tgi_version_parse(const char *s, int *minor) {
  int maj, min, pat;
  if (kvsim_tgi_release_parse(s, &maj, &min, &pat) < 0 || maj != 3)
    return KVSIM_EINVAL;
  *minor = min;
  return KVSIM_OK;
}

void kvsim_tgi_release_format(int major, int minor, int patch, char *buf, size_t cap) {
  if (patch > 0)
    snprintf(buf, cap, "%d.%d.%d", major ? major : 3, minor, patch);
  else
    snprintf(buf, cap, "%d.%d", major ? major : 3, minor);
}

kvsim_tgi_attention kvsim_tgi_default_attention(int major, int minor) {
  return major == 2 && minor < 3 ? KVSIM_TGI_PAGED : KVSIM_TGI_FLASHINFER;
}

int kvsim_tgi_attention_parse(const char *s, kvsim_tgi_attention *out) {
  static const char *const names[] = {"flashinfer", "flashdecoding", "paged"};
  for (int i = 0; i < 3; i++)
    if (!strcmp(s, names[i])) {
      *out = (kvsim_tgi_attention)i;
      return KVSIM_OK;
    }
  return KVSIM_EINVAL;
}

const char *kvsim_tgi_attention_name(kvsim_tgi_attention a) {
  return a == KVSIM_TGI_FLASHDECODING ? "flashdecoding"
         : a == KVSIM_TGI_PAGED       ? "paged"
                                      : "flashinfer";
}

static const char *const hf_names[] = {"dynamic", "static", "quantized", "offloaded"};

int kvsim_hf_cache_parse(const char *s, kvsim_hf_cache *out) {
  for (int i = 0; i < 4; i++)
    if (!strcmp(s, hf_names[i])) {
      *out = (kvsim_hf_cache)i;
      return KVSIM_OK;
    }
  return KVSIM_EINVAL;
}

const char *kvsim_hf_cache_name(kvsim_hf_cache c) {
  return (int)c >= 0 && (int)c < 4 ? hf_names[c] : "?";
}

int kvsim__plan_refuse_kv_cache_bytes(const kvsim_plan_params_t *p, const char *engine,
                                      const char *instead, kvsim_err *err) {
  if (p->kv_cache_memory_bytes <= 0)
    return KVSIM_OK;
  return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_KV_CACHE_MEMORY_BYTES,
                             "--kv-cache-memory-bytes (engine.kv_cache_memory_bytes)",
                             "%lld is vLLM's; %s "
                             "has no such option: %s",
                             (long long)p->kv_cache_memory_bytes, engine, instead);
}
