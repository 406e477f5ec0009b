/* Evaluating a calibration's data set at given coefficients: every run and
 * silicon row simulated, residuals and their summary (fidelity/calib.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "fidelity/calib.h"
#include "kvsim/model.h"

size_t kvsim__fid_nres(const kvsim_fid_calib_t *c) {
  return (size_t)c->nruns * KVSIM_FID_RUN_METRICS + (size_t)c->nrows * 2;
}

static double log_ratio(double sim, double meas) {
  /* A run that produced nothing is maximally wrong, not undefined. */
  if (!(sim > 0) || !(meas > 0))
    return 5;
  return log(sim / meas);
}

static double robust(const kvsim__fid_solver_t *s, double r) {
  if (!s->soft_l1)
    return r;
  /* soft-L1: rho(r) = 2 s^2 (sqrt(1 + (r/s)^2) - 1); as a residual,
   * sign(r) sqrt(rho), which is r for |r| << s and grows like sqrt(|r|). */
  double sc = s->loss_scale, z = r / sc;
  double rho = 2 * sc * sc * (sqrt(1 + z * z) - 1);
  return (r < 0 ? -1 : 1) * sqrt(rho);
}

static void put(kvsim__fid_solver_t *s, gsl_vector *out, size_t k, double meas, double sim) {
  s->meas[k] = meas;
  s->sim[k] = sim;
  if (out)
    gsl_vector_set(out, k, robust(s, log_ratio(sim, meas)));
}

static int evaluate_run(kvsim__fid_solver_t *s, kvsim_fid_calib_run_t *ri, const kvsim_gpu_perf_t *p,
                        gsl_vector *out, size_t *k) {
  ri->sc.gpu.perf = *p;
  kvsim_fid_measured_cmp_t cmp;
  kvsim_err e = {0};
  int rc = kvsim_fidelity_measured_compare(&ri->m, &ri->sc, &cmp, &e);
  if (rc < 0) {
    s->err = e;
    s->failed = true;
    return rc;
  }
  for (int q = 0; q < 3; q++) {
    const kvsim_fid_stat_t *a = &cmp.lat.meas[q], *b = &cmp.lat.sim[q];
    const double mv[4] = {a->mean, a->p50, a->p90, a->p99}, sv[4] = {b->mean, b->p50, b->p90, b->p99};
    for (int j = 0; j < 4; j++, (*k)++)
      if (ri->m.aggregates_only && isnan(mv[j])) {
        /* A benchmark's aggregates state no p90 (vLLM's default
         * --metric-percentiles, SGLang): nothing to fit, not a miss. */
        s->meas[*k] = mv[j];
        s->sim[*k] = sv[j];
        if (out)
          gsl_vector_set(out, *k, 0);
      } else {
        put(s, out, *k, mv[j], sv[j]);
      }
  }
  return KVSIM_OK;
}

int kvsim__fid_evaluate(kvsim__fid_solver_t *s, const kvsim_gpu_perf_t *p, gsl_vector *out) {
  kvsim_fid_calib_t *c = s->c;
  size_t k = 0;
  int rc;
  s->evals++;
  for (int i = 0; i < c->nruns; i++)
    if ((rc = evaluate_run(s, &c->runs[i], p, out, &k)) < 0)
      return rc;
  for (int i = 0; i < c->nrows; i++) {
    const kvsim_fid_sil_row_t *r = &c->rows[i];
    double t = 0, q = 0;
    kvsim_err e = {0};
    rc = kvsim_fidelity_silicon_simulate(r, &c->gpu, 1, c->range_ratio, p, &t, &q, &e);
    if (rc < 0) {
      /* A row whose plan does not fit at these settings (it cannot
       * depend on the step time) was filtered out before the fit. */
      s->err = e;
      s->failed = true;
      return rc;
    }
    put(s, out, k++, r->ttft_ms, t);
    put(s, out, k++, r->tpot_ms, q);
  }
  return KVSIM_OK;
}

/* Kind of residual k: 0 TTFT, 1 TPOT, 2 E2E. */
static int res_kind(const kvsim_fid_calib_t *c, size_t k) {
  size_t runs = (size_t)c->nruns * KVSIM_FID_RUN_METRICS;
  if (k < runs)
    return (int)(k % KVSIM_FID_RUN_METRICS) / 4;
  return (int)((k - runs) % 2);
}

void kvsim__fid_summarize(const kvsim__fid_solver_t *s, kvsim_fid_calib_summary_t *sum) {
  size_t n = kvsim__fid_nres(s->c);
  double *e[3];
  int m[3] = {0, 0, 0};
  for (int i = 0; i < 3; i++)
    e[i] = kvsim__malloc((n + 1) * sizeof(double));
  for (size_t k = 0; k < n; k++) {
    int kind = res_kind(s->c, k);
    double rel = s->meas[k] > 0 ? s->sim[k] / s->meas[k] - 1 : NAN;
    if (!isfinite(rel) || !e[kind])
      continue;
    e[kind][m[kind]++] = 100 * rel;
  }
  sum->n_ttft = m[0];
  sum->n_tpot = m[1];
  sum->n_e2e = m[2];
  sum->ttft_med = e[0] ? kvsim_fidelity_median_abs(e[0], m[0]) : NAN;
  sum->tpot_med = e[1] ? kvsim_fidelity_median_abs(e[1], m[1]) : NAN;
  sum->e2e_med = e[2] ? kvsim_fidelity_median_abs(e[2], m[2]) : NAN;
  /* sigma: the spread of the relative errors around a perfect prediction
   * (bias included, so the band covers a systematic offset too), robustly:
   * 1.4826 x the median absolute relative error, which is one standard
   * deviation for normal errors and is not dominated by the few rows the
   * model cannot reproduce (the root mean square would be). */
  sum->ttft_sigma = m[0] ? 1.4826 * sum->ttft_med / 100 : 0;
  sum->tpot_sigma = m[1] ? 1.4826 * sum->tpot_med / 100 : 0;
  for (int i = 0; i < 3; i++)
    kvsim__free(e[i]);
}

void kvsim__fid_default_fit(kvsim__fid_solver_t *s) {
  /* The engine's host time per step; the client-side latency only where
   * the data has client-measured TTFTs (silicon rows, vllm bench). */
  const kvsim_fid_calib_t *c = s->c;
  bool client = c->nrows > 0;
  for (int i = 0; i < c->nruns; i++)
    client |= kvsim_fidelity_fmt_client(c->runs[i].m.fmt);
  s->nfit = 0;
  s->fit[s->nfit++] = KVSIM_FID_HOST;
  s->fit[s->nfit++] = KVSIM_FID_HOST_PER_SEQ;
  if (client)
    s->fit[s->nfit++] = KVSIM_FID_FRONTEND;
}
