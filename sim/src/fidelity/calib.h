/* The calibration's solver state, shared by calibrate.c (the GSL driver)
 * and calibrate_eval.c (evaluating the data set). Internal. */
#ifndef KVSIM_FIDELITY_CALIB_H
#define KVSIM_FIDELITY_CALIB_H

#include <stdbool.h>
#include <stddef.h>

#include <gsl/gsl_vector.h>

#include "kvsim/fidelity.h"

typedef struct kvsim__fid_solver {
  kvsim_fid_calib_t *c;
  const kvsim_fid_calib_opts_t *opts;
  int fit[KVSIM_FID_NCOEF]; /* indices of the fitted coefficients */
  int nfit;
  bool soft_l1;
  double loss_scale;
  int evals;
  kvsim_err err;
  bool failed;              /* a simulation failed during the fit */
  double *meas, *sim;       /* the last evaluation's raw values, per residual */
  /* The client-side latency may not exceed half the smallest measured
   * client-side TTFT (us): it can never swallow one. */
  double frontend_cap_us;
  /* Highest value of each efficiency (1 but for the GEMM efficiencies
   * of a GPU with measured matmul peaks: the share of its spec figure
   * the best matmul reached). */
  double eff_hi[KVSIM_FID_NCOEF];
} kvsim__fid_solver_t;

/* Residuals of the data: KVSIM_FID_RUN_METRICS per run, 2 per silicon row. */
size_t kvsim__fid_nres(const kvsim_fid_calib_t *c);

/* Simulates everything at perf p; fills s->meas / s->sim and, when out is
 * not NULL, the (robust) log ratios. A failed simulation sets s->failed
 * and s->err. */
int kvsim__fid_evaluate(kvsim__fid_solver_t *s, const kvsim_gpu_perf_t *p, gsl_vector *out);

/* Median errors of the last evaluation. */
void kvsim__fid_summarize(const kvsim__fid_solver_t *s, kvsim_fid_calib_summary_t *sum);

/* What the data can tell apart, when the caller did not say: into s->fit. */
void kvsim__fid_default_fit(kvsim__fid_solver_t *s);

#endif
