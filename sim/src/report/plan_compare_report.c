/* kvsim calc --compare-engines: each engine's pool for one model, GPU and
 * memory fraction, side by side. */
#include <stdio.h>

#include "core/util.h"
#include "kvsim/params.h"
#include "plan_report_calc.h"

typedef struct {
  kvsim_calc_common_t c;
  const char *kv_dtype, *quant, *seq_s;
  double frac, mem_gib;
  int64_t tp;
  bool cmp;
} compare_args;

#define F(name, kind, field, help) KVSIM__CALC_FLAG(compare_args, name, kind, field, help)
static const kvsim_calc_flag_t flags[] = {
    F("--compare-engines", FLAG, cmp, "each engine's pool side by side"),
    F("--model", STR, c.model, "catalog name, HF id or path to config.json"),
    F("--gpu", STR, c.gpu, "catalog name or path to a GPU JSON (default h100-sxm)"),
    F("--gpu-memory-gib", NUM, mem_gib, "override the GPU's total memory"),
    F("--tensor-parallel-size", INT, tp, "TP degree (TGI --num-shard; default 1)"),
    F("--memory-fraction", NUM, frac,
      "each engine's own fraction (vLLM gpu_memory_utilization, TGI cuda_memory_fraction, ...; "
      "default 0.9)"),
    F("--seq-len", STR, seq_s,
      "tokens per request for max concurrency (default 8192, at most the model's)"),
    F("--kv-cache-dtype", STR, kv_dtype, "auto, bfloat16, float16, fp8"),
    F("--quantization", STR, quant, "weight quantization: fp8, awq, gptq, ..."),
    F("--json", FLAG, c.json, "print one JSON object"),
    {NULL, 0, 0, NULL, 0}};
#undef F

static void defaults(kvsim_calc_args_t *a) {
  _Static_assert(sizeof(compare_args) <= sizeof(kvsim_calc_args_t), "compare_args fits kvsim_calc_args_t");
  *a = (kvsim_calc_args_t){0}; /* no flag given */
  *(compare_args *)a->bytes =
      (compare_args){{"llama-3.1-8b", "h100-sxm", NULL, false, false}, "auto", "", "8192", 0.9, -1, 1, false};
}

static int compute(const kvsim_calc_args_t *args, kvsim_calc_t *c, kvsim_err *err) {
  const compare_args *a = (const compare_args *)args->bytes;
  int64_t seq_len = 0;
  if (kvsim__parse_human_int(a->seq_s, &seq_len, "--seq-len", err) < 0)
    return err->code;
  if (kvsim__calc_load(&a->c, c, err) < 0)
    return err->code;
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  if (kvsim_kv_dtype_parse(a->kv_dtype, &p.kv_dtype) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--kv-cache-dtype: unknown dtype '%s' (expected auto, bfloat16, float16, fp8)",
                         a->kv_dtype);
  if (kvsim__calc_memory(kvsim__calc_given(args, flags, offsetof(compare_args, mem_gib)),
                         a->mem_gib, &p.total_memory_bytes, err) < 0)
    return err->code;
  if (kvsim_param_check_int(KVSIM_PARAM_TENSOR_PARALLEL_SIZE, a->tp, "--tensor-parallel-size",
                            err) < 0)
    return err->code;
  p.tp = (int)a->tp;
  /* Every engine's row names the flag typed (TGI's own is --num-shard). */
  p.tp_flag = "--tensor-parallel-size";
  if (kvsim__calc_quant(args, flags, offsetof(compare_args, quant), p.quantization,
                        sizeof p.quantization, err) < 0)
    return err->code;
  if (c->m.max_position_embeddings > 0 && seq_len > c->m.max_position_embeddings)
    seq_len = c->m.max_position_embeddings;
  c->seq_len = seq_len;
  c->pl.p = p; /* the shared settings, for the header line */
  c->pl.fits = true;
  return kvsim_plan_compare(&c->m, &c->g, &p, a->frac, seq_len, c->rows, KVSIM_CALC_MAX_ROWS, &c->nrows, err);
}

static void print_json(const kvsim_calc_t *c, double frac, FILE *out) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model", c->m.name);
  cJSON_AddStringToObject(o, "gpu", c->g.name);
  cJSON_AddNumberToObject(o, "memory_fraction", frac);
  cJSON_AddNumberToObject(o, "seq_len", (double)c->seq_len);
  cJSON *a = cJSON_AddArrayToObject(o, "engines");
  for (int i = 0; i < c->nrows; i++) {
    const kvsim_plan_compare_row_t *r = &c->rows[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "engine", r->engine->name);
    if (r->rc < 0) {
      cJSON_AddStringToObject(e, "error", r->error);
    } else {
      cJSON_AddStringToObject(e, "settings", r->settings);
      cJSON_AddNumberToObject(e, "kv_cache_tokens", (double)r->plan.kv_cache_tokens);
      cJSON_AddNumberToObject(e, "available_kv_bytes", (double)r->plan.available_kv_bytes);
      cJSON_AddNumberToObject(e, "max_concurrency", r->plan.max_concurrency);
      cJSON_AddBoolToObject(e, "fits", r->plan.fits);
    }
    cJSON_AddItemToArray(a, e);
  }
  kvsim__calc_print_json(o, out);
}

static void print(const kvsim_calc_args_t *args, const kvsim_calc_t *c, FILE *out) {
  const compare_args *a = (const compare_args *)args->bytes;
  if (a->c.json) {
    print_json(c, a->frac, out);
    return;
  }
  char s[32], b[32];
  fprintf(out, "Engines on %s, %s x TP %d, memory fraction %.2f, requests of %s tokens:\n", c->m.name, c->g.name,
          c->pl.p.tp, a->frac, kvsim__commas(c->seq_len, s, sizeof s));
  fprintf(out, "%-16s %14s %12s %16s  %s\n", "engine", "pool tokens", "pool GiB", "max concurrency", "settings");
  for (int i = 0; i < c->nrows; i++) {
    const kvsim_plan_compare_row_t *r = &c->rows[i];
    if (r->rc < 0) {
      fprintf(out, "%-16s %14s %12s %16s  %s\n", r->engine->name, "-", "-", "-", r->error);
      continue;
    }
    snprintf(b, sizeof b, "%.2f", (double)r->plan.available_kv_bytes / KVSIM_GIB);
    fprintf(out, "%-16s %14s %12s %15.2fx  %s%s\n", r->engine->name, kvsim__commas(r->plan.kv_cache_tokens, s, sizeof s),
            b, r->plan.max_concurrency, r->settings, r->plan.fits ? "" : " (does not fit)");
  }
}

const kvsim_calc_engine_t kvsim__calc_compare = {"--compare-engines [flags]", flags, defaults, compute, print};
