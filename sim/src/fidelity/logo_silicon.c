/* Leave-one-group-out over the AIConfigurator silicon rows (logo.c says
 * which coefficients predict which group). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "fidelity/logo.h"
#include "kvsim/fidelity.h"

/* The rows the shipped fits were fitted on (scripts/calibrate.sh: the
 * dense models on h100-sxm and b200). */
static bool fitted_on(const kvsim_fid_sil_row_t *r) {
  return (!strcmp(r->gpu, "h100-sxm") || !strcmp(r->gpu, "b200")) &&
         (!strcmp(r->model, "qwen3-32b") || !strcmp(r->model, "llama-3.1-70b") ||
          !strcmp(r->model, "llama-3.1-8b"));
}

typedef struct srow {
  const kvsim_fid_sil_row_t *r;
  int group;
  double ttft, tpot; /* shipped simulation (ms) */
} srow_t;

static const char *precision_of(const kvsim_fid_sil_row_t *r) { return r->precision[0] ? r->precision : "bf16"; }

/* E2E of a row from its means: TTFT + TPOT x (mean output - 1). */
static double e2e(const kvsim_fid_sil_row_t *r, double ttft, double tpot) {
  const double osl = (double)r->osl * (1 + KVSIM_FID_SIL_RANGE_RATIO) / 2;
  return ttft + tpot * (osl - 1);
}

/* Median |error| of the group's rows at perf (NULL: shipped, cached),
 * and, with keep, their 90th percentile and each row's into g. */
static int group_errors(const srow_t *rows, int n, int group, const kvsim_gpu_perf_t *perf, double *med,
                        kvsim_fid_logo_group_t *keep, kvsim_err *err) {
  double *v[3];
  int m = 0, rc = KVSIM_OK;
  for (int k = 0; k < 3; k++)
    v[k] = kvsim__malloc((size_t)(n + 1) * sizeof(double));
  if (!v[0] || !v[1] || !v[2])
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  for (int i = 0; rc == KVSIM_OK && i < n; i++) {
    if (rows[i].group != group)
      continue;
    const kvsim_fid_sil_row_t *r = rows[i].r;
    double t = rows[i].ttft, q = rows[i].tpot;
    kvsim_err e = {0};
    if (perf && kvsim_fidelity_silicon_simulate(r, NULL, 0, KVSIM_FID_SIL_RANGE_RATIO, perf, &t, &q, &e) < 0)
      continue; /* fits with the shipped coefficients; a plan cannot depend on them */
    v[0][m] = kvsim_fidelity_err_pct(t, r->ttft_ms);
    v[1][m] = kvsim_fidelity_err_pct(q, r->tpot_ms);
    v[2][m] = kvsim_fidelity_err_pct(e2e(r, t, q), e2e(r, r->ttft_ms, r->tpot_ms));
    m++;
  }
  if (rc == KVSIM_OK && keep && kvsim__logo_set_rows(keep, v[0], v[1], m) < 0)
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  for (int k = 0; k < 3; k++) {
    if (rc == KVSIM_OK)
      med[k] = m ? kvsim_fidelity_median_abs(v[k], m) : NAN;
    if (rc == KVSIM_OK && keep) {
      for (int i = 0; i < m; i++)
        v[k][i] = fabs(v[k][i]);
      keep->held_q90[k] = m ? kvsim__logo_quantile(v[k], m, 0.9) : NAN;
    }
    kvsim__free(v[k]);
  }
  return rc;
}

/* The fit of `gpu` on its fitted groups other than `group`; 0 rows: none. */
static int fit_rest(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, const srow_t *rows, int n, int group,
                    const char *gpu, kvsim_gpu_perf_t *out, int *nrows, kvsim_err *err) {
  kvsim_gpu_t g;
  int rc = kvsim_gpu_load(gpu, &g, err);
  if (rc < 0)
    return rc;
  /* A neutral start, not the generation defaults: those are copies of
   * the all-data fits (gpu.c), and a held-out fit must not start at the
   * optimum that saw the group. Round physical values: large bf16 GEMMs
   * at ~70 % of peak, fp8 at ~60 %, HBM streaming at ~85 %. */
  kvsim_gpu_default_perf(g.generation, &g.perf);
  g.perf.mfu = 0.7, g.perf.mfu_fp8 = g.perf.mfu_fp4 = 0.6, g.perf.mbu = 0.85, g.perf.attn_efficiency = 0.5;
  g.perf.step_overhead_us = 600, g.perf.per_layer_us = 20, g.perf.per_seq_us = 10, g.perf.frontend_us = 3000;
  kvsim_fid_calib_t c;
  kvsim_fidelity_calib_init(&c, &g);
  c.rows = kvsim__calloc((size_t)(n + 1), sizeof *c.rows);
  if (!c.rows) {
    kvsim_fidelity_calib_fini(&c);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++)
    if (rows[i].group != group && !strcmp(rows[i].r->gpu, gpu) && fitted_on(rows[i].r))
      c.rows[c.nrows++] = *rows[i].r;
  *nrows = c.nrows;
  kvsim_fid_calib_result_t res;
  memset(&res, 0, sizeof res);
  if (c.nrows > 0) {
    kvsim_fid_calib_opts_t co = {.max_iter = o->max_iter > 0 ? o->max_iter : 10};
    rc = kvsim_fidelity_calibrate(&c, &co, &res, err);
    if (rc == KVSIM_OK)
      *out = res.fitted;
    l->fits++;
  }
  kvsim_fidelity_calib_result_fini(&res);
  kvsim_fidelity_calib_fini(&c);
  return rc;
}

