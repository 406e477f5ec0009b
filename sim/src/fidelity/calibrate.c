/* Calibration (kvsim/fidelity.h): fits the step-time model's coefficients
 * of one GPU (gpu.h kvsim_gpu_perf_t) to measured data by nonlinear least
 * squares (gsl_multifit_nlinear, trust region / Levenberg-Marquardt).
 *
 * The model is the whole simulation, not a formula: every evaluation runs
 * the scenarios (a few ms to tens of ms each), so the residuals see the
 * scheduler, chunked prefill and the KV pool exactly as `kvsim run` does.
 * Residuals are log ratios ln(simulated / measured) of, per run, the mean,
 * p50, p90 and p99 of TTFT, TPOT and E2E, and per silicon row the mean TTFT and
 * mean TPOT: relative errors, symmetric, so that a 60 s TTFT and a 10 ms
 * TPOT weigh alike. By default a soft-L1 loss (scale 10 %) keeps a few
 * rows the model cannot reproduce (e.g. rows whose KV cache runs full,
 * where the memory plan, not the step time, sets the error) from
 * dominating the fit; opts->linear is plain least squares.
 *
 * The Jacobian is by central differences with a fixed step in the
 * transformed coordinates (below): GSL's default relative step (~1e-8 x)
 * is far below the resolution at which a discrete-event run responds
 * (a step boundary moves), so it would return zero columns.
 *
 * Coordinates: efficiencies as their logarithm, held in [0.05, 1] (with a
 * penalty residual beyond, see nres_fit), a GEMM efficiency below the
 * share of the spec peak its precision's best measured matmul reached on
 * this GPU (kvsim_gpu_t achieved_*: a GEMM in the engine is not faster
 * than the silicon's best); the overheads in [0, inf) through softplus.
 * The solver cannot leave the physical range. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "core/alloc.h"
#include "fidelity/calib.h"
#include "kvsim/fidelity.h"

/* ---- coefficients and their coordinates ---- */

/* An efficiency is fitted as ln(efficiency), held in [EFF_LO, 1]; an
 * overhead as softplus x scale (us). */
static const double coef_scale[KVSIM_FID_NCOEF] = {
    [KVSIM_FID_HOST] = 1000, [KVSIM_FID_HOST_PER_SEQ] = 10, [KVSIM_FID_FRONTEND] = 1000,
    [KVSIM_FID_FRONTEND_PER_TOKEN] = 0.1};

static bool is_efficiency(int k) { return coef_scale[k] == 0; }

/* Lowest efficiency the fit may reach: below 5 % of peak a GPU is not
 * being used, and a fit that goes there is fitting something else. */
#define EFF_LO 0.05

static double to_coef(const kvsim__fid_solver_t *s, int k, double x) {
  if (is_efficiency(k)) {
    /* ln(efficiency): a step's time is inversely proportional to an
     * efficiency, so the log-ratio residuals are close to linear in x.
     * Beyond the physical range the value is held at the bound. */
    double e = exp(x), hi = s->eff_hi[k];
    return e < EFF_LO ? EFF_LO : e > hi ? hi : e;
  }
  /* softplus, written to stay finite for large x */
  double sp = x > 30 ? x : log1p(exp(x));
  return coef_scale[k] * sp;
}

static double to_x(const kvsim__fid_solver_t *s, int k, double c) {
  if (is_efficiency(k))
    return log(c < EFF_LO ? EFF_LO : c > s->eff_hi[k] ? s->eff_hi[k] : c);
  double v = c / coef_scale[k];
  if (v < 1e-4)
    v = 1e-4;
  return v > 30 ? v : log(expm1(v));
}

/* ---- residuals ---- */

/* The solver's residuals: the data's, then one bound penalty per fitted
 * coefficient (0 inside the physical range). The simulation holds an
 * efficiency at its bound; without the penalty that region would be flat
 * and a step that overshoots into it could never come back. */
static size_t nres_fit(const kvsim__fid_solver_t *s) { return kvsim__fid_nres(s->c) + (size_t)s->nfit; }

#define BOUND_WEIGHT 10.0

