/* The seeds' troubleshooting for a start-up that does not fit: which one
 * change would make the plan fit, each checked by computing its plan. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/plan.h"

static bool fits_with(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *p) {
  kvsim_plan_t pl;
  kvsim_err err;
  return kvsim_plan_compute(m, g, p, &pl, &err) == KVSIM_OK && pl.fits;
}

/* The advice so far: alternatives joined by "; or ". */
typedef struct advice {
  char *buf;
  size_t cap, o;
} advice_t;

__attribute__((format(printf, 2, 3))) static void add(advice_t *a, const char *fmt, ...) {
  if (a->o < a->cap)
    a->o += (size_t)snprintf(a->buf + a->o, a->cap - a->o, "%s", a->o ? "; or " : "");
  if (a->o >= a->cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  a->o += (size_t)vsnprintf(a->buf + a->o, a->cap - a->o, fmt, ap);
  va_end(ap);
}

/* The smallest memory fraction that fits, to the percent, in (from, to]
 * percent: *field (a member of *q) is set to each in turn. 0 if none. */
static double smallest_fraction(const kvsim_model_t *m, const kvsim_gpu_t *g, kvsim_plan_params_t *q,
                                double *field, double from, int to) {
  for (int u = (int)(from * 100) + 1; u <= to; u++) {
    *field = u / 100.0;
    if (fits_with(m, g, q))
      return *field;
  }
  return 0;
}

/* The engine's own memory knob: SGLang's mem_fraction_static (its error
 * says "try to increase --mem-fraction-static"), TGI's
 * cuda_memory_fraction (gpu_memory_utilization is derived from it), else
 * vLLM's gpu_memory_utilization. */
static void advise_fraction(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_t *pl,
                            advice_t *a) {
  kvsim_plan_params_t q = pl->p;
  double f;
  if (q.engine == KVSIM_PLAN_SGLANG) {
    if ((f = smallest_fraction(m, g, &q, &q.sglang.mem_fraction_static, pl->sglang.mem_fraction_static, 99)) > 0)
      add(a, "mem_fraction_static %.2f", f);
  } else if (q.engine == KVSIM_PLAN_TGI) {
    double frac = q.tgi.cuda_memory_fraction > 0 ? q.tgi.cuda_memory_fraction : 1.0;
    if ((f = smallest_fraction(m, g, &q, &q.tgi.cuda_memory_fraction, frac, 100)) > 0)
      add(a, "cuda_memory_fraction %.2f", f);
  } else if (q.gpu_memory_utilization < 0.98) {
    if ((f = smallest_fraction(m, g, &q, &q.gpu_memory_utilization, q.gpu_memory_utilization, 98)) > 0)
      add(a, "gpu_memory_utilization %.2f", f);
  }
}

/* The length limit: TGI's max_total_tokens, where the one memory reason it
 * bounds is the router's NotEnoughMemory (total > batch total; a token
 * limit that contradicts itself, input >= total, is the flags' own and no
 * memory change helps it), else the largest max_model_len that fits. */
static void advise_length(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_t *pl,
                          advice_t *a) {
  char n[32];
  if (pl->p.engine == KVSIM_PLAN_TGI) {
    const kvsim_plan_tgi_t *t = &pl->tgi;
    kvsim_plan_params_t q = pl->p;
    q.tgi.max_total_tokens = t->max_batch_total_tokens;
    if (t->max_batch_total_tokens > 1 && t->max_total_tokens > t->max_batch_total_tokens &&
        fits_with(m, g, &q))
      add(a, "max_total_tokens <= %s", kvsim__commas(t->max_batch_total_tokens, n, sizeof n));
  } else if (pl->max_model_len_fit > 0) {
    add(a, "max_model_len <= %s", kvsim__commas(pl->max_model_len_fit, n, sizeof n));
  }
}

void kvsim_plan_advice(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_t *pl,
                       char *buf, size_t cap) {
  advice_t a = {buf, cap, 0};
  buf[0] = '\0';
  const kvsim_plan_params_t p = pl->p;
  advise_length(m, g, pl, &a);
  if (p.kv_dtype == KVSIM_KV_AUTO || p.kv_dtype == KVSIM_KV_BF16 || p.kv_dtype == KVSIM_KV_FP16) {
    kvsim_plan_params_t q = p;
    q.kv_dtype = KVSIM_KV_FP8;
    if (fits_with(m, g, &q))
      add(&a, "kv_cache_dtype fp8");
  }
  advise_fraction(m, g, pl, &a);
  for (int tp = p.tp * 2; tp <= 64; tp *= 2) {
    kvsim_plan_params_t q = p;
    q.tp = tp;
    if (fits_with(m, g, &q)) {
      add(&a, "tensor_parallel_size %d", tp);
      break;
    }
  }
  if (!p.quantization[0] && m->quant.kind == KVSIM_QUANT_NONE) {
    kvsim_plan_params_t q = p;
    snprintf(q.quantization, sizeof q.quantization, "fp8");
    if (fits_with(m, g, &q))
      add(&a, "quantization fp8 (weights)");
  }
  /* TGI: no advice rather than vLLM's list of what was tried. */
  if (!a.o && p.engine != KVSIM_PLAN_TGI)
    snprintf(buf, cap, "no single change of max_model_len, KV dtype, utilization, TP or fp8 weights fits");
}
