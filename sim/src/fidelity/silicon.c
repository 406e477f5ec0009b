/* Reading AIConfigurator's fixed-concurrency vLLM measurements
 * (ai-dynamo/aiconfigurator, silicon_vllm.csv) with the workload room's
 * CSV row reader (workload/csvrow.h; kvsim/fidelity.h).
 *
 * A row is one benchmark at fixed concurrency (batch_size clients that
 * send their next request as soon as the previous one finishes), fixed
 * input / output lengths (isl, osl), on tp_size GPUs of `system`, weights
 * (and KV cache) in `precision`. The measured values are the benchmark's
 * mean TTFT and mean TPOT (aiconfigurator tools: silicon_ttft_ms =
 * metrics.mean_ttft x 1000). Each kept row is resolved onto the catalogs,
 * or marked skipped with the reason kvsim cannot reproduce it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/vec.h"
#include "fidelity/fid.h"
#include "kvsim/fidelity.h"
#include "kvsim/model.h"
#include "workload/csvrow.h"

/* ---- reading the CSV ---- */

enum {
  C_ID, C_BACKEND, C_VERSION, C_MODEL, C_SYSTEM, C_PRECISION, C_MODE, C_ISL, C_OSL, C_BATCH, C_TP,
  C_PP, C_ADP, C_EP, C_TTFT, C_TPOT, C_NCOLS
};
static const char *const col_names[C_NCOLS] = {
    "id",        "backend",    "backend_version", "model_path", "system",
    "precision", "mode",       "isl",             "osl",        "batch_size",
    "tp_size",   "pp_size",    "attention_dp_size", "moe_ep_size", "silicon_ttft_ms",
    "silicon_tpot_ms"};

typedef struct reader {
  const char *const *filters;
  int nfilters;
  kvsim__csvrow_t *csv;
  int map[C_NCOLS];   /* column of each needed field */
  int source;         /* silicon_data_source's column, -1 when the file has none */
} reader_t;

static const char *field(const reader_t *r, int c) {
  const char *v = kvsim__csvrow_field(r->csv, r->map[c]);
  return v ? v : "";
}

static int to_int(const char *s, int64_t *out) {
  if (!*s) {
    *out = 0;
    return 0;
  }
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || v < 0 || v != floor(v))
    return -1;
  *out = (int64_t)v;
  return 0;
}

static int to_num(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || end == s || *end || errno || !isfinite(v))
    return -1;
  *out = v;
  return 0;
}

/* The catalog GPU of an AIConfigurator `system`: h100_sxm -> h100-sxm,
 * h200_sxm -> h200, b200_sxm -> b200, gb200 -> gb200 (kvsim_gpu_catalog_name
 * knows those spellings); b300_sxm has no catalog entry. */
static bool map_gpu(const char *system, char *out, size_t cap) {
  return kvsim_gpu_catalog_name(system, out, cap) == 1;
}

/* Checkpoints the tables name that are a catalog architecture under
 * another name. DeepSeek-R1 is DeepSeek-V3's architecture: its config.json
 * (huggingface.co/deepseek-ai/DeepSeek-R1, config.json) declares
 * DeepseekV3ForCausalLM with V3's sizes (61 layers, hidden 7168, 256
 * routed experts, 8 per token, MLA with a 512-wide latent): the two
 * config.json files aiconfigurator caches (ai-dynamo/aiconfigurator,
 * aic-core/src/aiconfigurator_core/model_configs/deepseek-ai--DeepSeek-
 * {R1,V3}_config.json) differ only in transformers_version. */
static const struct {
  const char *model_path, *catalog;
} model_aliases[] = {{"deepseek-ai/DeepSeek-R1", "deepseek-v3"}};

/* The catalog name of a row's model_path (an alias above, else the
 * catalog's own Hugging Face ids); true when the catalog has it. */
static bool map_model(const char *model_path, char *out, size_t cap) {
  for (size_t i = 0; i < sizeof model_aliases / sizeof *model_aliases; i++)
    if (!strcasecmp(model_path, model_aliases[i].model_path)) {
      snprintf(out, cap, "%s", model_aliases[i].catalog);
      return true;
    }
  return kvsim_model_catalog_name(model_path, out, cap) == 1;
}

