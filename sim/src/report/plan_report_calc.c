/* kvsim calc's engines: which one argv names, and what they share. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "kvsim/params.h"
#include "kvsim/sched.h"
#include "plan_report_calc.h"

/* Names and helps of the registry's rows, from the registry; a table ends
 * at a row with neither a name nor a parameter. */
static void fill_table(const kvsim_calc_flag_t *table) {
  for (kvsim_calc_flag_t *f = (kvsim_calc_flag_t *)table; f->name || f->param; f++) {
    const kvsim_param_t *p = kvsim_param_get(f->param);
    if (p) {
      f->name = p->flag;
      f->help = p->doc;
    }
  }
}

static void fill_tables(void) {
  const kvsim_calc_engine_t *const all[] = {&kvsim__calc_vllm, &kvsim__calc_sglang,
                                            &kvsim__calc_tgi, &kvsim__calc_hf,
                                            &kvsim__calc_compare};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    fill_table(all[i]->flags);
}

const kvsim_calc_engine_t *kvsim_calc_engine_find(const char *engine, bool compare) {
  /* Once, and safely so from threads of a library user. */
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, fill_tables);
  if (compare)
    return &kvsim__calc_compare;
  const kvsim_sched_ops_t *ops = engine ? kvsim_sched_find(engine) : NULL;
  switch (ops ? ops->plan_engine : KVSIM_PLAN_V1) {
  case KVSIM_PLAN_SGLANG:
    return &kvsim__calc_sglang;
  case KVSIM_PLAN_TGI:
    return &kvsim__calc_tgi;
  case KVSIM_PLAN_HF:
    return &kvsim__calc_hf;
  default:
    return &kvsim__calc_vllm;
  }
}

int kvsim_calc_status(const kvsim_calc_args_t *a, const kvsim_calc_t *c) {
  return a->common.strict && !c->pl.fits ? 1 : 0;
}

int kvsim__calc_load(const kvsim_calc_common_t *a, kvsim_calc_t *c, kvsim_err *err) {
  kvsim_err e = {0};
  if (kvsim_model_load(a->model, &c->m, &e) < 0)
    return kvsim_err_set(err, e.code, "--model: %s", e.msg);
  if (kvsim_gpu_load(a->gpu, &c->g, &e) < 0)
    return kvsim_err_set(err, e.code, "--gpu: %s", e.msg);
  return KVSIM_OK;
}

bool kvsim__calc_given(const kvsim_calc_args_t *a, const kvsim_calc_flag_t *flags, size_t offset) {
  for (int i = 0; i < KVSIM_CALC_MAX_FLAGS && flags[i].name; i++)
    if (flags[i].offset == offset && a->given[i])
      return true;
  return false;
}

const char *kvsim__calc_flag_name(const kvsim_calc_args_t *a, const kvsim_calc_flag_t *flags,
                                  size_t offset) {
  const char *first = NULL;
  for (int i = 0; i < KVSIM_CALC_MAX_FLAGS && flags[i].name; i++)
    if (flags[i].offset == offset) {
      if (a->given[i])
        return flags[i].name;
      first = first ? first : flags[i].name;
    }
  return first;
}

int kvsim__calc_quant(const kvsim_calc_args_t *a, const kvsim_calc_flag_t *flags, size_t offset,
                      char *out, size_t cap, kvsim_err *err) {
  const char *v = *(const char *const *)(a->bytes + offset);
  if (kvsim__calc_given(a, flags, offset) && !*v)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--quantization: empty value (omit the flag for the model's own, or give "
                         "none, fp8, int8, awq, gptq, int4, mxfp4)");
  snprintf(out, cap, "%s", v);
  return KVSIM_OK;
}

int kvsim__calc_int_range(bool given, int64_t v, int64_t lo, int64_t hi, const char *flag,
                          kvsim_err *err) {
  if (!given || (v >= lo && v <= hi))
    return KVSIM_OK;
  return kvsim_err_set(err, KVSIM_EINVAL, "%s: %lld is out of range [%lld, %lld]", flag,
                       (long long)v, (long long)lo, (long long)hi);
}

int kvsim__calc_memory(bool given, double gib, int64_t *bytes, kvsim_err *err) {
  double max_gib = (double)KVSIM_GPU_MAX_MEMORY_BYTES / KVSIM_GIB;
  if (!given)
    return KVSIM_OK;
  if (!(gib >= KVSIM_GPU_MEMORY_MIN_GIB && gib <= max_gib))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--gpu-memory-gib (hardware.gpu_memory_gib): %g GiB is outside " KVSIM_GPU_MEMORY_RANGE,
                         gib);
  *bytes = (int64_t)(gib * KVSIM_GIB + 0.5);
  return KVSIM_OK;
}

int kvsim__calc_gib(bool given, double gib, const char *flag, kvsim_err *err) {
  if (!given || (gib >= 0 && gib <= KVSIM_PLAN_MAX_GIB))
    return KVSIM_OK;
  return kvsim_err_set(err, KVSIM_EINVAL, "%s: %g GiB is out of range [0, %g]", flag, gib,
                       KVSIM_PLAN_MAX_GIB);
}

int kvsim__calc_measured(const double gibs[3], const bool given[3], kvsim_err *err) {
  static const char *const flags[] = {"--weights-gib", "--activation-gib", "--non-torch-gib"};
  for (int i = 0; i < 3; i++)
    if (kvsim__calc_gib(given[i], gibs[i], flags[i], err) < 0)
      return err->code;
  return KVSIM_OK;
}

void kvsim__calc_print_json(cJSON *j, FILE *out) {
  char *s = kvsim_report_json_string(j);
  fprintf(out, "%s\n", s);
  free(s);
  cJSON_Delete(j);
}