static void perf_at(const kvsim__fid_solver_t *s, const gsl_vector *x, kvsim_gpu_perf_t *p) {
  *p = s->c->gpu.perf;
  for (int i = 0; i < s->nfit; i++)
    *kvsim_fidelity_coef(p, s->fit[i]) = to_coef(s, s->fit[i], gsl_vector_get(x, (size_t)i));
  if (p->frontend_us > s->frontend_cap_us)
    p->frontend_us = s->frontend_cap_us;
}

static int f_cb(const gsl_vector *x, void *vs, gsl_vector *f) {
  kvsim__fid_solver_t *s = vs;
  kvsim_gpu_perf_t p;
  perf_at(s, x, &p);
  if (kvsim__fid_evaluate(s, &p, f) < 0)
    return GSL_EFAILED;
  size_t k = kvsim__fid_nres(s->c);
  for (int i = 0; i < s->nfit; i++, k++) {
    double xi = gsl_vector_get(x, (size_t)i), pen = 0;
    const double top = log(s->eff_hi[s->fit[i]]);
    if (is_efficiency(s->fit[i]))
      pen = (xi > top ? xi - top : 0) + (xi < log(EFF_LO) ? log(EFF_LO) - xi : 0);
    else if (s->fit[i] == KVSIM_FID_FRONTEND && to_coef(s, s->fit[i], xi) > s->frontend_cap_us)
      pen = (to_coef(s, s->fit[i], xi) - s->frontend_cap_us) / coef_scale[KVSIM_FID_FRONTEND];
    gsl_vector_set(f, k, BOUND_WEIGHT * pen);
  }
  return GSL_SUCCESS;
}

/* Central differences in the transformed coordinates (softplus x scale),
 * 0.3 each way: about 300 us of host time at its scale of 1,000 us. The run
 * responds to a coefficient in small steps (a request crosses a step
 * boundary), and a step of 0.03 (20-30 us) was below that jitter: from a
 * planted 1,500 us the fit stopped at 482 us (tests/golden/
 * test_validate_calibrate.sh); at 0.3 it recovers it within 2 %. */
#define FD_STEP 0.3

static int df_cb(const gsl_vector *x, void *vs, gsl_matrix *J) {
  kvsim__fid_solver_t *s = vs;
  size_t n = nres_fit(s);
  gsl_vector *f0 = gsl_vector_alloc(n), *f1 = gsl_vector_alloc(n), *xx = gsl_vector_alloc(x->size);
  int rc = GSL_SUCCESS;
  if (!f0 || !f1 || !xx) {
    rc = GSL_ENOMEM;
    goto out;
  }
  for (size_t j = 0; j < x->size; j++) {
    gsl_vector_memcpy(xx, x);
    gsl_vector_set(xx, j, gsl_vector_get(x, j) - FD_STEP);
    if ((rc = f_cb(xx, s, f0)) != GSL_SUCCESS)
      goto out;
    gsl_vector_set(xx, j, gsl_vector_get(x, j) + FD_STEP);
    if ((rc = f_cb(xx, s, f1)) != GSL_SUCCESS)
      goto out;
    for (size_t i = 0; i < n; i++)
      gsl_matrix_set(J, i, j, (gsl_vector_get(f1, i) - gsl_vector_get(f0, i)) / (2 * FD_STEP));
  }
out:
  gsl_vector_free(f0);
  gsl_vector_free(f1);
  gsl_vector_free(xx);
  return rc;
}

static void report_iter(kvsim__fid_solver_t *s, size_t iter, const gsl_multifit_nlinear_workspace *w) {
  if (!s->opts->progress)
    return;
  const gsl_vector *f = gsl_multifit_nlinear_residual(w);
  double ss;
  gsl_blas_ddot(f, f, &ss);
  kvsim_gpu_perf_t p;
  perf_at(s, gsl_multifit_nlinear_position(w), &p);
  s->opts->progress(s->opts->ctx, iter, 0.5 * ss, s->fit, s->nfit, &p);
}

/* ---- the solver ---- */

/* The driver loop, with one more stopping rule than GSL's: the cost no
 * longer falls (by 1e-5 relative, twice in a row). A coefficient that
 * wants to be 0 walks its softplus coordinate towards -infinity with
 * ever smaller gains, which the step-size test never calls converged. */
