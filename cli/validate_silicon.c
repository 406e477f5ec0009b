/* kvsim validate --silicon FILE: reproduces each row of AIConfigurator's
 * fixed-concurrency vLLM measurements (../shared/validation/aiconfigurator/
 * silicon_vllm.csv) with a closed-loop run and compares mean TTFT / TPOT.
 *
 * A row is one benchmark at fixed concurrency (batch_size clients that
 * send their next request as soon as the previous one finishes), fixed
 * input / output lengths (isl, osl), on tp_size GPUs of `system`, weights
 * (and KV cache) in `precision`. The measured values are the benchmark's
 * mean TTFT and mean TPOT (aiconfigurator tools: silicon_ttft_ms =
 * metrics.mean_ttft x 1000). Its replay of these measurements sends
 * concurrency x 10 requests, which we copy; lengths are taken as fixed
 * (the row gives no spread). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>
#include <csv.h>

#include "kvsim/model.h"
#include "validate_common.h"

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
  const char *path;
  const char *const *filters;
  int nfilters;
  fid_sil_table *t;
  int line;           /* record number (1 = header) */
  int col;            /* field index within the record */
  int map[C_NCOLS];   /* column of each needed field */
  int ncols;
  char *fields[128];
  int nfields;
  int rc;
  kvsim_err *err;
} reader_t;

static void on_field(void *s, size_t len, void *data) {
  reader_t *r = data;
  if (r->nfields < 128) {
    char *f = malloc(len + 1);
    if (f) {
      memcpy(f, s, len);
      f[len] = '\0';
    }
    r->fields[r->nfields++] = f;
  }
}

