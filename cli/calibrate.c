/* kvsim calibrate: fits the step-time model's coefficients of one GPU
 * (gpu.h kvsim_gpu_perf_t: mfu, mbu, attn_efficiency, step_overhead_us,
 * per_layer_us, per_seq_us, per_token_us, and frontend_us for client-side
 * latencies) to measured data by nonlinear least squares
 * (gsl_multifit_nlinear, trust region / Levenberg-Marquardt), and writes
 * them, with the residuals' spread (ttft/tpot_rel_sigma) and where they
 * came from, into a GPU JSON file.
 *
 * Data: per-request runs (--measured FILE --scenario SCENARIO.json, in
 * pairs: the scenario replays the file's requests) and fixed-concurrency
 * rows (--silicon FILE [--filter K=V]...; each row reproduced by a closed
 * loop, validate_silicon.c). Only data of the GPU being calibrated is used.
 *
 * The model is the whole simulation, not a formula: every evaluation runs
 * the scenarios (a few ms to tens of ms each), so the residuals see the
 * scheduler, chunked prefill and the KV pool exactly as `kvsim run` does.
 * Residuals are log ratios ln(simulated / measured) of, per run, the mean,
 * p50, p90 and p99 of TTFT, TPOT and E2E, and per silicon row the mean TTFT and
 * mean TPOT: relative errors, symmetric, so that a 60 s TTFT and a 10 ms
 * TPOT weigh alike. By default a soft-L1 loss (--loss soft_l1, scale 10 %)
 * keeps a few rows the model cannot reproduce (e.g. rows whose KV cache
 * runs full, where the memory plan, not the step time, sets the error)
 * from dominating the fit; --loss linear is plain least squares.
 *
 * The Jacobian is by central differences with a fixed step in the
 * transformed coordinates (below): GSL's default relative step (~1e-8 x)
 * is far below the resolution at which a discrete-event run responds
 * (a step boundary moves), so it would return zero columns.
 *
 * Coordinates: efficiencies as their logarithm, held in [0.05, 1] (with a
 * penalty residual beyond, see nres_fit); the overheads in [0, inf)
 * through softplus. The solver cannot leave the physical range. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "args.h"
#include "calibrate.h"
#include "commands.h"
#include "core/catalog.h"
#include "core/util.h"
#include "kvsim/model.h"
#include "kvsim/report.h"
#include "validate_common.h"

/* ---- coefficients and their coordinates ---- */

enum { P_MFU, P_MBU, P_STEP, P_SEQ, P_TOKEN, P_LAYER, P_ATTN, P_FRONT, P_MOE, NPARAM };

static const struct {
  const char *name;
  bool efficiency; /* ln(efficiency), held in [EFF_LO, 1]; else softplus x scale */
  double scale;    /* softplus scale (us) */
} params[NPARAM] = {
    {"mfu", true, 0},           {"mbu", true, 0},           {"step_overhead_us", false, 1000},
    {"per_seq_us", false, 10},  {"per_token_us", false, 1}, {"per_layer_us", false, 10},
    {"attn_efficiency", true, 0}, {"frontend_us", false, 10000}, {"moe_efficiency", true, 0},
};

/* Lowest efficiency the fit may reach: below 5 % of peak a GPU is not
 * being used, and a fit that goes there is fitting something else. */
#define EFF_LO 0.05

static double *coef_field(kvsim_gpu_perf_t *p, int k) {
  switch (k) {
  case P_MFU:
    return &p->mfu;
  case P_MBU:
    return &p->mbu;
  case P_STEP:
    return &p->step_overhead_us;
  case P_SEQ:
    return &p->per_seq_us;
  case P_TOKEN:
    return &p->per_token_us;
  case P_LAYER:
    return &p->per_layer_us;
  case P_FRONT:
    return &p->frontend_us;
  case P_MOE:
    return &p->moe_efficiency;
  default:
    return &p->attn_efficiency;
  }
}

static double to_coef(int k, double x) {
  if (params[k].efficiency) {
    /* ln(efficiency): a step's time is inversely proportional to an
     * efficiency, so the log-ratio residuals are close to linear in x.
     * Beyond the physical range the value is held at the bound. */
    double e = exp(x);
    return e < EFF_LO ? EFF_LO : e > 1 ? 1 : e;
  }
  /* softplus, written to stay finite for large x */
  double sp = x > 30 ? x : log1p(exp(x));
  return params[k].scale * sp;
}

static double to_x(int k, double c) {
  if (params[k].efficiency)
    return log(c < EFF_LO ? EFF_LO : c > 1 ? 1 : c);
  double v = c / params[k].scale;
  if (v < 1e-4)
    v = 1e-4;
  return v > 30 ? v : log(expm1(v));
}

