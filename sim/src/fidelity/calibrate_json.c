/* A calibration as `kvsim calibrate --json` prints it (kvsim/fidelity.h). */
#include <math.h>

#include <cJSON.h>

#include "fidelity/fid.h"
#include "kvsim/fidelity.h"

static void add_coefficients(cJSON *o, const kvsim_fid_calib_t *c, const kvsim_fid_calib_result_t *r) {
  kvsim_gpu_perf_t start = c->gpu.perf, fitted = r->fitted;
  cJSON *co = cJSON_AddObjectToObject(o, "coefficients");
  for (int i = 0; i < KVSIM_FID_NCOEF; i++) {
    cJSON *e = cJSON_AddObjectToObject(co, kvsim_fidelity_coef_name(i));
    cJSON_AddNumberToObject(e, "start", *kvsim_fidelity_coef(&start, i));
    cJSON_AddNumberToObject(e, "fitted", *kvsim_fidelity_coef(&fitted, i));
    cJSON_AddBoolToObject(e, "free", r->is_free[i]);
    if (r->is_free[i] && isfinite(r->stddev[i]))
      cJSON_AddNumberToObject(e, "stddev", r->stddev[i]);
  }
}

static void add_summary(cJSON *o, const char *key, const kvsim_fid_calib_summary_t *s) {
  cJSON *m = cJSON_AddObjectToObject(cJSON_AddObjectToObject(o, key), "median_abs_error_pct");
  if (s->n_ttft)
    cJSON_AddNumberToObject(m, "ttft", s->ttft_med);
  if (s->n_tpot)
    cJSON_AddNumberToObject(m, "tpot", s->tpot_med);
  if (s->n_e2e)
    cJSON_AddNumberToObject(m, "e2e", s->e2e_med);
}

static void add_residual(cJSON *res, const char *what, const char *name, const char *metric, double meas,
                         double sim) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, what, name);
  cJSON_AddStringToObject(e, "metric", metric);
  cJSON_AddNumberToObject(e, "measured", meas);
  cJSON_AddNumberToObject(e, "simulated", sim);
  cJSON_AddNumberToObject(e, "error_pct", 100 * (sim / meas - 1));
  cJSON_AddItemToArray(res, e);
}

char *kvsim_fidelity_calib_to_json(const kvsim_fid_calib_t *c, const kvsim_fid_calib_result_t *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "gpu", c->gpu.name);
  cJSON_AddNumberToObject(o, "runs", c->nruns);
  cJSON_AddNumberToObject(o, "silicon_rows", c->nrows);
  cJSON_AddNumberToObject(o, "silicon_rows_other_gpu", c->rows_other_gpu);
  cJSON_AddNumberToObject(o, "silicon_rows_skipped", c->rows_skipped);
  cJSON_AddNumberToObject(o, "silicon_rows_not_fitting", c->rows_unfit);
  cJSON_AddNumberToObject(o, "silicon_rows_unphysical", c->rows_unphysical);
  cJSON_AddNumberToObject(o, "iterations", (double)r->iterations);
  cJSON_AddNumberToObject(o, "simulations", r->simulations);
  cJSON_AddStringToObject(o, "loss", r->linear ? "linear" : "soft_l1");
  add_coefficients(o, c, r);
  add_summary(o, "before", &r->before);
  add_summary(o, "after", &r->after);
  cJSON_AddNumberToObject(o, "ttft_rel_sigma", r->after.ttft_sigma);
  cJSON_AddNumberToObject(o, "tpot_rel_sigma", r->after.tpot_sigma);
  cJSON *res = cJSON_AddArrayToObject(o, "residuals");
  size_t k = 0;
  for (int i = 0; i < c->nruns; i++)
    for (int j = 0; j < KVSIM_FID_RUN_METRICS; j++, k++)
      add_residual(res, "run", c->runs[i].m.path, kvsim_fidelity_run_metric_name(j), r->measured[k],
                   r->simulated[k]);
  for (int i = 0; i < c->nrows; i++)
    for (int j = 0; j < 2; j++, k++)
      add_residual(res, "row", c->rows[i].id, j ? "tpot_ms" : "ttft_ms", r->measured[k], r->simulated[k]);
  return kvsim__fid_print(o);
}