static void resolve(kvsim_fid_sil_row_t *w) {
  w->skipped = true;
  /* Names first, so that filters on model / gpu see skipped rows too. */
  bool model_ok = map_model(w->model_path, w->model, sizeof w->model);
  bool gpu_ok = map_gpu(w->system, w->gpu, sizeof w->gpu);
  if (strcasecmp(w->backend, "vllm") && strcasecmp(w->backend, "sglang")) {
    snprintf(w->reason, sizeof w->reason, "backend '%s' is neither vLLM nor SGLang", w->backend);
    return;
  }
  if (strcasecmp(w->mode, "agg")) {
    /* kvsim models disaggregated serving, but a disagg row names each
     * side's workers in columns this reader does not take: the repository's
     * scripts/disagg_silicon.py scores those rows. */
    snprintf(w->reason, sizeof w->reason, "mode '%s': not replayed here (scripts/disagg_silicon.py scores it)",
             w->mode);
    return;
  }
  if (!model_ok) {
    snprintf(w->reason, sizeof w->reason, "model '%s' is not in the catalog", w->model_path);
    return;
  }
  if (!gpu_ok) {
    snprintf(w->reason, sizeof w->reason, "system '%s' is not in the GPU catalog", w->system);
    return;
  }
  if (w->batch < 1 || w->isl < 1 || w->osl < 1 || w->tp < 1) {
    snprintf(w->reason, sizeof w->reason, "no concurrency / lengths / tp_size");
    return;
  }
  if (!(w->ttft_ms > 0) || !(w->tpot_ms > 0)) {
    snprintf(w->reason, sizeof w->reason, "no measured TTFT / TPOT");
    return;
  }
  if (w->attn_dp > 1 || w->moe_ep > 1) {
    snprintf(w->reason, sizeof w->reason, "attention DP %lld / expert parallel %lld not modelled",
             (long long)w->attn_dp, (long long)w->moe_ep);
    return;
  }
  kvsim_model_t m;
  kvsim_err err = {0};
  if (kvsim_model_load(w->model, &m, &err) < 0) {
    snprintf(w->reason, sizeof w->reason, "model '%s': %.80s", w->model, err.msg);
    return;
  }
  const char *p = w->precision;
  if (!*p || !strcasecmp(p, "bf16") || !strcasecmp(p, "bfloat16") || !strcasecmp(p, "fp16")) {
    /* the model's own dtype */
  } else if (!strcasecmp(p, "fp8")) {
    /* fp8 weights (w8a8) and an fp8 KV cache */
  } else if (!strcasecmp(p, "fp4") && m.quant.kind == KVSIM_QUANT_MXFP4) {
    /* the checkpoint's own MXFP4 (gpt-oss) */
  } else {
    snprintf(w->reason, sizeof w->reason, "precision '%s' (NVFP4 / int4 weights) is not modelled", p);
    return;
  }
  w->skipped = false;
  w->reason[0] = '\0';
}

/* KEY=VALUE filters: same key given twice = either value; different keys =
 * all must hold. `model` and `gpu` also match the catalog names. */
static bool row_matches(const reader_t *r, const kvsim_fid_sil_row_t *w) {
  for (int i = 0; i < r->nfilters; i++) {
    const char *f = r->filters[i], *eq = strchr(f, '=');
    size_t kl = (size_t)(eq - f);
    bool any = false;
    for (int j = 0; j < r->nfilters; j++) {
      const char *g = r->filters[j], *eq2 = strchr(g, '=');
      if ((size_t)(eq2 - g) != kl || strncasecmp(f, g, kl))
        continue;
      const char *val = eq2 + 1;
      char key[64];
      snprintf(key, sizeof key, "%.*s", (int)kl, f);
      if (!strcasecmp(key, "model"))
        any |= !strcasecmp(val, w->model) || !strcasecmp(val, w->model_path);
      else if (!strcasecmp(key, "gpu"))
        any |= !strcasecmp(val, w->gpu);
      else {
        /* one of the columns kvsim reads, by name */
        int ci = -1;
        for (int c = 0; c < C_NCOLS; c++)
          if (!strcasecmp(key, col_names[c]))
            ci = c;
        if (ci == C_PRECISION && !field(r, ci)[0])
          any |= !strcasecmp(val, "bf16"); /* an empty precision is the model's dtype */
        else if (ci >= 0)
          any |= !strcasecmp(val, field(r, ci));
      }
    }
    if (!any)
      return false;
  }
  return true;
}