/* Reads and classifies the rows: excluded, or in a group with its
 * shipped simulation. */
static int collect(const kvsim_fid_sil_table_t *t, kvsim_fid_logo_t *l, srow_t *rows, int *n, kvsim_err *err) {
  *n = 0;
  for (int64_t i = 0; i < t->n; i++) {
    const kvsim_fid_sil_row_t *r = &t->rows[i];
    if (r->skipped)
      continue;
    char why[192];
    if (!kvsim_fidelity_sil_physical(r, KVSIM_FID_SIL_RANGE_RATIO, why, sizeof why)) {
      kvsim_fid_logo_group_t *g = kvsim__logo_group(l, r->gpu, r->model, precision_of(r), "silicon");
      if (!g || kvsim__logo_exclude(l, r->id, why) < 0)
        return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
      g->excluded++;
      continue;
    }
    srow_t *s = &rows[*n];
    s->r = r;
    kvsim_err e = {0};
    if (kvsim_fidelity_silicon_simulate(r, NULL, 0, KVSIM_FID_SIL_RANGE_RATIO, NULL, &s->ttft, &s->tpot, &e) < 0) {
      snprintf(why, sizeof why, "not reproducible: %s", e.msg);
      if (kvsim__logo_exclude(l, r->id, why) < 0)
        return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
      continue;
    }
    kvsim_fid_logo_group_t *g = kvsim__logo_group(l, r->gpu, r->model, precision_of(r), "silicon");
    if (!g)
      return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    s->group = (int)(g - l->groups);
    g->n++;
    g->shipped_in_sample |= fitted_on(r);
    (*n)++;
  }
  return KVSIM_OK;
}

int kvsim__logo_silicon(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim_err *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/aiconfigurator/silicon_vllm.csv", o->validation_dir);
  kvsim_fid_sil_table_t t;
  memset(&t, 0, sizeof t);
  int rc = kvsim_fidelity_silicon_read(path, NULL, 0, &t, err);
  srow_t *rows = rc == KVSIM_OK ? kvsim__calloc((size_t)(t.n + 1), sizeof *rows) : NULL;
  int n = 0, first = l->ngroups;
  if (rc == KVSIM_OK && !rows)
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  if (rc == KVSIM_OK)
    rc = collect(&t, l, rows, &n, err);
  for (int gi = first; rc == KVSIM_OK && gi < l->ngroups; gi++) {
    kvsim_fid_logo_group_t *g = &l->groups[gi];
    if (!g->n)
      continue;
    g->moe = kvsim__logo_is_moe(g->model);
    /* The shipped errors are kept as the held-out ones until a held-out
     * fit replaces them (a group no fit saw keeps them). */
    if ((rc = group_errors(rows, n, gi, NULL, g->shipped, g, err)) < 0)
      break;
    kvsim_gpu_perf_t p;
    int fitted = 0;
    if (!g->shipped_in_sample) {
      /* No fit saw it: the shipped coefficients are held out already. */
      memcpy(g->held, g->shipped, sizeof g->held);
      snprintf(g->held_from, sizeof g->held_from, "%s shipped fit (never saw this group)", g->gpu);
    } else {
      if (!o->no_refit && (rc = fit_rest(o, l, rows, n, gi, g->gpu, &p, &fitted, err)) < 0)
        break;
      if (fitted) {
        snprintf(g->held_from, sizeof g->held_from, "%s fit on its other groups (%d rows)", g->gpu, fitted);
      } else {
        kvsim_gpu_t me;
        char from[96];
        if ((rc = kvsim_gpu_load(g->gpu, &me, err)) < 0)
          break;
        kvsim__logo_donor(&me, &p, from, sizeof from);
        g->by_gpu = true;
        snprintf(g->held_from, sizeof g->held_from, o->no_refit ? "%s (GPU held out)" : "%s (no other group on %s)",
                 from, g->gpu);
      }
      if ((rc = group_errors(rows, n, gi, &p, g->held, g, err)) < 0)
        break;
    }
    if (o->progress)
      o->progress(o->ctx, g);
  }
  kvsim__free(rows);
  kvsim_fidelity_silicon_free(&t);
  return rc;
}
