/* A search point's rate at the workload's own duration (kvsim/study.h
 * kvsim_study_set_rate). A synthetic workload given by its request count
 * ran the same 150 requests at 10, 1,000 and 1,000,000 req/s: at the
 * higher rates the whole workload arrived within a fraction of a second
 * and drained from the queue before it grew, so a study of 150 requests
 * found "5 x L4 meet 1,000 req/s" where one L4 sustains about 18. The
 * request count grows with the rate instead, so every point offers its
 * rate for as long as the scenario does. */
#include <math.h>
#include <stdio.h>

#include "kvsim/study.h"

/* The synthetic workload's request count (0 when it has none: a
 * duration-bounded workload, or a trace). */
static double synthetic_requests(const kvsim_scenario_t *sc) {
  kvsim_workload_shape_t w;
  kvsim_workload_shape(sc->workload, &w);
  return (double)w.requests;
}

int kvsim_study_set_rate(kvsim_scenario_t *sc, const char *key, double rate, kvsim_err *err) {
  double was = NAN, n = synthetic_requests(sc);
  /* A workload with no single mean rate (a closed loop) has no duration
   * to keep: the rate key's own error follows from setting it. */
  if (n > 0) {
    kvsim_err ignored = {0};
    if (kvsim_workload_mean_rate(sc->workload, &was, &ignored) < 0)
      was = NAN;
  }
  int rc = kvsim_scenario_set_workload(sc, key, rate, err);
  if (rc < 0 || !(n > 0 && was > 0 && rate > was))
    return rc;
  /* Never fewer: a lower rate keeps its request count (and its p99's
   * samples) and so runs longer. */
  double more = ceil(n * (rate / was));
  if (!(more <= KVSIM_STUDY_MAX_SUSTAINED_REQUESTS))
    more = KVSIM_STUDY_MAX_SUSTAINED_REQUESTS;
  return more > n ? kvsim_scenario_set_workload(sc, "synthetic.requests", more, err) : KVSIM_OK;
}
