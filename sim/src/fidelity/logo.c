/* Leave-one-GPU-out over the dev data (kvsim/fidelity.h). A group is
 * GPU x model x precision x source. The step times come from each GPU's
 * measured kernel tables (nothing fitted per GPU); what is fitted is the
 * engine's host time per step, across GPUs, and, for client-measured rows,
 * the benchmark client's latency. Each GPU's rows are predicted by the two
 * fitted on every other GPU's rows (logo_fit.c), and simulated at them.
 * The band of each status is measured the same way: the rows of GPUs with
 * tables of their own (kernels), the RTX 4090 run on the L40S's tables and
 * the H100 rows on the H200's (kernels-borrowed: same architecture), the
 * H100 rows on the A100's and the B200 rows on the H100's (spec-only:
 * another architecture), MoE models apart. Rows that need more GPU time
 * than the tables allow (physical.c) are listed and left out; the start-up
 * logs' memory plan has no fitted coefficient: held out = in-sample. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "fidelity/logo.h"
#include "kvsim/fidelity.h"

bool kvsim__logo_is_moe(const char *model) {
  kvsim_model_t m;
  kvsim_err e = {0};
  return kvsim_model_load(model, &m, &e) == KVSIM_OK && m.num_experts > 0;
}

const char *kvsim_fidelity_band_name(int b) {
  static const char *const names[KVSIM_FID_NBAND] = {"kernels", "kernels-borrowed", "spec-only", "moe"};
  return b >= 0 && b < KVSIM_FID_NBAND ? names[b] : "?";
}

/* |errors| per band, grown as items are predicted. */
typedef struct errs {
  double *v[KVSIM_FID_NBAND][2];
  int n[KVSIM_FID_NBAND];
} errs_t;

static void errs_add(errs_t *e, int b, double ttft, double tpot) {
  if (!e->v[b][0])
    return;
  e->v[b][0][e->n[b]] = fabs(ttft) / 100;
  e->v[b][1][e->n[b]++] = fabs(tpot) / 100;
}

/* The GPU of a held-out item, its status's band: its own tables, or (the
 * RTX 4090) a neighbour's. */
static int own_band(const kvsim__logo_item_t *it, bool moe) {
  kvsim_gpu_t g;
  kvsim_err e = {0};
  if (moe)
    return KVSIM_FID_BAND_MOE;
  if (kvsim_gpu_load(it->gpu, &g, &e) < 0 || g.perf.status == KVSIM_CAL_KERNELS)
    return KVSIM_FID_BAND_KERNELS;
  return g.perf.status == KVSIM_CAL_KERNELS_BORROWED ? KVSIM_FID_BAND_BORROWED : KVSIM_FID_BAND_SPEC;
}

/* Other profiles a GPU's dense rows are also predicted with, for the
 * borrowed and spec-only bands. */
static const struct {
  const char *gpu, *kernels;
  int band;
} ALSO[] = {{"h100-sxm", "h200", KVSIM_FID_BAND_BORROWED},
            {"h100-sxm", "a100-80g", KVSIM_FID_BAND_SPEC},
            {"b200", "h100-sxm", KVSIM_FID_BAND_SPEC}};

static int predict_gpu(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim__logo_item_t *items, int n,
                       const char *gpu, errs_t *e, kvsim_err *err) {
  kvsim__logo_par_t par;
  kvsim__logo_fit(items, n, gpu, &par);
  l->fits++;
  for (int i = 0; i < n; i++) {
    kvsim__logo_item_t *it = &items[i];
    if (strcmp(it->gpu, gpu))
      continue;
    it->par = par;
    int rc = kvsim__logo_simulate(o, it, NULL, &par, it->held, err);
    if (rc < 0)
      return kvsim_err_prefix(err, "%s", it->row ? it->row->id : gpu);
    const kvsim_fid_logo_group_t *g = &l->groups[it->group];
    /* The bands are vLLM's: the SGLang rows are their own groups. */
    if (it->family != KVSIM_HOST_SGLANG)
      errs_add(e, own_band(it, g->moe), kvsim_fidelity_err_pct(it->held[0], it->meas[0]),
               kvsim_fidelity_err_pct(it->held[1], it->meas[1]));
    for (size_t a = 0; !g->moe && !o->no_refit && it->family != KVSIM_HOST_SGLANG && a < sizeof ALSO / sizeof *ALSO;
         a++) {
      double v[3];
      if (strcmp(ALSO[a].gpu, gpu) || kvsim__logo_simulate(o, it, ALSO[a].kernels, &par, v, err) < 0)
        continue;
      errs_add(e, ALSO[a].band, kvsim_fidelity_err_pct(v[0], it->meas[0]), kvsim_fidelity_err_pct(v[1], it->meas[1]));
    }
  }
  return KVSIM_OK;
}

