/* The start-up log table against the memory plan (kvsim/fidelity.h): for
 * each row, the logged KV budget / blocks / tokens against kvsim's plan
 * (a) with the row's measured overheads as overrides, where the log has
 * them, and (b) predicted from the model, GPU and settings alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/alloc.h"
#include "fidelity/fid.h"
#include "kvsim/fidelity.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

/* ---- mapping a row onto the catalogs ---- */

/* Models the catalog holds under another name: fine-tunes and repacks that
 * keep the base architecture. */
static const struct {
  const char *from, *to, *quantization;
} model_alias[] = {
    {"deepseek-r1-distill-qwen-14b", "qwen2.5-14b", ""},  /* a Qwen2.5-14B fine-tune */
    {"deepseek-coder-v2-lite", "deepseek-v2-lite", ""},  /* DeepSeek-V2-Lite architecture */
    {"llama-3.1-70b-instruct-quantized.w8a8", "llama-3.1-70b", "w8a8"}, /* int8 w8a8 repack */
};

static bool map_model(const kvsim_fid_su_row_t *r, kvsim_model_t *m, char *quant, size_t qcap,
                      char *reason, size_t rcap) {
  kvsim_err err = {0};
  char name[128];
  quant[0] = '\0';
  if (!r->model[0]) {
    snprintf(reason, rcap, "model not stated");
    return false;
  }
  if (!kvsim_model_catalog_name(r->model, name, sizeof name)) {
    bool found = false;
    for (size_t i = 0; i < sizeof model_alias / sizeof *model_alias; i++)
      if (!strcmp(name, model_alias[i].from)) {
        snprintf(name, sizeof name, "%s", model_alias[i].to);
        snprintf(quant, qcap, "%s", model_alias[i].quantization);
        found = true;
      }
    if (!found) {
      snprintf(reason, rcap, "model '%s' not in the catalog", r->model);
      return false;
    }
  }
  if (kvsim_model_load(name, m, &err) < 0) {
    snprintf(reason, rcap, "model '%s': %s", r->model, err.msg);
    return false;
  }
  /* The engine started with this length, so the served config allowed it
   * (e.g. R1-Distill-Qwen-14B sets max_position_embeddings 131072). */
  if (r->max_model_len > m->max_position_embeddings)
    m->max_position_embeddings = r->max_model_len;
  return true;
}

static bool map_gpu(const kvsim_fid_su_row_t *r, kvsim_gpu_t *g, char *reason, size_t rcap) {
  char name[128];
  kvsim_err err = {0};
  if (!r->gpu[0]) {
    snprintf(reason, rcap, "GPU not stated");
    return false;
  }
  if (!kvsim_gpu_catalog_name(r->gpu, name, sizeof name)) {
    snprintf(reason, rcap, "GPU '%s' not in the catalog", r->gpu);
    return false;
  }
  if (kvsim_gpu_load(name, g, &err) < 0) {
    snprintf(reason, rcap, "GPU '%s': %s", r->gpu, err.msg);
    return false;
  }
  return true;
}

/* ---- one row ---- */

static double pct(double got, double want) { return want != 0 ? 100.0 * (got - want) / want : NAN; }

/* Error of a plan against what the row logged, on the pool size: the
 * block count if logged (an exact engine integer, the minimum over
 * workers), else the token count, else the 2-decimal GiB budget. */
static double row_error(const kvsim_fid_su_row_t *r, const kvsim_plan_t *pl, char *metric, size_t cap) {
  if (r->blocks > 0) {
    snprintf(metric, cap, "blocks");
    return pct((double)pl->num_gpu_blocks, (double)r->blocks);
  }
  if (r->tokens > 0) {
    snprintf(metric, cap, "tokens");
    return pct((double)pl->kv_cache_tokens, (double)r->tokens);
  }
  snprintf(metric, cap, "GiB");
  return pct((double)pl->available_kv_bytes / KVSIM_GIB, r->avail_gib.v);
}

/* Why a row cannot be reproduced (written to reason), or false when it can. */
static bool row_unusable(const kvsim_fid_su_row_t *r, char *reason, size_t cap) {
  if (strcmp(r->engine, "V0") && strcmp(r->engine, "V1"))
    snprintf(reason, cap, "engine '%s' not V0 or V1", r->engine);
  else if (r->tp <= 0)
    snprintf(reason, cap, "tensor-parallel size not logged");
  else if (r->util <= 0)
    snprintf(reason, cap, "gpu_memory_utilization not logged");
  else if (r->blocks <= 0 && r->tokens <= 0 && !r->avail_gib.set)
    snprintf(reason, cap, "no KV figure in the log (blocks, tokens or GiB)");
  else
    return false;
  return true;
}