/* ---- the data ---- */

typedef struct run_item {
  fid_measured m;
  kvsim_scenario_t sc;
  const char *file, *scenario;
} run_item;

/* Per run: mean, p50, p90 and p99 of TTFT, TPOT, E2E (the shape of each
 * distribution, not just its level). */
#define RUN_RES 12
static const char *const run_res_names[RUN_RES] = {"ttft_mean", "ttft_p50", "ttft_p90", "ttft_p99",
                                                   "tpot_mean", "tpot_p50", "tpot_p90", "tpot_p99",
                                                   "e2e_mean",  "e2e_p50",  "e2e_p90",  "e2e_p99"};

typedef struct calib {
  kvsim_gpu_t gpu;           /* the GPU being calibrated (its perf = the start) */
  fid_gpu_override ov;       /* the same, for silicon rows */
  run_item *runs;
  int nruns;
  fid_sil_row *rows;         /* silicon rows on this GPU */
  int nrows;
  double range_ratio;
  int fit[NPARAM];           /* indices of the fitted coefficients */
  int nfit;
  bool soft_l1;
  double loss_scale;
  int evals;
  bool verbose;
  kvsim_err err;
  int failed;                /* a simulation failed during the fit */
  /* Last evaluation's raw values, for the report. */
  double *meas, *sim;        /* per residual */
} calib_t;

static size_t nres(const calib_t *c) { return (size_t)c->nruns * RUN_RES + (size_t)c->nrows * 2; }

/* The solver's residuals: the data's, then one bound penalty per fitted
 * coefficient (0 inside the physical range). The simulation holds an
 * efficiency at its bound; without the penalty that region would be flat
 * and a step that overshoots into it could never come back. */
static size_t nres_fit(const calib_t *c) { return nres(c) + (size_t)c->nfit; }

#define BOUND_WEIGHT 10.0

static void perf_at(const calib_t *c, const gsl_vector *x, kvsim_gpu_perf_t *p) {
  *p = c->gpu.perf;
  for (int i = 0; i < c->nfit; i++)
    *coef_field(p, c->fit[i]) = to_coef(c->fit[i], gsl_vector_get(x, (size_t)i));
}

static double log_ratio(double sim, double meas) {
  /* A run that produced nothing is maximally wrong, not undefined. */
  if (!(sim > 0) || !(meas > 0))
    return 5;
  return log(sim / meas);
}

static double robust(const calib_t *c, double r) {
  if (!c->soft_l1)
    return r;
  /* soft-L1: rho(r) = 2 s^2 (sqrt(1 + (r/s)^2) - 1); as a residual,
   * sign(r) sqrt(rho), which is r for |r| << s and grows like sqrt(|r|). */
  double s = c->loss_scale, z = r / s;
  double rho = 2 * s * s * (sqrt(1 + z * z) - 1);
  return (r < 0 ? -1 : 1) * sqrt(rho);
}

/* Simulates everything at perf p; fills meas/sim (raw values) and raw log
 * ratios into out (may be NULL). */
static int evaluate(calib_t *c, const kvsim_gpu_perf_t *p, gsl_vector *out) {
  size_t k = 0;
  c->evals++;
  for (int i = 0; i < c->nruns; i++) {
    run_item *ri = &c->runs[i];
    fid_apply_perf(&ri->sc, p);
    fid_measured_cmp cmp;
    kvsim_err e = {0};
    int rc = fid_measured_compare(&ri->m, &ri->sc, &cmp, &e);
    if (rc < 0) {
      c->err = e;
      c->failed = 1;
      return rc;
    }
    double mv[RUN_RES], sv[RUN_RES];
    for (int q = 0; q < 3; q++) {
      const fid_stat *a = &cmp.meas[q], *b = &cmp.sim[q];
      mv[4 * q] = a->mean, mv[4 * q + 1] = a->p50, mv[4 * q + 2] = a->p90, mv[4 * q + 3] = a->p99;
      sv[4 * q] = b->mean, sv[4 * q + 1] = b->p50, sv[4 * q + 2] = b->p90, sv[4 * q + 3] = b->p99;
    }
    for (int j = 0; j < RUN_RES; j++, k++) {
      c->meas[k] = mv[j];
      c->sim[k] = sv[j];
      if (out)
        gsl_vector_set(out, k, robust(c, log_ratio(sv[j], mv[j])));
    }
  }
  for (int i = 0; i < c->nrows; i++) {
    const fid_sil_row *r = &c->rows[i];
    double t = 0, q = 0;
    kvsim_err e = {0};
    int rc = fid_sil_simulate(r, &c->ov, 1, c->range_ratio, p, &t, &q, &e);
    if (rc < 0) {
      /* A row whose plan does not fit at these settings (it cannot
       * depend on the step time) was filtered out before the fit. */
      c->err = e;
      c->failed = 1;
      return rc;
    }
    c->meas[k] = r->ttft_ms;
    c->sim[k] = t;
    if (out)
      gsl_vector_set(out, k, robust(c, log_ratio(t, r->ttft_ms)));
    k++;
    c->meas[k] = r->tpot_ms;
    c->sim[k] = q;
    if (out)
      gsl_vector_set(out, k, robust(c, log_ratio(q, r->tpot_ms)));
    k++;
  }
  return KVSIM_OK;
}