static void iterate(kvsim__fid_solver_t *s, gsl_multifit_nlinear_workspace *w, int max_iter) {
  int info = 0, status = GSL_SUCCESS, flat = 0;
  double prev_cost = INFINITY;
  for (int it = 0; status == GSL_SUCCESS && it < max_iter; it++) {
    status = gsl_multifit_nlinear_iterate(w);
    if (status == GSL_ENOPROG)
      break; /* no step lowered the cost: at the optimum */
    if (status != GSL_SUCCESS)
      break;
    report_iter(s, (size_t)it + 1, w);
    const gsl_vector *fv = gsl_multifit_nlinear_residual(w);
    double cost;
    gsl_blas_ddot(fv, fv, &cost);
    flat = prev_cost - cost < 1e-5 * prev_cost ? flat + 1 : 0;
    prev_cost = cost;
    if (gsl_multifit_nlinear_test(1e-4, 1e-6, 0, &info, w) == GSL_SUCCESS || flat >= 2)
      break;
  }
}

/* Uncertainty of the coefficients: covariance of the transformed
 * coordinates from the Jacobian at the optimum, scaled by the residual
 * variance, mapped through the transform's derivative. */
static void stddevs(const kvsim__fid_solver_t *s, gsl_multifit_nlinear_workspace *w, gsl_matrix *cov,
                    double *sd) {
  size_t n = kvsim__fid_nres(s->c);
  const gsl_vector *fres = gsl_multifit_nlinear_residual(w);
  double ss;
  gsl_blas_ddot(fres, fres, &ss);
  double s2 = n > (size_t)s->nfit ? ss / (double)(n - (size_t)s->nfit) : NAN;
  if (gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov) != GSL_SUCCESS)
    return;
  for (int i = 0; i < s->nfit; i++) {
    double xi = gsl_vector_get(gsl_multifit_nlinear_position(w), (size_t)i);
    double d = (to_coef(s, s->fit[i], xi + 1e-4) - to_coef(s, s->fit[i], xi - 1e-4)) / 2e-4;
    sd[s->fit[i]] = fabs(d) * sqrt(s2 * gsl_matrix_get(cov, (size_t)i, (size_t)i));
  }
}

/* Runs the solver from the GPU's coefficients; the best ones into *best. */
static int solve(kvsim__fid_solver_t *s, kvsim_fid_calib_result_t *r, kvsim_gpu_perf_t *best,
                 kvsim_err *err) {
  gsl_multifit_nlinear_fdf fdf;
  memset(&fdf, 0, sizeof fdf);
  fdf.f = f_cb;
  fdf.df = df_cb;
  fdf.n = nres_fit(s);
  fdf.p = (size_t)s->nfit;
  fdf.params = s;
  gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
  gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, fdf.n, (size_t)s->nfit);
  gsl_vector *x0 = gsl_vector_alloc((size_t)s->nfit);
  gsl_matrix *cov = gsl_matrix_alloc((size_t)s->nfit, (size_t)s->nfit);
  int rc = KVSIM_OK;
  if (!w || !x0 || !cov) {
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    goto out;
  }
  for (int i = 0; i < s->nfit; i++) {
    int k = s->fit[i];
    double v = *kvsim_fidelity_coef(&s->c->gpu.perf, k);
    /* A free overhead that starts at (almost) zero sits where softplus is
     * flat: start it at half its scale instead, or the solver crawls. */
    if (!is_efficiency(k) && v < 0.5 * coef_scale[k])
      v = 0.5 * coef_scale[k];
    gsl_vector_set(x0, (size_t)i, to_x(s, k, v));
  }
  gsl_set_error_handler_off();
  if (gsl_multifit_nlinear_winit(x0, NULL, &fdf, w) == GSL_SUCCESS)
    iterate(s, w, s->opts->max_iter);
  if (s->failed) {
    rc = kvsim_err_set(err, s->err.code ? s->err.code : KVSIM_EINVAL, "a simulation failed during the fit: %s",
                       s->err.msg);
    goto out;
  }
  perf_at(s, gsl_multifit_nlinear_position(w), best);
  stddevs(s, w, cov, r->stddev);
  r->iterations = gsl_multifit_nlinear_niter(w);
out:
  gsl_multifit_nlinear_free(w);
  gsl_vector_free(x0);
  gsl_matrix_free(cov);
  return rc;
}

/* ---- the calibration ---- */

