/* The seeds' troubleshooting for a start-up that does not fit: which one
 * change would make the plan fit, each checked by computing its plan. */
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/plan.h"

static bool fits_with(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *p) {
  kvsim_plan_t pl;
  kvsim_err err;
  return kvsim_plan_compute(m, g, p, &pl, &err) == KVSIM_OK && pl.fits;
}

void kvsim_plan_advice(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_t *pl,
                       char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = '\0';
  char n[32];
#define ADD(...)                                                                                   \
  do {                                                                                             \
    if (o < cap)                                                                                   \
      o += (size_t)snprintf(buf + o, cap - o, "%s", o ? "; or " : "");                             \
    if (o < cap)                                                                                   \
      o += (size_t)snprintf(buf + o, cap - o, __VA_ARGS__);                                        \
  } while (0)
  kvsim_plan_params_t p = pl->p;
  const bool tgi = p.engine == KVSIM_PLAN_TGI;
  if (tgi) {
    /* TGI's length is max_total_tokens, and the one memory reason it
     * bounds is the router's NotEnoughMemory (total > batch total); a
     * token limit that contradicts itself (input >= total, no room for
     * a prompt) is the flags' own, and no memory change helps it. */
    const kvsim_plan_tgi_t *t = &pl->tgi;
    kvsim_plan_params_t q = p;
    q.tgi.max_total_tokens = t->max_batch_total_tokens;
    if (t->max_batch_total_tokens > 1 && t->max_total_tokens > t->max_batch_total_tokens &&
        fits_with(m, g, &q))
      ADD("max_total_tokens <= %s", kvsim__commas(t->max_batch_total_tokens, n, sizeof n));
  } else if (pl->max_model_len_fit > 0) {
    ADD("max_model_len <= %s", kvsim__commas(pl->max_model_len_fit, n, sizeof n));
  }
  if (p.kv_dtype == KVSIM_KV_AUTO || p.kv_dtype == KVSIM_KV_BF16 || p.kv_dtype == KVSIM_KV_FP16) {
    kvsim_plan_params_t q = p;
    q.kv_dtype = KVSIM_KV_FP8;
    if (fits_with(m, g, &q))
      ADD("kv_cache_dtype fp8");
  }
  if (p.engine == KVSIM_PLAN_SGLANG) {
    /* SGLang's own knob: the smallest mem_fraction_static that fits, to
     * the percent (its error says "try to increase --mem-fraction-static"). */
    kvsim_plan_params_t q = p;
    for (int u = (int)(pl->sglang.mem_fraction_static * 100) + 1; u <= 99; u++) {
      q.sglang.mem_fraction_static = u / 100.0;
      if (fits_with(m, g, &q)) {
        ADD("mem_fraction_static %.2f", q.sglang.mem_fraction_static);
        break;
      }
    }
  } else if (tgi) {
    /* TGI's own fraction (gpu_memory_utilization is derived from it). */
    kvsim_plan_params_t q = p;
    double frac = p.tgi.cuda_memory_fraction > 0 ? p.tgi.cuda_memory_fraction : 1.0;
    for (int u = (int)(frac * 100) + 1; u <= 100; u++) {
      q.tgi.cuda_memory_fraction = u / 100.0;
      if (fits_with(m, g, &q)) {
        ADD("cuda_memory_fraction %.2f", q.tgi.cuda_memory_fraction);
        break;
      }
    }
  } else if (p.gpu_memory_utilization < 0.98) {
    /* The smallest utilization that fits, to the percent. */
    kvsim_plan_params_t q = p;
    for (int u = (int)(p.gpu_memory_utilization * 100) + 1; u <= 98; u++) {
      q.gpu_memory_utilization = u / 100.0;
      if (fits_with(m, g, &q)) {
        ADD("gpu_memory_utilization %.2f", q.gpu_memory_utilization);
        break;
      }
    }
  }
  for (int tp = p.tp * 2; tp <= 64; tp *= 2) {
    kvsim_plan_params_t q = p;
    q.tp = tp;
    if (fits_with(m, g, &q)) {
      ADD("tensor_parallel_size %d", tp);
      break;
    }
  }
  if (!p.quantization[0] && m->quant.kind == KVSIM_QUANT_NONE) {
    kvsim_plan_params_t q = p;
    snprintf(q.quantization, sizeof q.quantization, "fp8");
    if (fits_with(m, g, &q))
      ADD("quantization fp8 (weights)");
  }
#undef ADD
  /* TGI: no advice rather than vLLM's list of what was tried. */
  if (!o && !tgi)
    snprintf(buf, cap, "no single change of max_model_len, KV dtype, utilization, TP or fp8 weights fits");
}