/* Reads the current CSV row into w (not yet resolved). */
static int read_row(const reader_t *r, kvsim_fid_sil_row_t *w, kvsim_err *err) {
  const char *path = kvsim__csvrow_path(r->csv);
  memset(w, 0, sizeof *w);
  w->line = (int)kvsim__csvrow_line(r->csv);
  snprintf(w->id, sizeof w->id, "%s", field(r, C_ID));
  snprintf(w->backend, sizeof w->backend, "%s", field(r, C_BACKEND));
  snprintf(w->version, sizeof w->version, "%s", field(r, C_VERSION));
  snprintf(w->model_path, sizeof w->model_path, "%s", field(r, C_MODEL));
  snprintf(w->system, sizeof w->system, "%s", field(r, C_SYSTEM));
  snprintf(w->precision, sizeof w->precision, "%s", field(r, C_PRECISION));
  snprintf(w->mode, sizeof w->mode, "%s", field(r, C_MODE));
  struct {
    int c;
    int64_t *dst;
  } ints[] = {{C_ISL, &w->isl}, {C_OSL, &w->osl}, {C_BATCH, &w->batch}, {C_TP, &w->tp},
              {C_PP, &w->pp},   {C_ADP, &w->attn_dp}, {C_EP, &w->moe_ep}};
  for (size_t k = 0; k < sizeof ints / sizeof *ints; k++)
    if (to_int(field(r, ints[k].c), ints[k].dst) < 0)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s:%lld: column '%s': bad value '%s' (expected an integer >= 0)", path,
                           (long long)kvsim__csvrow_field_line(r->csv, r->map[ints[k].c]),
                           col_names[ints[k].c], field(r, ints[k].c));
  if (w->pp < 1)
    w->pp = 1;
  const char *tt = field(r, C_TTFT), *tp = field(r, C_TPOT);
  if ((*tt && to_num(tt, &w->ttft_ms) < 0) || (*tp && to_num(tp, &w->tpot_ms) < 0))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s:%d: silicon_ttft_ms / silicon_tpot_ms: bad value '%s' / '%s'", path,
                         w->line, tt, tp);
  return KVSIM_OK;
}

/* Reads the rows of r->csv into t: the kept ones, resolved. */
static int read_rows(reader_t *r, kvsim_fid_sil_table_t *t, kvsim_err *err) {
  const char *path = kvsim__csvrow_path(r->csv);
  for (int k = 0; k < C_NCOLS; k++)
    if ((r->map[k] = kvsim__csvrow_column(r->csv, col_names[k])) < 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s:1: no column '%s' (expected AIConfigurator's silicon CSV)",
                           path, col_names[k]);
  /* Optional: where and when the row was measured (its campaign). */
  r->source = kvsim__csvrow_column(r->csv, "silicon_data_source");
  int rc;
  while ((rc = kvsim__csvrow_next(r->csv, err)) == 1) {
    kvsim_fid_sil_row_t w;
    if ((rc = read_row(r, &w, err)) < 0)
      return rc;
    resolve(&w);
    const char *source = kvsim__csvrow_field(r->csv, r->source);
    kvsim__fid_sil_launch(&w, source ? source : "");
    if (!row_matches(r, &w))
      continue;
    if (kvsim__grow((void **)&t->rows, &t->cap, t->n + 1, sizeof *t->rows) < 0)
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
    t->rows[t->n++] = w;
  }
  return rc < 0 ? kvsim__fid_recode(rc, KVSIM_EINVAL, err) : KVSIM_OK;
}

int kvsim_fidelity_silicon_read(const char *path, const char *const *filters, int nfilters, kvsim_fid_sil_table_t *t,
                 kvsim_err *err) {
  memset(t, 0, sizeof *t);
  for (int i = 0; i < nfilters; i++) {
    const char *eq = strchr(filters[i], '=');
    if (!eq || eq == filters[i] || !eq[1])
      return kvsim_err_set(err, KVSIM_EINVAL, "--filter '%s': expected KEY=VALUE", filters[i]);
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)(eq - filters[i]), filters[i]);
    bool known = !strcasecmp(key, "model") || !strcasecmp(key, "gpu");
    for (int c = 0; c < C_NCOLS && !known; c++)
      known = !strcasecmp(key, col_names[c]);
    if (!known)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "--filter '%s': unknown key '%s' (expected model, gpu or a column: system, "
                           "precision, tp_size, batch_size, isl, osl, backend_version, ...)",
                           filters[i], key);
  }
  reader_t r = {.filters = filters, .nfilters = nfilters};
  int rc = kvsim__csvrow_open(path, true, &r.csv, err);
  if (rc < 0)
    return kvsim__fid_recode(rc, KVSIM_EINVAL, err);
  rc = read_rows(&r, t, err);
  kvsim__csvrow_close(r.csv);
  if (rc < 0)
    kvsim_fidelity_silicon_free(t);
  return rc;
}

void kvsim_fidelity_silicon_free(kvsim_fid_sil_table_t *t) {
  kvsim__free(t->rows);
  memset(t, 0, sizeof *t);
}