/* The plan's inputs as the log states them. 0, or -1 with the reason. */
static int row_params(const kvsim_fid_su_row_t *r, const char *quant, kvsim_plan_params_t *p,
                      char *reason, size_t cap) {
  kvsim_plan_params_default(p);
  p->engine = !strcmp(r->engine, "V0") ? KVSIM_PLAN_V0 : KVSIM_PLAN_V1;
  /* The release the log names, where its sizing rules are modelled; a
   * leading '~' marks an era read from the log format ("~0.6.5"). Others
   * keep the newest release's rules. */
  const char *ver = r->vllm_version[0] == '~' ? r->vllm_version + 1 : r->vllm_version;
  int v;
  if (ver[0] && kvsim_vllm_version_parse(ver, &v) == KVSIM_OK && kvsim_plan_version_rules(p->engine, v))
    p->vllm_version = v;
  p->tp = r->tp;
  p->gpu_memory_utilization = r->util;
  p->max_model_len = r->max_model_len;
  p->block_size = r->block_size;
  p->max_num_seqs = r->max_num_seqs;
  p->max_num_batched_tokens = r->max_num_batched_tokens;
  p->enable_chunked_prefill = r->chunked;
  p->enforce_eager = r->enforce_eager;
  p->total_memory_bytes = r->total_bytes;
  snprintf(p->quantization, sizeof p->quantization, "%s", quant);
  if (r->kv_dtype[0] && kvsim_kv_dtype_parse(r->kv_dtype, &p->kv_dtype) < 0) {
    snprintf(reason, cap, "kv_cache_dtype '%s' unknown", r->kv_dtype);
    return -1;
  }
  return 0;
}

/* (a) the plan with what the log measured (weights, activations, non-torch
 * memory, the total), where it measured any. */
static void row_with_overrides(const kvsim_fid_su_row_t *r, const kvsim_model_t *m, const kvsim_gpu_t *g,
                               const kvsim_plan_params_t *p, kvsim_fid_su_result_t *res) {
  res->has_overrides = r->weights.set || r->activation.set || r->non_torch.set || r->total_gib.set;
  if (!res->has_overrides)
    return;
  kvsim_plan_params_t q = *p;
  if (r->total_gib.set)
    q.total_memory_bytes = (int64_t)llround(r->total_gib.v * KVSIM_GIB);
  q.weights_gib = r->weights.set ? r->weights.v : -1;
  q.activation_gib = r->activation.set ? r->activation.v : -1;
  q.non_torch_gib = r->non_torch.set ? r->non_torch.v : -1;
  kvsim_err err = {0};
  if (kvsim_plan_compute(m, g, &q, &res->with, &err) < 0) {
    res->has_overrides = false;
  } else if (r->avail_gib.set) {
    /* The overheads and the GiB figure come from the same worker's log
     * line; blocks and tokens are the minimum over workers. */
    res->err_with = pct((double)res->with.available_kv_bytes / KVSIM_GIB, r->avail_gib.v);
  } else {
    char metric[8];
    res->err_with = row_error(r, &res->with, metric, sizeof metric);
  }
}

static void startup_row(const kvsim_fid_su_row_t *r, kvsim_fid_su_result_t *res) {
  memset(res, 0, sizeof *res);
  res->err_with = res->err_pred = NAN;
  kvsim_model_t m;
  kvsim_gpu_t g;
  char quant[32];
  if (!map_model(r, &m, quant, sizeof quant, res->reason, sizeof res->reason) ||
      !map_gpu(r, &g, res->reason, sizeof res->reason)) {
    res->skipped = true;
    return;
  }
  snprintf(res->model_name, sizeof res->model_name, "%s", m.name);
  snprintf(res->gpu_name, sizeof res->gpu_name, "%s", g.name);
  kvsim_plan_params_t p;
  if (row_unusable(r, res->reason, sizeof res->reason) ||
      row_params(r, quant, &p, res->reason, sizeof res->reason) < 0) {
    res->skipped = true;
    return;
  }
  kvsim_err err = {0};
  /* (b) pure prediction: the GPU's own total, every overhead predicted. */
  if (kvsim_plan_compute(&m, &g, &p, &res->pred, &err) < 0) {
    snprintf(res->reason, sizeof res->reason, "%s", err.msg);
    res->skipped = true;
    return;
  }
  res->err_pred = row_error(r, &res->pred, res->metric, sizeof res->metric);
  row_with_overrides(r, &m, &g, &p, res);
  /* The logged pool in GiB, for the table. */
  if (r->blocks > 0)
    res->logged_gib = (double)r->blocks * (double)res->pred.block_bytes / KVSIM_GIB;
  else if (r->tokens > 0)
    res->logged_gib = (double)r->tokens / res->pred.p.block_size * res->pred.num_groups *
                      (double)res->pred.block_bytes / KVSIM_GIB;
  else
    res->logged_gib = r->avail_gib.v;
}

/* ---- the table ---- */

int kvsim_fidelity_startup_evaluate(kvsim_fid_startup_t *t, kvsim_err *err) {
  kvsim__free(t->res);
  t->res = kvsim__calloc((size_t)(t->n > 0 ? t->n : 1), sizeof *t->res);
  double *e = kvsim__malloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *e);
  if (!t->res || !e) {
    kvsim__free(e);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  }
  int k = 0;
  for (int64_t i = 0; i < t->n; i++) {
    startup_row(&t->rows[i], &t->res[i]);
    if (!t->res[i].skipped && !isnan(t->res[i].err_pred))
      e[k++] = t->res[i].err_pred;
  }
  t->predicted = k;
  t->median_abs_err = kvsim_fidelity_median_abs(e, k);
  kvsim__free(e);
  return KVSIM_OK;
}