/* What data and which command: the reproducible provenance. */
static void provenance(const kvsim_fid_calib_t *c, kvsim_gpu_perf_t *best, const kvsim_fid_calib_summary_t *after) {
  char what[160] = "";
  if (c->nruns)
    snprintf(what, sizeof what, "%d per-request run%s", c->nruns, c->nruns == 1 ? "" : "s");
  if (c->nrows) {
    size_t l = strlen(what);
    snprintf(what + l, sizeof what - l, "%s%d silicon rows", l ? " + " : "", c->nrows);
  }
  snprintf(best->source, sizeof best->source,
           "kvsim calibrate (%s%s%s%s): median |err| TTFT %.1f%%, TPOT %.1f%%", what, c->filters[0] ? "; " : "",
           c->filters, "", after->ttft_med, after->tpot_med);
}

static void set_ceilings(kvsim__fid_solver_t *s) {
  for (int k = 0; k < KVSIM_FID_NCOEF; k++)
    s->eff_hi[k] = 1;
}

static int setup(kvsim__fid_solver_t *s, kvsim_fid_calib_t *c, const kvsim_fid_calib_opts_t *opts,
                 kvsim_fid_calib_result_t *r, kvsim_err *err) {
  memset(s, 0, sizeof *s);
  s->c = c;
  s->opts = opts;
  s->soft_l1 = !opts->linear;
  s->loss_scale = 0.1;
  if (opts->fit && opts->nfit > 0) {
    s->nfit = opts->nfit < KVSIM_FID_NCOEF ? opts->nfit : KVSIM_FID_NCOEF;
    memcpy(s->fit, opts->fit, (size_t)s->nfit * sizeof *s->fit);
  } else {
    kvsim__fid_default_fit(s);
  }
  r->nfit = s->nfit;
  for (int i = 0; i < s->nfit; i++) {
    r->fit[i] = s->fit[i];
    r->is_free[s->fit[i]] = true;
  }
  set_ceilings(s);
  s->frontend_cap_us = INFINITY;
  for (int i = 0; i < c->nrows; i++)
    if (c->rows[i].ttft_ms > 0 && 0.5e3 * c->rows[i].ttft_ms < s->frontend_cap_us)
      s->frontend_cap_us = 0.5e3 * c->rows[i].ttft_ms;
  size_t n = kvsim__fid_nres(c);
  if (n < (size_t)s->nfit)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%zu residuals for %d coefficients: not enough data for GPU '%s' (%d silicon "
                         "rows on other GPUs, %d skipped)",
                         n, s->nfit, c->gpu.name, c->rows_other_gpu, c->rows_skipped);
  r->nres = n;
  r->measured = s->meas = kvsim__calloc(n ? n : 1, sizeof *s->meas);
  r->simulated = s->sim = kvsim__calloc(n ? n : 1, sizeof *s->sim);
  if (!s->meas || !s->sim)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  return KVSIM_OK;
}

int kvsim_fidelity_calibrate(kvsim_fid_calib_t *c, const kvsim_fid_calib_opts_t *opts,
                             kvsim_fid_calib_result_t *r, kvsim_err *err) {
  memset(r, 0, sizeof *r);
  r->linear = opts->linear;
  kvsim__fid_solver_t s;
  int rc = setup(&s, c, opts, r, err);
  if (rc < 0)
    return rc;
  /* Before: the GPU's current coefficients. */
  if ((rc = kvsim__fid_evaluate(&s, &c->gpu.perf, NULL)) < 0)
    return kvsim_err_set(err, s.err.code ? s.err.code : rc, "%s", s.err.msg);
  kvsim__fid_summarize(&s, &r->before);
  kvsim_gpu_perf_t best;
  if ((rc = solve(&s, r, &best, err)) < 0)
    return rc;
  if ((rc = kvsim__fid_evaluate(&s, &best, NULL)) < 0)
    return kvsim_err_set(err, s.err.code ? s.err.code : rc, "%s", s.err.msg);
  kvsim__fid_summarize(&s, &r->after);
  provenance(c, &best, &r->after);
  r->fitted = best;
  r->simulations = s.evals;
  return KVSIM_OK;
}

void kvsim_fidelity_calib_result_fini(kvsim_fid_calib_result_t *r) {
  kvsim__free(r->measured);
  kvsim__free(r->simulated);
  memset(r, 0, sizeof *r);
}