static int f_cb(const gsl_vector *x, void *vc, gsl_vector *f) {
  calib_t *c = vc;
  kvsim_gpu_perf_t p;
  perf_at(c, x, &p);
  if (evaluate(c, &p, f) < 0)
    return GSL_EFAILED;
  size_t k = nres(c);
  for (int i = 0; i < c->nfit; i++, k++) {
    double xi = gsl_vector_get(x, (size_t)i), pen = 0;
    if (params[c->fit[i]].efficiency)
      pen = (xi > 0 ? xi : 0) + (xi < log(EFF_LO) ? log(EFF_LO) - xi : 0);
    gsl_vector_set(f, k, BOUND_WEIGHT * pen);
  }
  return GSL_SUCCESS;
}

/* Central differences in the transformed coordinates, a 3 % change of an
 * efficiency each way: the run responds to a coefficient in small steps
 * (a request crosses a step boundary), which a one-sided difference of
 * the same size mistakes for slope more often; see the header. */
#define FD_STEP 0.03

static int df_cb(const gsl_vector *x, void *vc, gsl_matrix *J) {
  calib_t *c = vc;
  size_t n = nres_fit(c);
  gsl_vector *f0 = gsl_vector_alloc(n), *f1 = gsl_vector_alloc(n), *xx = gsl_vector_alloc(x->size);
  int rc = GSL_SUCCESS;
  if (!f0 || !f1 || !xx) {
    rc = GSL_ENOMEM;
    goto out;
  }
  for (size_t j = 0; j < x->size; j++) {
    gsl_vector_memcpy(xx, x);
    gsl_vector_set(xx, j, gsl_vector_get(x, j) - FD_STEP);
    if ((rc = f_cb(xx, c, f0)) != GSL_SUCCESS)
      goto out;
    gsl_vector_set(xx, j, gsl_vector_get(x, j) + FD_STEP);
    if ((rc = f_cb(xx, c, f1)) != GSL_SUCCESS)
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

static void iter_cb(const size_t iter, void *vc, const gsl_multifit_nlinear_workspace *w) {
  calib_t *c = vc;
  if (!c->verbose)
    return;
  const gsl_vector *f = gsl_multifit_nlinear_residual(w), *x = gsl_multifit_nlinear_position(w);
  double ss;
  gsl_blas_ddot(f, f, &ss);
  fprintf(stderr, "calibrate: iteration %zu, cost %.5g:", iter, 0.5 * ss);
  for (int i = 0; i < c->nfit; i++)
    fprintf(stderr, " %s=%.4g", params[c->fit[i]].name, to_coef(c->fit[i], gsl_vector_get(x, (size_t)i)));
  fputc('\n', stderr);
}

/* ---- report ---- */

typedef struct summary {
  double ttft_med, tpot_med, e2e_med;  /* median |relative error| %, NAN if none */
  double ttft_sigma, tpot_sigma;       /* spread of the relative errors (fraction), see summarize */
  int n_ttft, n_tpot, n_e2e;
} summary_t;

/* Kind of residual k: 0 TTFT, 1 TPOT, 2 E2E. */
static int res_kind(const calib_t *c, size_t k) {
  size_t runs = (size_t)c->nruns * RUN_RES;
  if (k < runs) {
    return (int)(k % RUN_RES) / 4;
  }
  return (int)((k - runs) % 2);
}

static void summarize(const calib_t *c, summary_t *s) {
  size_t n = nres(c);
  double *e[3];
  int m[3] = {0, 0, 0};
  for (int i = 0; i < 3; i++)
    e[i] = malloc((n + 1) * sizeof(double));
  for (size_t k = 0; k < n; k++) {
    int kind = res_kind(c, k);
    double rel = c->meas[k] > 0 ? c->sim[k] / c->meas[k] - 1 : NAN;
    if (!isfinite(rel) || !e[kind])
      continue;
    e[kind][m[kind]++] = 100 * rel;
  }
  s->n_ttft = m[0];
  s->n_tpot = m[1];
  s->n_e2e = m[2];
  s->ttft_med = e[0] ? fid_median_abs(e[0], m[0]) : NAN;
  s->tpot_med = e[1] ? fid_median_abs(e[1], m[1]) : NAN;
  s->e2e_med = e[2] ? fid_median_abs(e[2], m[2]) : NAN;
  /* sigma: the spread of the relative errors around a perfect prediction
   * (bias included, so the band covers a systematic offset too), robustly:
   * 1.4826 x the median absolute relative error, which is one standard
   * deviation for normal errors and is not dominated by the few rows the
   * model cannot reproduce (the root mean square would be). */
  s->ttft_sigma = m[0] ? 1.4826 * s->ttft_med / 100 : 0;
  s->tpot_sigma = m[1] ? 1.4826 * s->tpot_med / 100 : 0;
  for (int i = 0; i < 3; i++)
    free(e[i]);
}

static void print_residuals(const calib_t *c) {
  size_t k = 0;
  for (int i = 0; i < c->nruns; i++) {
    printf("run %s (%s)\n", c->runs[i].file, c->runs[i].sc.name);
    for (int j = 0; j < RUN_RES; j++, k++) {
      double scale = j / 4 == 1 ? 1e3 : 1;
      printf("  %-10s measured %10.3f %s  simulated %10.3f %s  error %+6.1f%%\n", run_res_names[j],
             c->meas[k] * scale, scale > 1 ? "ms" : "s ", c->sim[k] * scale, scale > 1 ? "ms" : "s ",
             100 * (c->sim[k] / c->meas[k] - 1));
    }
  }
  if (c->nrows) {
    printf("silicon rows (%d):\n", c->nrows);
    printf("  %5s %-13s %-5s %3s %5s %5s %4s | %9s %9s %7s | %8s %8s %7s\n", "line", "model", "prec",
           "tp", "isl", "osl", "conc", "TTFT ms", "sim", "err", "TPOT ms", "sim", "err");
  }
  for (int i = 0; i < c->nrows; i++, k += 2) {
    const fid_sil_row *r = &c->rows[i];
    printf("  %5d %-13s %-5s %3lld %5lld %5lld %4lld | %9.1f %9.1f %+6.1f%% | %8.2f %8.2f %+6.1f%%\n", r->line,
           r->model, r->precision[0] ? r->precision : "bf16", (long long)r->tp, (long long)r->isl,
           (long long)r->osl, (long long)r->batch, c->meas[k], c->sim[k], 100 * (c->sim[k] / c->meas[k] - 1),
           c->meas[k + 1], c->sim[k + 1], 100 * (c->sim[k + 1] / c->meas[k + 1] - 1));
  }
}

static int parse_fit(const char *list, calib_t *c) {
  c->nfit = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int k = -1;
    for (int i = 0; i < NPARAM; i++)
      if (!strcmp(t, params[i].name))
        k = i;
    if (k < 0)
      return cli_fail("calibrate",
                      "--fit: unknown coefficient '%s' (expected mfu, mbu, step_overhead_us, per_seq_us, "
                      "per_token_us, per_layer_us, attn_efficiency, frontend_us, moe_efficiency)",
                      t);
    for (int i = 0; i < c->nfit; i++)
      if (c->fit[i] == k)
        return cli_fail("calibrate", "--fit: '%s' given twice", t);
    c->fit[c->nfit++] = k;
  }
  if (c->nfit == 0)
    return cli_fail("calibrate", "--fit: empty list");
  return 0;
}

static void free_calib(calib_t *c) {
  for (int i = 0; i < c->nruns; i++) {
    fid_measured_fini(&c->runs[i].m);
    kvsim_scenario_fini(&c->runs[i].sc);
  }
  free(c->runs);
  free(c->rows);
  free(c->meas);
  free(c->sim);
}

int cmd_calibrate(int argc, char **argv) {
  const char *gpu_arg = NULL, *silicon = NULL, *out = NULL, *fit = NULL, *loss = "soft_l1";
  cli_list measured = {0}, scenarios = {0}, filters = {0};
  bool json = false, verbose = false, range_seen = false;
  double range_ratio = FID_SIL_RANGE_RATIO;
  int64_t max_iter = 30;
  const cli_arg args[] = {
      {"--gpu", ARG_STR, &gpu_arg, "GPU to calibrate: catalog name or GPU JSON file (its perf is the start)", NULL},
      {"--measured", ARG_LIST, &measured,
       "measured per-request file (as kvsim validate --measured); repeatable, paired with --scenario", NULL},
      {"--scenario", ARG_LIST, &scenarios, "the scenario that replays the n-th --measured file", NULL},
      {"--silicon", ARG_STR, &silicon, "fixed-concurrency table (AIConfigurator silicon CSV)", NULL},
      {"--filter", ARG_LIST, &filters, "with --silicon: keep rows with KEY=VALUE (as kvsim validate)", NULL},
      {"--range-ratio", ARG_NUM, &range_ratio, "with --silicon: length spread (as kvsim validate; default 0.8)",
       &range_seen},
      {"--fit", ARG_STR, &fit,
       "coefficients to fit, comma-separated (default: mfu,mbu,per_seq_us,per_token_us,per_layer_us,"
       "attn_efficiency, plus step_overhead_us when the data has models of different depths and frontend_us "
       "when it has client-side latencies); the others keep the GPU's values",
       NULL},
      {"--loss", ARG_STR, &loss, "soft_l1 (default, robust to a few rows the model cannot reproduce) or linear",
       NULL},
      {"--max-iter", ARG_INT, &max_iter, "iterations of the solver (default 30)", NULL},
      {"--out", ARG_STR, &out, "write the GPU JSON with the fitted \"perf\" object here", NULL},
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {"--verbose", ARG_FLAG, &verbose, "print each iteration to stderr", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("calibrate",
                     "--gpu NAME|FILE [--measured FILE --scenario SCENARIO.json]... [--silicon FILE "
                     "[--filter K=V]...] [--fit LIST] [--out FILE] [--json]",
                     args, argc, argv, 2, pos, 0, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (!gpu_arg)
    return cli_fail("calibrate", "--gpu is required (see kvsim calibrate --help)");
  if (measured.n != scenarios.n)
    return cli_fail("calibrate", "%d --measured files but %d --scenario files: give them in pairs", measured.n,
                    scenarios.n);
  if (!measured.n && !silicon)
    return cli_fail("calibrate", "no data: give --measured FILE --scenario S and/or --silicon FILE");
  if ((filters.n || range_seen) && !silicon)
    return cli_fail("calibrate", "--filter and --range-ratio go with --silicon");
  if (!(range_ratio > 0 && range_ratio <= 1))
    return cli_fail("calibrate", "--range-ratio: %g must be in (0, 1]", range_ratio);
  if (max_iter < 1 || max_iter > 1000)
    return cli_fail("calibrate", "--max-iter: %lld must be in [1, 1000]", (long long)max_iter);

  calib_t c;
  memset(&c, 0, sizeof c);
  c.range_ratio = range_ratio;
  c.verbose = verbose;
  c.loss_scale = 0.1;
  if (!strcmp(loss, "soft_l1"))
    c.soft_l1 = true;
  else if (strcmp(loss, "linear"))
    return cli_fail("calibrate", "--loss: '%s' (expected soft_l1 or linear)", loss);
  if (fit && (rc = parse_fit(fit, &c)) != 0)
    return rc;
  kvsim_err err = {0};
  if (kvsim_gpu_load(gpu_arg, &c.gpu, &err) < 0)
    return cli_fail("calibrate", "--gpu: %s", err.msg);
  c.ov.gpu = c.gpu;
  snprintf(c.ov.path, sizeof c.ov.path, "%s", gpu_arg);

  c.runs = calloc((size_t)(measured.n ? measured.n : 1), sizeof *c.runs);
  if (!c.runs)
    return cli_fail("calibrate", "out of memory");
  for (int i = 0; i < measured.n; i++) {
    run_item *ri = &c.runs[i];
    ri->file = measured.items[i];
    ri->scenario = scenarios.items[i];
    if (fid_measured_load(ri->file, NULL, &ri->m, &err) < 0) {
      fid_measured_fini(&ri->m);
      free_calib(&c);
      return cli_fail("calibrate", "--measured: %s", err.msg);
    }
    c.nruns++;
    if (kvsim_scenario_load(ri->scenario, NULL, 0, &ri->sc, &err) < 0) {
      c.nruns--;
      fid_measured_fini(&ri->m);
      free_calib(&c);
      return cli_fail("calibrate", "%s", err.msg);
    }
    if (strcmp(ri->sc.gpu.name, c.gpu.name)) {
      rc = cli_fail("calibrate", "%s runs on GPU '%s', not '%s' (coefficients are per GPU)", ri->scenario,
                    ri->sc.gpu.name, c.gpu.name);
      free_calib(&c);
      return rc;
    }
  }
  int skipped_rows = 0, other_gpu = 0, unfit = 0;
  if (silicon) {
    fid_sil_table t;
    if (fid_sil_read(silicon, filters.items, filters.n, &t, &err) < 0) {
      free_calib(&c);
      return cli_fail("calibrate", "--silicon: %s", err.msg);
    }
    c.rows = calloc((size_t)(t.n ? t.n : 1), sizeof *c.rows);
    if (!c.rows) {
      fid_sil_free(&t);
      free_calib(&c);
      return cli_fail("calibrate", "out of memory");
    }
    for (int i = 0; i < t.n; i++) {
      fid_sil_row *r = &t.rows[i];
      if (r->skipped) {
        skipped_rows++;
        continue;
      }
      if (strcmp(r->gpu, c.gpu.name)) {
        other_gpu++;
        continue;
      }
      /* A row kvsim cannot run at all (its plan does not fit) says nothing
       * about the step time: it is left out and counted. */
      double a, b;
      kvsim_err e = {0};
      if (fid_sil_simulate(r, &c.ov, 1, c.range_ratio, NULL, &a, &b, &e) < 0) {
        unfit++;
        continue;
      }
      c.rows[c.nrows++] = *r;
    }
    fid_sil_free(&t);
  }
  if (!fit) {
    /* What the data can tell apart. A fixed per-step cost and a per-layer
     * cost are the same thing on one model: with a single depth only the
     * per-layer term is fitted (it carries over to deeper or shallower
     * models; the fixed part keeps the GPU's value). The client-side
     * latency only shows in client-measured TTFTs. */
    int depths[64], nd = 0;
    bool client = c.nrows > 0;
    for (int i = 0; i < c.nruns + c.nrows; i++) {
      int L;
      if (i < c.nruns) {
        L = c.runs[i].sc.model.num_layers;
        client |= c.runs[i].m.fmt == FID_FMT_VLLM_BENCH;
      } else {
        kvsim_model_t mm;
        kvsim_err e2 = {0};
        if (kvsim_model_load(c.rows[i - c.nruns].model, &mm, &e2) < 0)
          continue;
        L = mm.num_layers;
      }
      bool seen = false;
      for (int j = 0; j < nd; j++)
        seen |= depths[j] == L;
      if (!seen && nd < 64)
        depths[nd++] = L;
    }
    static const int base[] = {P_MFU, P_MBU, P_SEQ, P_TOKEN, P_LAYER, P_ATTN};
    for (size_t i = 0; i < sizeof base / sizeof *base; i++)
      c.fit[c.nfit++] = base[i];
    if (nd > 1)
      c.fit[c.nfit++] = P_STEP;
    if (client)
      c.fit[c.nfit++] = P_FRONT;
  }
  size_t n = nres(&c);
  if (n < (size_t)c.nfit) {
    rc = cli_fail("calibrate", "%zu residuals for %d coefficients: not enough data for GPU '%s' (%d silicon "
                  "rows on other GPUs, %d skipped)",
                  n, c.nfit, c.gpu.name, other_gpu, skipped_rows);
    free_calib(&c);
    return rc;
  }
  c.meas = calloc(n, sizeof *c.meas);
  c.sim = calloc(n, sizeof *c.sim);
  if (!c.meas || !c.sim) {
    free_calib(&c);
    return cli_fail("calibrate", "out of memory");
  }

  /* Before: the GPU's current coefficients. */
  summary_t before, after;
  if (evaluate(&c, &c.gpu.perf, NULL) < 0) {
    rc = cli_fail("calibrate", "%s", c.err.msg);
    free_calib(&c);
    return rc;
  }
  summarize(&c, &before);

  gsl_multifit_nlinear_fdf fdf;
  memset(&fdf, 0, sizeof fdf);
  fdf.f = f_cb;
  fdf.df = df_cb;
  fdf.n = nres_fit(&c);
  fdf.p = (size_t)c.nfit;
  fdf.params = &c;
  gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
  gsl_multifit_nlinear_workspace *w =
      gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, fdf.n, (size_t)c.nfit);
  gsl_vector *x0 = gsl_vector_alloc((size_t)c.nfit);
  gsl_matrix *cov = gsl_matrix_alloc((size_t)c.nfit, (size_t)c.nfit);
  if (!w || !x0 || !cov) {
    gsl_multifit_nlinear_free(w);
    gsl_vector_free(x0);
    gsl_matrix_free(cov);
    free_calib(&c);
    return cli_fail("calibrate", "out of memory");
  }
  for (int i = 0; i < c.nfit; i++) {
    int k = c.fit[i];
    double v = *coef_field(&c.gpu.perf, k);
    /* A free overhead that starts at (almost) zero sits where softplus is
     * flat: start it at half its scale instead, or the solver crawls. */
    if (!params[k].efficiency && v < 0.5 * params[k].scale)
      v = 0.5 * params[k].scale;
    gsl_vector_set(x0, (size_t)i, to_x(k, v));
  }
  gsl_set_error_handler_off();
  int info = 0;
  int status = gsl_multifit_nlinear_winit(x0, NULL, &fdf, w);
  /* The driver loop, with one more stopping rule than GSL's: the cost no
   * longer falls (by 1e-5 relative, twice in a row). A coefficient that
   * wants to be 0 walks its softplus coordinate towards -infinity with
   * ever smaller gains, which the step-size test never calls converged. */
  double prev_cost = INFINITY;
  int flat = 0;
  for (int it = 0; status == GSL_SUCCESS && it < (int)max_iter; it++) {
    status = gsl_multifit_nlinear_iterate(w);
    if (status == GSL_ENOPROG) {
      status = GSL_SUCCESS; /* no step lowered the cost: at the optimum */
      break;
    }
    if (status != GSL_SUCCESS)
      break;
    iter_cb((size_t)it + 1, &c, w);
    const gsl_vector *fv = gsl_multifit_nlinear_residual(w);
    double cost;
    gsl_blas_ddot(fv, fv, &cost);
    flat = prev_cost - cost < 1e-5 * prev_cost ? flat + 1 : 0;
    prev_cost = cost;
    if (gsl_multifit_nlinear_test(1e-4, 1e-6, 0, &info, w) == GSL_SUCCESS || flat >= 2)
      break;
  }
  if (c.failed) {
    rc = cli_fail("calibrate", "a simulation failed during the fit: %s", c.err.msg);
    gsl_multifit_nlinear_free(w);
    gsl_vector_free(x0);
    gsl_matrix_free(cov);
    free_calib(&c);
    return rc;
  }
  kvsim_gpu_perf_t best;
  perf_at(&c, gsl_multifit_nlinear_position(w), &best);
  /* Uncertainty of the coefficients: covariance of the transformed
   * coordinates from the Jacobian at the optimum, scaled by the residual
   * variance, mapped through the transform's derivative. */
  double sd[NPARAM] = {0};
  const gsl_vector *fres = gsl_multifit_nlinear_residual(w);
  double ss;
  gsl_blas_ddot(fres, fres, &ss);
  double s2 = n > (size_t)c.nfit ? ss / (double)(n - (size_t)c.nfit) : NAN;
  if (gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov) == GSL_SUCCESS) {
    for (int i = 0; i < c.nfit; i++) {
      double xi = gsl_vector_get(gsl_multifit_nlinear_position(w), (size_t)i);
      double d = (to_coef(c.fit[i], xi + 1e-4) - to_coef(c.fit[i], xi - 1e-4)) / 2e-4;
      sd[c.fit[i]] = fabs(d) * sqrt(s2 * gsl_matrix_get(cov, (size_t)i, (size_t)i));
    }
  }
  size_t iters = gsl_multifit_nlinear_niter(w);
  gsl_multifit_nlinear_free(w);
  gsl_vector_free(x0);
  gsl_matrix_free(cov);

  if (evaluate(&c, &best, NULL) < 0) {
    rc = cli_fail("calibrate", "%s", c.err.msg);
    free_calib(&c);
    return rc;
  }
  summarize(&c, &after);
  best.ttft_rel_sigma = after.ttft_sigma;
  best.tpot_rel_sigma = after.tpot_sigma;
  best.calibrated = true;
  {
    /* What data and which command: the reproducible provenance. */
    char what[160] = "";
    if (c.nruns)
      snprintf(what, sizeof what, "%d per-request run%s", c.nruns, c.nruns == 1 ? "" : "s");
    if (c.nrows) {
      size_t l = strlen(what);
      snprintf(what + l, sizeof what - l, "%s%d silicon rows", l ? " + " : "", c.nrows);
    }
    char filt[96] = "";
    for (int i = 0; i < filters.n; i++) {
      size_t l = strlen(filt);
      snprintf(filt + l, sizeof filt - l, "%s%s", l ? "," : "", filters.items[i]);
    }
    snprintf(best.source, sizeof best.source,
             "kvsim calibrate (%s%s%s%s): median |err| TTFT %.1f%%, TPOT %.1f%%", what, filt[0] ? "; " : "",
             filt, c.nruns ? "; see scripts/calibrate.sh" : "", after.ttft_med, after.tpot_med);
  }

  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "gpu", c.gpu.name);
    cJSON_AddNumberToObject(o, "runs", c.nruns);
    cJSON_AddNumberToObject(o, "silicon_rows", c.nrows);
    cJSON_AddNumberToObject(o, "silicon_rows_other_gpu", other_gpu);
    cJSON_AddNumberToObject(o, "silicon_rows_skipped", skipped_rows);
    cJSON_AddNumberToObject(o, "silicon_rows_not_fitting", unfit);
    cJSON_AddNumberToObject(o, "iterations", (double)iters);
    cJSON_AddNumberToObject(o, "simulations", c.evals);
    cJSON_AddStringToObject(o, "loss", c.soft_l1 ? "soft_l1" : "linear");
    cJSON *co = cJSON_AddObjectToObject(o, "coefficients");
    for (int i = 0; i < NPARAM; i++) {
      cJSON *e = cJSON_AddObjectToObject(co, params[i].name);
      cJSON_AddNumberToObject(e, "start", *coef_field(&c.gpu.perf, i));
      cJSON_AddNumberToObject(e, "fitted", *coef_field(&best, i));
      bool fitted = false;
      for (int j = 0; j < c.nfit; j++)
        fitted |= c.fit[j] == i;
      cJSON_AddBoolToObject(e, "free", fitted);
      if (fitted && isfinite(sd[i]))
        cJSON_AddNumberToObject(e, "stddev", sd[i]);
    }
    cJSON *b = cJSON_AddObjectToObject(o, "before"), *a = cJSON_AddObjectToObject(o, "after");
    summary_t *ss2[2] = {&before, &after};
    cJSON *os[2] = {b, a};
    for (int i = 0; i < 2; i++) {
      cJSON *m = cJSON_AddObjectToObject(os[i], "median_abs_error_pct");
      if (ss2[i]->n_ttft)
        cJSON_AddNumberToObject(m, "ttft", ss2[i]->ttft_med);
      if (ss2[i]->n_tpot)
        cJSON_AddNumberToObject(m, "tpot", ss2[i]->tpot_med);
      if (ss2[i]->n_e2e)
        cJSON_AddNumberToObject(m, "e2e", ss2[i]->e2e_med);
    }
    cJSON_AddNumberToObject(o, "ttft_rel_sigma", best.ttft_rel_sigma);
    cJSON_AddNumberToObject(o, "tpot_rel_sigma", best.tpot_rel_sigma);
    cJSON *res = cJSON_AddArrayToObject(o, "residuals");
    size_t k = 0;
    for (int i = 0; i < c.nruns; i++)
      for (int j = 0; j < RUN_RES; j++, k++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "run", c.runs[i].file);
        cJSON_AddStringToObject(e, "metric", run_res_names[j]);
        cJSON_AddNumberToObject(e, "measured", c.meas[k]);
        cJSON_AddNumberToObject(e, "simulated", c.sim[k]);
        cJSON_AddNumberToObject(e, "error_pct", 100 * (c.sim[k] / c.meas[k] - 1));
        cJSON_AddItemToArray(res, e);
      }
    for (int i = 0; i < c.nrows; i++)
      for (int j = 0; j < 2; j++, k++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "row", c.rows[i].id);
        cJSON_AddStringToObject(e, "metric", j ? "tpot_ms" : "ttft_ms");
        cJSON_AddNumberToObject(e, "measured", c.meas[k]);
        cJSON_AddNumberToObject(e, "simulated", c.sim[k]);
        cJSON_AddNumberToObject(e, "error_pct", 100 * (c.sim[k] / c.meas[k] - 1));
        cJSON_AddItemToArray(res, e);
      }
    char *s = cJSON_Print(o);
    puts(s);
    free(s);
    cJSON_Delete(o);
  } else {
    print_residuals(&c);
    printf("\n%s: %d run%s, %d silicon rows (%d on other GPUs, %d skipped, %d whose plan does not fit); "
           "%zu iterations, %d simulations of the data set\n",
           c.gpu.name, c.nruns, c.nruns == 1 ? "" : "s", c.nrows, other_gpu, skipped_rows, unfit, iters, c.evals);
    printf("%-18s %12s %12s %10s\n", "coefficient", "start", "fitted", "+/- 1 sd");
    for (int i = 0; i < NPARAM; i++) {
      bool fitted = false;
      for (int j = 0; j < c.nfit; j++)
        fitted |= c.fit[j] == i;
      char sdb[32] = "(fixed)";
      if (fitted)
        snprintf(sdb, sizeof sdb, "%.3g", sd[i]);
      printf("%-18s %12.4g %12.4g %10s\n", params[i].name, *coef_field(&c.gpu.perf, i), *coef_field(&best, i),
             sdb);
    }
    printf("median |error|  before: TTFT %.1f%%, TPOT %.1f%%   after: TTFT %.1f%%, TPOT %.1f%%\n",
           before.ttft_med, before.tpot_med, after.ttft_med, after.tpot_med);
    printf("residual spread (1.4826 x median |relative error|): TTFT %.3f, TPOT %.3f\n", best.ttft_rel_sigma,
           best.tpot_rel_sigma);
  }
  if (out) {
    if (calib_write_gpu_json(c.gpu.name, gpu_arg, &best, out, &err) < 0) {
      free_calib(&c);
      return cli_fail("calibrate", "--out: %s", err.msg);
    }
    if (!json)
      printf("wrote %s\n", out);
  }
  free_calib(&c);
  return 0;
}