int kvsim_fidelity_startup_validated(const kvsim_fid_startup_t *t, kvsim_err *err) {
  if (t->predicted > 0)
    return KVSIM_OK;
  if (t->n == 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "no row could be validated (the table has no rows)");
  int64_t skipped = 0;
  for (int64_t i = 0; t->res && i < t->n; i++)
    skipped += t->res[i].skipped;
  if (skipped == t->n)
    return kvsim_err_set(err, KVSIM_EINVAL, "no row could be validated (%lld skipped)",
                         (long long)skipped);
  return kvsim_err_set(
      err, KVSIM_EINVAL,
      "no row could be validated (%lld skipped, %lld without a logged figure to compare)",
      (long long)skipped, (long long)(t->n - skipped));
}

void kvsim_fidelity_startup_fini(kvsim_fid_startup_t *t) {
  kvsim__free(t->rows);
  kvsim__free(t->res);
  memset(t, 0, sizeof *t);
}

/* ---- JSON ---- */

static cJSON *plan_obj(const kvsim_plan_t *pl, double err_pct) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "available_kv_gib", (double)pl->available_kv_bytes / KVSIM_GIB);
  cJSON_AddNumberToObject(o, "weights_gib", (double)pl->weights_bytes / KVSIM_GIB);
  cJSON_AddNumberToObject(o, "activation_gib", (double)pl->activation_bytes / KVSIM_GIB);
  cJSON_AddNumberToObject(o, "non_torch_gib", (double)pl->non_torch_bytes / KVSIM_GIB);
  cJSON_AddNumberToObject(o, "num_gpu_blocks", (double)pl->num_gpu_blocks);
  cJSON_AddNumberToObject(o, "kv_cache_tokens", (double)pl->kv_cache_tokens);
  cJSON_AddNumberToObject(o, "max_concurrency", pl->max_concurrency);
  cJSON_AddNumberToObject(o, "error_pct", err_pct);
  return o;
}

static void add_compared(cJSON *e, const kvsim_fid_su_row_t *r, const kvsim_fid_su_result_t *s) {
  cJSON_AddStringToObject(e, "catalog_model", s->model_name);
  cJSON_AddStringToObject(e, "catalog_gpu", s->gpu_name);
  cJSON_AddNumberToObject(e, "tp", r->tp);
  cJSON_AddNumberToObject(e, "gpu_memory_utilization", r->util);
  cJSON_AddNumberToObject(e, "max_model_len", (double)s->pred.p.max_model_len);
  cJSON_AddStringToObject(e, "compared", s->metric);
  cJSON *lg = cJSON_AddObjectToObject(e, "logged");
  if (r->avail_gib.set)
    cJSON_AddNumberToObject(lg, "available_kv_gib", r->avail_gib.v);
  if (r->blocks > 0)
    cJSON_AddNumberToObject(lg, "gpu_blocks", (double)r->blocks);
  if (r->tokens > 0)
    cJSON_AddNumberToObject(lg, "kv_cache_tokens", (double)r->tokens);
  if (r->concurrency.set)
    cJSON_AddNumberToObject(lg, "max_concurrency", r->concurrency.v);
  cJSON_AddNumberToObject(lg, "pool_gib", s->logged_gib);
  if (s->has_overrides)
    cJSON_AddItemToObject(e, "with_overrides", plan_obj(&s->with, s->err_with));
  cJSON_AddItemToObject(e, "predicted", plan_obj(&s->pred, s->err_pred));
}

char *kvsim_fidelity_startup_to_json(const kvsim_fid_startup_t *t, const char *file) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "mode", "startup");
  cJSON_AddStringToObject(o, "file", file);
  cJSON *arr = cJSON_AddArrayToObject(o, "rows");
  for (int64_t i = 0; i < t->n; i++) {
    const kvsim_fid_su_row_t *r = &t->rows[i];
    const kvsim_fid_su_result_t *s = &t->res[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "row", r->index);
    cJSON_AddStringToObject(e, "source", r->source);
    cJSON_AddStringToObject(e, "engine", r->engine);
    cJSON_AddStringToObject(e, "model", r->model);
    cJSON_AddStringToObject(e, "gpu", r->gpu);
    if (s->skipped)
      cJSON_AddStringToObject(e, "skipped", s->reason);
    else
      add_compared(e, r, s);
    cJSON_AddItemToArray(arr, e);
  }
  cJSON_AddNumberToObject(o, "rows_predicted", t->predicted);
  if (t->predicted > 0)
    cJSON_AddNumberToObject(o, "median_abs_error_pct", t->median_abs_err);
  else
    cJSON_AddNullToObject(o, "median_abs_error_pct");
  return kvsim__fid_print(o);
}