/* Which measurement an item is, for its group's rows. */
static void row_of(const kvsim__logo_item_t *it, kvsim_fid_logo_row_t *r) {
  memset(r, 0, sizeof *r);
  if (!it->row) {
    snprintf(r->id, sizeof r->id, "per-request run");
    return;
  }
  snprintf(r->id, sizeof r->id, "%s", it->row->id);
  r->tp = it->row->tp;
  r->clients = it->row->batch;
  r->isl = it->row->isl;
  r->osl = it->row->osl;
}

/* A group's held-out and in-sample figures from its items. */
static int summarize_group(kvsim_fid_logo_t *l, int gi, const kvsim__logo_item_t *items, int n) {
  kvsim_fid_logo_group_t *g = &l->groups[gi];
  double *v[3], *s[3];
  int m = 0, rc = KVSIM_OK;
  kvsim_fid_logo_row_t *rows = kvsim__malloc((size_t)(n + 1) * sizeof *rows);
  for (int k = 0; k < 3; k++) {
    v[k] = kvsim__malloc((size_t)(n + 1) * sizeof(double));
    s[k] = kvsim__malloc((size_t)(n + 1) * sizeof(double));
  }
  for (int i = 0; rows && v[0] && v[1] && v[2] && s[0] && s[1] && s[2] && i < n; i++) {
    const kvsim__logo_item_t *it = &items[i];
    if (it->group != gi)
      continue;
    row_of(it, &rows[m]);
    for (int k = 0; k < 3; k++) {
      v[k][m] = kvsim_fidelity_err_pct(it->held[k], it->meas[k]);
      s[k][m] = kvsim_fidelity_err_pct(kvsim__logo_linear(it, k, &l->all), it->meas[k]);
      rows[m].err[k] = v[k][m];
      if (it->run >= 0)
        g->held_signed[k] = v[k][m];
    }
    static const char *const fam[KVSIM_HOST_FAMILIES] = {"vLLM sync", "vLLM async", "SGLang"};
    snprintf(g->held_from, sizeof g->held_from, "host %.0f us + %.1f us/req (%s), client %.1f ms; without %s",
             it->par.host_us[it->family], it->par.per_seq_us[it->family], fam[it->family],
             it->client ? it->par.frontend_us / 1e3 : 0.0, g->gpu);
    m++;
  }
  if (!rows || !v[0] || !v[1] || !v[2] || !s[0] || !s[1] || !s[2] ||
      kvsim__logo_set_rows(g, rows, m) < 0)
    rc = KVSIM_ENOMEM;
  kvsim__free(rows);
  for (int k = 0; k < 3; k++) {
    if (rc == KVSIM_OK && m) {
      g->held[k] = kvsim_fidelity_median_abs(v[k], m);
      g->shipped[k] = kvsim_fidelity_median_abs(s[k], m);
      for (int i = 0; i < m; i++)
        v[k][i] = fabs(v[k][i]);
      g->held_q90[k] = kvsim__logo_quantile(v[k], m, 0.9);
    }
    kvsim__free(v[k]);
    kvsim__free(s[k]);
  }
  g->shipped_in_sample = true;
  g->by_gpu = true;
  return rc;
}