static const char *field(const reader_t *r, int c) {
  int i = r->map[c];
  return i >= 0 && i < r->nfields && r->fields[i] ? r->fields[i] : "";
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

static void resolve(fid_sil_row *w) {
  w->skipped = true;
  /* Names first, so that filters on model / gpu see skipped rows too. */
  bool model_ok = kvsim_model_catalog_name(w->model_path, w->model, sizeof w->model) == 1;
  bool gpu_ok = map_gpu(w->system, w->gpu, sizeof w->gpu);
  if (strcasecmp(w->backend, "vllm")) {
    snprintf(w->reason, sizeof w->reason, "backend '%s' is not vLLM", w->backend);
    return;
  }
  if (strcasecmp(w->mode, "agg")) {
    snprintf(w->reason, sizeof w->reason, "mode '%s': disaggregated serving is not modelled", w->mode);
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
static bool row_matches(const reader_t *r, const fid_sil_row *w) {
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

static void on_record(int c, void *data) {
  (void)c;
  reader_t *r = data;
  r->line++;
  if (r->rc < 0)
    goto done;
  if (r->line == 1) {
    for (int k = 0; k < C_NCOLS; k++) {
      r->map[k] = -1;
      for (int i = 0; i < r->nfields; i++)
        if (r->fields[i] && !strcmp(r->fields[i], col_names[k]))
          r->map[k] = i;
      if (r->map[k] < 0) {
        r->rc = kvsim_err_set(r->err, KVSIM_EINVAL, "%s:1: no column '%s' (expected AIConfigurator's silicon CSV)",
                              r->path, col_names[k]);
        goto done;
      }
    }
    r->ncols = r->nfields;
    goto done;
  }
  if (r->nfields != r->ncols) {
    r->rc = kvsim_err_set(r->err, KVSIM_EINVAL, "%s:%d: %d columns, the header has %d", r->path, r->line,
                          r->nfields, r->ncols);
    goto done;
  }
  fid_sil_row w;
  memset(&w, 0, sizeof w);
  w.line = r->line;
  snprintf(w.id, sizeof w.id, "%s", field(r, C_ID));
  snprintf(w.backend, sizeof w.backend, "%s", field(r, C_BACKEND));
  snprintf(w.version, sizeof w.version, "%s", field(r, C_VERSION));
  snprintf(w.model_path, sizeof w.model_path, "%s", field(r, C_MODEL));
  snprintf(w.system, sizeof w.system, "%s", field(r, C_SYSTEM));
  snprintf(w.precision, sizeof w.precision, "%s", field(r, C_PRECISION));
  snprintf(w.mode, sizeof w.mode, "%s", field(r, C_MODE));
  struct {
    int c;
    int64_t *dst;
  } ints[] = {{C_ISL, &w.isl}, {C_OSL, &w.osl}, {C_BATCH, &w.batch}, {C_TP, &w.tp},
              {C_PP, &w.pp},   {C_ADP, &w.attn_dp}, {C_EP, &w.moe_ep}};
  for (size_t k = 0; k < sizeof ints / sizeof *ints; k++)
    if (to_int(field(r, ints[k].c), ints[k].dst) < 0) {
      r->rc = kvsim_err_set(r->err, KVSIM_EINVAL, "%s:%d: column '%s': bad value '%s' (expected an integer >= 0)",
                            r->path, r->line, col_names[ints[k].c], field(r, ints[k].c));
      goto done;
    }
  if (w.pp < 1)
    w.pp = 1;
  const char *tt = field(r, C_TTFT), *tp = field(r, C_TPOT);
  if ((*tt && to_num(tt, &w.ttft_ms) < 0) || (*tp && to_num(tp, &w.tpot_ms) < 0)) {
    r->rc = kvsim_err_set(r->err, KVSIM_EINVAL, "%s:%d: silicon_ttft_ms / silicon_tpot_ms: bad value '%s' / '%s'",
                          r->path, r->line, tt, tp);
    goto done;
  }
  resolve(&w);
  if (!row_matches(r, &w))
    goto done;
  fid_sil_table *t = r->t;
  if (t->n == t->cap) {
    int cap = t->cap ? t->cap * 2 : 256;
    fid_sil_row *g = realloc(t->rows, (size_t)cap * sizeof *g);
    if (!g) {
      r->rc = kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory");
      goto done;
    }
    t->rows = g;
    t->cap = cap;
  }
  t->rows[t->n++] = w;
done:
  for (int i = 0; i < r->nfields; i++)
    free(r->fields[i]);
  r->nfields = 0;
}

int fid_sil_read(const char *path, const char *const *filters, int nfilters, fid_sil_table *t,
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
  FILE *f = fopen(path, "rb");
  if (!f)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
  struct csv_parser p;
  if (csv_init(&p, CSV_APPEND_NULL) != 0) {
    fclose(f);
    return kvsim_err_set(err, KVSIM_ENOMEM, "csv: out of memory");
  }
  reader_t r;
  memset(&r, 0, sizeof r);
  r.path = path;
  r.filters = filters;
  r.nfilters = nfilters;
  r.t = t;
  r.err = err;
  char buf[65536];
  size_t n;
  while (r.rc == 0 && (n = fread(buf, 1, sizeof buf, f)) > 0)
    if (csv_parse(&p, buf, n, on_field, on_record, &r) != n) {
      r.rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: CSV error near record %d: %s", path, r.line + 1,
                           csv_strerror(csv_error(&p)));
      break;
    }
  if (r.rc == 0)
    csv_fini(&p, on_field, on_record, &r);
  for (int i = 0; i < r.nfields; i++)
    free(r.fields[i]);
  csv_free(&p);
  fclose(f);
  if (r.rc < 0) {
    fid_sil_free(t);
    return r.rc;
  }
  if (r.line < 1)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: empty file", path);
  return KVSIM_OK;
}

void fid_sil_free(fid_sil_table *t) {
  free(t->rows);
  memset(t, 0, sizeof *t);
}

/* ---- reproducing a row ---- */

/* A length: fixed, or uniform in [int(len x ratio), len]. */
static void length_json(int64_t len, double ratio, char *out, size_t cap) {
  int64_t lo = (int64_t)((double)len * ratio);
  if (lo < 1)
    lo = 1;
  if (ratio >= 1 || lo >= len)
    snprintf(out, cap, "{\"dist\": \"fixed\", \"value\": %lld}", (long long)len);
  else
    snprintf(out, cap, "{\"dist\": \"uniform\", \"min\": %lld, \"max\": %lld}", (long long)lo,
             (long long)len);
}

int fid_sil_scenario(const fid_sil_row *r, const fid_gpu_override *ov, int nov, double range_ratio,
                     kvsim_scenario_t *sc, kvsim_err *err) {
  bool fp8 = !strcasecmp(r->precision, "fp8");
  char text[2048], in[128], out[128];
  length_json(r->isl, range_ratio, in, sizeof in);
  length_json(r->osl, range_ratio, out, sizeof out);
  /* vLLM's own defaults for everything the row does not say (engine
   * profile vllm-v1: chunked prefill, the GPU's default max_num_seqs and
   * max_num_batched_tokens, gpu_memory_utilization 0.9, the model's
   * max_model_len). The benchmark's random prompts share no prefix. */
  snprintf(text, sizeof text,
           "{\"name\": \"silicon-%d\", \"seed\": 1, \"model\": \"%s\","
           " \"hardware\": {\"gpu\": \"%s\", \"tensor_parallel_size\": %lld, \"pipeline_parallel_size\": %lld},"
           " \"engine\": {\"profile\": \"vllm-v1\"%s},"
           " \"workload\": {\"synthetic\": {\"requests\": %lld,"
           " \"arrival\": {\"process\": \"closed_loop\", \"clients\": %lld, \"think_s\": 0},"
           " \"prompt_tokens\": %s, \"output_tokens\": %s}}}",
           r->line, r->model, r->gpu, (long long)r->tp, (long long)r->pp,
           fp8 ? ", \"quantization\": \"fp8\", \"kv_cache_dtype\": \"fp8\"" : "",
           (long long)(10 * r->batch), (long long)r->batch, in, out);
  int rc = kvsim_scenario_parse(text, r->id, ".", NULL, 0, sc, err);
  if (rc < 0)
    return rc;
  for (int i = 0; i < nov; i++)
    if (!strcmp(ov[i].gpu.name, sc->gpu.name))
      sc->gpu = ov[i].gpu;
  return KVSIM_OK;
}

int fid_sil_simulate(const fid_sil_row *r, const fid_gpu_override *ov, int nov, double range_ratio,
                     const kvsim_gpu_perf_t *perf, double *ttft_ms, double *tpot_ms, kvsim_err *err) {
  kvsim_scenario_t sc;
  int rc = fid_sil_scenario(r, ov, nov, range_ratio, &sc, err);
  if (rc < 0)
    return rc;
  if (perf)
    fid_apply_perf(&sc, perf);
  fid_lat lat;
  fid_lat_init(&lat);
  /* The rows' TTFT is the benchmark client's (mean_ttft of vllm bench). */
  rc = fid_simulate_client(&sc, &lat, NULL, NULL, err);
  if (rc == KVSIM_OK && (lat.ttft.n == 0 || lat.tpot.n == 0))
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: no request finished", r->id);
  if (rc == KVSIM_OK) {
    *ttft_ms = kvsim_dist_mean(&lat.ttft) * 1e3;
    *tpot_ms = kvsim_dist_mean(&lat.tpot) * 1e3;
  }
  fid_lat_fini(&lat);
  kvsim_scenario_fini(&sc);
  return rc;
}

/* ---- the command ---- */

typedef struct sil_result {
  double ttft_ms, tpot_ms, err_ttft, err_tpot;
  bool ok;
  char error[160];
} sil_result;

static int cmp_rows(const void *a, const void *b) {
  const fid_sil_row *x = *(fid_sil_row *const *)a, *y = *(fid_sil_row *const *)b;
  int c = strcmp(x->system, y->system);
  if (!c)
    c = strcmp(x->model, y->model);
  if (!c)
    c = strcmp(x->precision, y->precision);
  if (!c)
    c = (x->tp > y->tp) - (x->tp < y->tp);
  if (!c)
    c = (x->isl > y->isl) - (x->isl < y->isl);
  if (!c)
    c = (x->osl > y->osl) - (x->osl < y->osl);
  if (!c)
    c = (x->batch > y->batch) - (x->batch < y->batch);
  if (!c)
    c = (x->line > y->line) - (x->line < y->line);
  return c;
}

/* Median absolute errors over rows [lo, hi) of the sorted order. */
static void group_medians(fid_sil_row *const *ord, const fid_sil_table *t, const sil_result *res,
                          int lo, int hi, double *mt, double *mp, int *n) {
  double *a = malloc((size_t)(hi - lo + 1) * sizeof *a), *b = malloc((size_t)(hi - lo + 1) * sizeof *b);
  int k = 0;
  for (int i = lo; a && b && i < hi; i++) {
    const sil_result *r = &res[ord[i] - t->rows];
    if (!r->ok)
      continue;
    a[k] = r->err_ttft;
    b[k] = r->err_tpot;
    k++;
  }
  *n = k;
  *mt = a && b ? fid_median_abs(a, k) : NAN;
  *mp = a && b ? fid_median_abs(b, k) : NAN;
  free(a);
  free(b);
}

int fid_cmd_silicon(const char *file, const cli_list *filters, const cli_list *gpus, double range_ratio,
                    const kvsim_gpu_perf_t *perf, bool json, double max_error) {
  kvsim_err err = {0};
  fid_gpu_override *ov = calloc((size_t)(gpus->n ? gpus->n : 1), sizeof *ov);
  if (!ov)
    return cli_fail("validate", "out of memory");
  for (int i = 0; i < gpus->n; i++) {
    if (kvsim_gpu_load(gpus->items[i], &ov[i].gpu, &err) < 0) {
      free(ov);
      return cli_fail("validate", "--gpu: %s", err.msg);
    }
    snprintf(ov[i].path, sizeof ov[i].path, "%s", gpus->items[i]);
  }
  fid_sil_table t;
  if (fid_sil_read(file, filters->items, filters->n, &t, &err) < 0) {
    free(ov);
    return cli_fail("validate", "--silicon: %s", err.msg);
  }
  sil_result *res = calloc((size_t)(t.n ? t.n : 1), sizeof *res);
  fid_sil_row **ord = calloc((size_t)(t.n ? t.n : 1), sizeof *ord);
  if (!res || !ord) {
    free(res);
    free(ord);
    fid_sil_free(&t);
    free(ov);
    return cli_fail("validate", "out of memory");
  }
  int nrun = 0, nskip = 0, nfail = 0;
  for (int i = 0; i < t.n; i++) {
    ord[i] = &t.rows[i];
    if (t.rows[i].skipped) {
      nskip++;
      continue;
    }
    fid_sil_row *r = &t.rows[i];
    kvsim_err e = {0};
    if (fid_sil_simulate(r, ov, gpus->n, range_ratio, perf, &res[i].ttft_ms, &res[i].tpot_ms, &e) < 0) {
      /* A row whose memory plan does not fit is reported, not fatal. */
      snprintf(res[i].error, sizeof res[i].error, "%s", e.msg);
      nfail++;
      continue;
    }
    res[i].ok = true;
    res[i].err_ttft = (res[i].ttft_ms - r->ttft_ms) / r->ttft_ms * 100;
    res[i].err_tpot = (res[i].tpot_ms - r->tpot_ms) / r->tpot_ms * 100;
    nrun++;
  }
  qsort(ord, (size_t)t.n, sizeof *ord, cmp_rows);
  double med_t, med_p;
  int nok;
  group_medians(ord, &t, res, 0, t.n, &med_t, &med_p, &nok);

  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "mode", "silicon");
    cJSON_AddStringToObject(o, "file", file);
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    cJSON *groups = cJSON_AddArrayToObject(o, "groups");
    cJSON *why = cJSON_CreateObject();
    for (int i = 0; i < t.n; i++) {
      const fid_sil_row *r = ord[i];
      const sil_result *s = &res[r - t.rows];
      if (r->skipped) {
        cJSON *n = cJSON_GetObjectItemCaseSensitive(why, r->reason);
        if (n)
          cJSON_SetNumberValue(n, n->valuedouble + 1);
        else
          cJSON_AddNumberToObject(why, r->reason, 1);
        continue;
      }
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "id", r->id);
      cJSON_AddNumberToObject(e, "line", r->line);
      cJSON_AddStringToObject(e, "system", r->system);
      cJSON_AddStringToObject(e, "gpu", r->gpu);
      cJSON_AddStringToObject(e, "model", r->model);
      cJSON_AddStringToObject(e, "precision", r->precision[0] ? r->precision : "bf16");
      cJSON_AddNumberToObject(e, "tp", (double)r->tp);
      cJSON_AddNumberToObject(e, "batch_size", (double)r->batch);
      cJSON_AddNumberToObject(e, "isl", (double)r->isl);
      cJSON_AddNumberToObject(e, "osl", (double)r->osl);
      cJSON *m = cJSON_AddObjectToObject(e, "measured");
      cJSON_AddNumberToObject(m, "ttft_ms", r->ttft_ms);
      cJSON_AddNumberToObject(m, "tpot_ms", r->tpot_ms);
      if (s->ok) {
        cJSON *sm = cJSON_AddObjectToObject(e, "simulated");
        cJSON_AddNumberToObject(sm, "ttft_ms", s->ttft_ms);
        cJSON_AddNumberToObject(sm, "tpot_ms", s->tpot_ms);
        cJSON *ep = cJSON_AddObjectToObject(e, "error_pct");
        cJSON_AddNumberToObject(ep, "ttft", s->err_ttft);
        cJSON_AddNumberToObject(ep, "tpot", s->err_tpot);
      } else {
        cJSON_AddStringToObject(e, "error", s->error);
      }
      cJSON_AddItemToArray(rows, e);
    }
    for (int lo = 0; lo < t.n;) {
      int hi = lo + 1;
      while (hi < t.n && !strcmp(ord[hi]->system, ord[lo]->system) && !strcmp(ord[hi]->model, ord[lo]->model))
        hi++;
      double gt, gp;
      int gn;
      group_medians(ord, &t, res, lo, hi, &gt, &gp, &gn);
      if (gn > 0) {
        cJSON *g = cJSON_CreateObject();
        cJSON_AddStringToObject(g, "system", ord[lo]->system);
        cJSON_AddStringToObject(g, "model", ord[lo]->model);
        cJSON_AddNumberToObject(g, "rows", gn);
        cJSON *gm = cJSON_AddObjectToObject(g, "median_abs_error_pct");
        cJSON_AddNumberToObject(gm, "ttft", gt);
        cJSON_AddNumberToObject(gm, "tpot", gp);
        cJSON_AddItemToArray(groups, g);
      }
      lo = hi;
    }
    cJSON *mm = cJSON_AddObjectToObject(o, "median_abs_error_pct");
    if (nok > 0) {
      cJSON_AddNumberToObject(mm, "ttft", med_t);
      cJSON_AddNumberToObject(mm, "tpot", med_p);
    } else {
      cJSON_AddNullToObject(mm, "ttft");
      cJSON_AddNullToObject(mm, "tpot");
    }
    cJSON_AddNumberToObject(o, "simulated", nrun);
    cJSON_AddNumberToObject(o, "failed", nfail);
    cJSON_AddNumberToObject(o, "skipped", nskip);
    cJSON_AddItemToObject(o, "skipped_reasons", why);
    char *s = cJSON_Print(o);
    puts(s);
    free(s);
    cJSON_Delete(o);
  } else {
    for (int lo = 0; lo < t.n;) {
      int hi = lo + 1;
      while (hi < t.n && !strcmp(ord[hi]->system, ord[lo]->system) && !strcmp(ord[hi]->model, ord[lo]->model))
        hi++;
      double gt, gp;
      int gn;
      group_medians(ord, &t, res, lo, hi, &gt, &gp, &gn);
      bool any = false;
      for (int i = lo; i < hi; i++)
        any |= !ord[i]->skipped;
      if (any) {
        printf("%s / %s\n", ord[lo]->system, ord[lo]->model);
        printf("  %5s %-5s %3s %5s %5s %4s | %10s %10s %7s | %8s %8s %7s\n", "line", "prec", "tp", "isl",
               "osl", "conc", "TTFT ms", "sim", "err", "TPOT ms", "sim", "err");
        for (int i = lo; i < hi; i++) {
          const fid_sil_row *r = ord[i];
          const sil_result *s = &res[r - t.rows];
          if (r->skipped)
            continue;
          if (!s->ok) {
            printf("  %5d %-5s %3lld %5lld %5lld %4lld | %10.1f  not simulated: %s\n", r->line,
                   r->precision[0] ? r->precision : "bf16", (long long)r->tp, (long long)r->isl,
                   (long long)r->osl, (long long)r->batch, r->ttft_ms, s->error);
            continue;
          }
          printf("  %5d %-5s %3lld %5lld %5lld %4lld | %10.1f %10.1f %+6.1f%% | %8.2f %8.2f %+6.1f%%\n",
                 r->line, r->precision[0] ? r->precision : "bf16", (long long)r->tp, (long long)r->isl,
                 (long long)r->osl, (long long)r->batch, r->ttft_ms, s->ttft_ms, s->err_ttft, r->tpot_ms,
                 s->tpot_ms, s->err_tpot);
        }
        if (gn > 0)
          printf("  median |error| over %d rows: TTFT %.1f%%, TPOT %.1f%%\n\n", gn, gt, gp);
        else
          printf("  no row simulated\n\n");
      }
      lo = hi;
    }
    /* Skipped rows by reason. */
    for (int i = 0; i < t.n; i++) {
      if (!t.rows[i].skipped)
        continue;
      bool first = true;
      for (int j = 0; j < i; j++)
        if (t.rows[j].skipped && !strcmp(t.rows[j].reason, t.rows[i].reason))
          first = false;
      if (!first)
        continue;
      int cnt = 0;
      for (int j = i; j < t.n; j++)
        cnt += t.rows[j].skipped && !strcmp(t.rows[j].reason, t.rows[i].reason);
      printf("skipped %d row%s: %s\n", cnt, cnt == 1 ? "" : "s", t.rows[i].reason);
    }
    if (nok > 0)
      printf("%s%d rows simulated (%d failed, %d skipped): median |error| TTFT %.1f%%, TPOT %.1f%%\n",
             nskip ? "\n" : "", nrun, nfail, nskip, med_t, med_p);
    else
      printf("%s%d rows simulated (%d failed, %d skipped)\n", nskip ? "\n" : "", nrun, nfail, nskip);
  }
  fid_sil_free(&t);
  free(res);
  free(ord);
  free(ov);
  if (max_error >= 0 && (nok == 0 || med_t > max_error || med_p > max_error)) {
    fprintf(stderr, "kvsim validate: median absolute error (TTFT %.1f%%, TPOT %.1f%%) exceeds --max-error %.1f%%\n",
            med_t, med_p, max_error);
    return 1;
  }
  return 0;
}
