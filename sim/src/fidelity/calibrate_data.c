/* The data set of a calibration (kvsim/fidelity.h): measured runs with the
 * scenarios that replay them and silicon rows, all on the one GPU whose
 * coefficients are fitted; and the names of those coefficients. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/vec.h"
#include "kvsim/fidelity.h"

static const char *const coef_names[KVSIM_FID_NCOEF] = {"host_us", "host_per_seq_us", "frontend_us",
                                                                 "frontend_per_token_us"};

const char *kvsim_fidelity_coef_name(int k) { return k >= 0 && k < KVSIM_FID_NCOEF ? coef_names[k] : "?"; }

double *kvsim_fidelity_coef(kvsim_gpu_perf_t *p, int k) {
  switch (k) {
  case KVSIM_FID_HOST_PER_SEQ:
    return &p->host_per_seq_us;
  case KVSIM_FID_FRONTEND:
    return &p->frontend_us;
  case KVSIM_FID_FRONTEND_PER_TOKEN:
    return &p->frontend_per_token_us;
  case KVSIM_FID_HOST:
  default:
    return &p->host_us;
  }
}

int kvsim_fidelity_perf_of_kernels(const char *kernels, kvsim_gpu_perf_t *p, kvsim_err *err) {
  kvsim_gpu_t probe;
  memset(&probe, 0, sizeof probe);
  int rc = kvsim_gpu_use_kernels(&probe, kernels, err);
  if (rc < 0)
    return rc;
  *p = probe.perf;
  p->host_us = p->host_per_seq_us = -1;
  p->frontend_us = KVSIM_FID_CLIENT_US;
  return KVSIM_OK;
}

void kvsim_fidelity_apply_coefs(kvsim_gpu_perf_t *dst, const kvsim_gpu_perf_t *src) {
  for (int k = 0; k < KVSIM_FID_NCOEF; k++)
    *kvsim_fidelity_coef(dst, k) = *kvsim_fidelity_coef((kvsim_gpu_perf_t *)src, k);
}

int kvsim_fidelity_parse_fit(const char *list, int *fit, int *nfit, kvsim_err *err) {
  *nfit = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int k = -1;
    for (int i = 0; i < KVSIM_FID_NCOEF; i++)
      if (!strcmp(t, coef_names[i]))
        k = i;
    if (k < 0)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "--fit: unknown coefficient '%s' (expected host_us, host_per_seq_us, frontend_us, frontend_per_token_us)",
                           t);
    for (int i = 0; i < *nfit; i++)
      if (fit[i] == k)
        return kvsim_err_set(err, KVSIM_EINVAL, "--fit: '%s' given twice", t);
    fit[(*nfit)++] = k;
  }
  if (*nfit == 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--fit: empty list");
  return KVSIM_OK;
}

const char *kvsim_fidelity_run_metric_name(int j) {
  static const char *const names[KVSIM_FID_RUN_METRICS] = {
      "ttft_mean", "ttft_p50", "ttft_p90", "ttft_p99", "tpot_mean", "tpot_p50",
      "tpot_p90",  "tpot_p99", "e2e_mean", "e2e_p50",  "e2e_p90",  "e2e_p99"};
  return j >= 0 && j < KVSIM_FID_RUN_METRICS ? names[j] : "?";
}

void kvsim_fidelity_calib_init(kvsim_fid_calib_t *c, const kvsim_gpu_t *gpu) {
  memset(c, 0, sizeof *c);
  c->gpu = *gpu;
  c->range_ratio = KVSIM_FID_SIL_RANGE_AUTO;
}

void kvsim_fidelity_calib_fini(kvsim_fid_calib_t *c) {
  for (int i = 0; i < c->nruns; i++) {
    kvsim_fidelity_measured_fini(&c->runs[i].m);
    kvsim_scenario_fini(&c->runs[i].sc);
  }
  kvsim__free(c->runs);
  kvsim__free(c->rows);
  memset(c, 0, sizeof *c);
}

int kvsim_fidelity_calib_add_loaded(kvsim_fid_calib_t *c, kvsim_fid_measured_t *m, kvsim_scenario_t *sc,
                                    kvsim_err *err) {
  int64_t cap = c->runs_cap;
  if (kvsim__grow((void **)&c->runs, &cap, c->nruns + 1, sizeof *c->runs) < 0) {
    kvsim_fidelity_measured_fini(m);
    kvsim_scenario_fini(sc);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  }
  c->runs_cap = (int)cap;
  c->runs[c->nruns].m = *m;
  c->runs[c->nruns].sc = *sc;
  c->nruns++;
  return KVSIM_OK;
}

int kvsim_fidelity_calib_add_run(kvsim_fid_calib_t *c, const char *measured, const char *scenario,
                                 kvsim_err *err) {
  kvsim_fid_measured_t m;
  if (kvsim_fidelity_measured_load(measured, NULL, &m, err) < 0) {
    kvsim_fidelity_measured_fini(&m);
    return kvsim_err_prefix(err, "--measured");
  }
  kvsim_scenario_t sc;
  int rc = kvsim_fidelity_measured_scenario(&m, scenario, NULL, 0, &sc, err);
  if (rc < 0) {
    kvsim_fidelity_measured_fini(&m);
    return rc;
  }
  if (strcmp(sc.gpu.name, c->gpu.name)) {
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s runs on GPU '%s', not '%s' (coefficients are per GPU)", scenario,
                       sc.gpu.name, c->gpu.name);
    kvsim_fidelity_measured_fini(&m);
    kvsim_scenario_fini(&sc);
    return rc;
  }
  return kvsim_fidelity_calib_add_loaded(c, &m, &sc, err);
}

int kvsim_fidelity_calib_add_silicon(kvsim_fid_calib_t *c, const char *path, const char *const *filters,
                                     int nfilters, double range_ratio, kvsim_err *err) {
  kvsim_fid_sil_table_t t;
  c->range_ratio = range_ratio;
  for (int i = 0; i < nfilters; i++) {
    size_t l = strlen(c->filters);
    snprintf(c->filters + l, sizeof c->filters - l, "%s%s", l ? "," : "", filters[i]);
  }
  if (kvsim_fidelity_silicon_read(path, filters, nfilters, &t, err) < 0)
    return kvsim_err_prefix(err, "--silicon");
  kvsim__free(c->rows);
  c->rows = kvsim__calloc((size_t)(t.n ? t.n : 1), sizeof *c->rows);
  if (!c->rows) {
    kvsim_fidelity_silicon_free(&t);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  }
  for (int64_t i = 0; i < t.n; i++) {
    kvsim_fid_sil_row_t *r = &t.rows[i];
    if (r->skipped) {
      c->rows_skipped++;
      continue;
    }
    if (strcmp(r->gpu, c->gpu.name)) {
      c->rows_other_gpu++;
      continue;
    }
    /* A row beyond what the GPU can do measured something the row does
     * not record: the same rule as the leave-one-group-out table. */
    char why[192];
    if (!kvsim_fidelity_sil_physical(r, c->range_ratio, why, sizeof why)) {
      c->rows_unphysical++;
      continue;
    }
    /* A row kvsim cannot run at all (its plan does not fit) says nothing
     * about the step time: it is left out and counted. */
    double a, b;
    kvsim_err e = {0};
    if (kvsim_fidelity_silicon_simulate(r, &c->gpu, 1, c->range_ratio, NULL, &a, &b, &e) < 0) {
      c->rows_unfit++;
      continue;
    }
    c->rows[c->nrows++] = *r;
  }
  kvsim_fidelity_silicon_free(&t);
  return KVSIM_OK;
}