static int latency(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim_err *err) {
  kvsim_fid_sil_table_t t[2];
  memset(t, 0, sizeof t);
  kvsim__logo_item_t *items = NULL;
  int n = 0, first = l->ngroups;
  int rc = kvsim__logo_collect(o, l, t, &items, &n, err);
  errs_t e;
  memset(&e, 0, sizeof e);
  for (int b = 0; b < KVSIM_FID_NBAND; b++)
    for (int k = 0; k < 2; k++)
      if (!(e.v[b][k] = kvsim__calloc((size_t)(4 * n + 1), sizeof(double))))
        rc = rc < 0 ? rc : kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  if (rc == KVSIM_OK)
    kvsim__logo_fit(items, n, NULL, &l->all);
  /* Every GPU with items, once, in the order they appear. */
  for (int i = 0; rc == KVSIM_OK && i < n; i++) {
    bool seen = false;
    for (int j = 0; j < i; j++)
      seen |= !strcmp(items[j].gpu, items[i].gpu);
    if (!seen)
      rc = predict_gpu(o, l, items, n, items[i].gpu, &e, err);
  }
  for (int gi = first; rc == KVSIM_OK && gi < l->ngroups; gi++)
    if (l->groups[gi].n && summarize_group(l, gi, items, n) < 0)
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  for (int gi = first; rc == KVSIM_OK && o->progress && gi < l->ngroups; gi++)
    o->progress(o->ctx, &l->groups[gi]);
  for (int b = 0; b < KVSIM_FID_NBAND; b++) {
    l->band_rows[b] = e.n[b];
    for (int k = 0; k < 2; k++) {
      l->band[b][k] = rc == KVSIM_OK && e.n[b] ? kvsim__logo_quantile(e.v[b][k], e.n[b], 0.9) : NAN;
      kvsim__free(e.v[b][k]);
    }
  }
  kvsim__free(items);
  kvsim_fidelity_silicon_free(&t[0]);
  kvsim_fidelity_silicon_free(&t[1]);
  return rc;
}

/* ---- start-up logs ---- */

static double median_abs3(double *v, int n) { return n ? kvsim_fidelity_median_abs(v, n) : NAN; }

static int startup(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim_err *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/vllm_startup_logs.csv", o->validation_dir);
  kvsim_fid_startup_t t;
  memset(&t, 0, sizeof t);
  int rc = kvsim_fidelity_startup_read(path, &t, err);
  if (rc == KVSIM_OK)
    rc = kvsim_fidelity_startup_evaluate(&t, err);
  double *v = rc == KVSIM_OK ? kvsim__malloc((size_t)(t.n + 1) * sizeof *v) : NULL;
  if (rc == KVSIM_OK && !v)
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  /* One group per GPU x model; precision is the KV cache dtype column. */
  for (int64_t i = 0; rc == KVSIM_OK && i < t.n; i++) {
    const kvsim_fid_su_result_t *r = &t.res[i];
    if (r->skipped || isnan(r->err_pred))
      continue;
    const char *kv = t.rows[i].kv_dtype[0] ? t.rows[i].kv_dtype : "auto";
    kvsim_fid_logo_group_t *g = kvsim__logo_group(l, r->gpu_name, r->model_name, kv, "startup");
    if (!g) {
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
      break;
    }
    if (g->n)
      continue;
    int n = 0;
    for (int64_t j = i; j < t.n; j++)
      if (!t.res[j].skipped && !isnan(t.res[j].err_pred) && !strcmp(t.res[j].gpu_name, r->gpu_name) &&
          !strcmp(t.res[j].model_name, r->model_name) &&
          !strcmp(t.rows[j].kv_dtype[0] ? t.rows[j].kv_dtype : "auto", kv))
        v[n++] = t.res[j].err_pred;
    g->n = n;
    g->kv_err = median_abs3(v, n);
    snprintf(g->held_from, sizeof g->held_from, "no fitted coefficient (memory plan)");
  }
  kvsim__free(v);
  kvsim_fidelity_startup_fini(&t);
  return rc;
}

int kvsim_fidelity_logo_run(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *out, kvsim_err *err) {
  memset(out, 0, sizeof *out);
  int rc;
  if ((rc = latency(o, out, err)) < 0 || (rc = startup(o, out, err)) < 0)
    return rc;
  return KVSIM_OK;
}

char *kvsim_fidelity_logo_report(const kvsim_fid_logo_opts_t *opts, bool json, kvsim_err *err) {
  kvsim_fid_logo_t l;
  char *s = NULL;
  if (kvsim_fidelity_logo_run(opts, &l, err) == KVSIM_OK &&
      !(s = json ? kvsim_fidelity_logo_to_json(&l) : kvsim_fidelity_logo_to_text(&l)))
    kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  kvsim_fidelity_logo_fini(&l);
  return s;
}
