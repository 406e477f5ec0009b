/* One run with its band through the queue (kvsim/study.h): the scenario
 * at nominal step times, then at the band's two edges, the ranges of the
 * three merged into the nominal run's summary before it is written.
 * Re-running, rather than scaling the nominal latencies, is the point: a
 * 20 % slower step can turn a stable queue into a growing one, so a p99
 * moves far more than 20 %, and not symmetrically. */
#include <stdio.h>
#include <stdlib.h>

#include "kvsim/run_output.h"
#include "kvsim/study.h"
#include "study/run.h"

void kvsim_study_band_edges(const kvsim_scenario_t *sc, kvsim_band_edge_t e[2]) {
  kvsim_scenario_band_edges(sc, &sc->gpu.perf, &e[0], &e[1]);
}

void kvsim_study_band_scales(const kvsim_scenario_t *sc, double *lo, double *hi) {
  kvsim_band_edge_t e[2];
  kvsim_study_band_edges(sc, e);
  *lo = e[0].step;
  *hi = e[1].step;
}

/* A copy of sc at one edge, run without files. */
static int run_edge(const kvsim_scenario_t *sc, const kvsim_band_edge_t *edge, const kvsim_study_run_opts_t *opts,
                    kvsim_summary_t *out, kvsim_err *err) {
  kvsim_scenario_t e;
  int rc = kvsim_scenario_copy(sc, &e, err);
  if (rc < 0)
    return kvsim_err_prefix(err, "band edge at step-time scale %.4g", edge->step);
  rc = kvsim_scenario_set_band_edge(&e, edge, err);
  if (rc == KVSIM_OK) {
    kvsim_study_run_opts_t eo = {NULL, opts->progress, opts->check};
    rc = kvsim_study_run(&e, &eo, out, err);
  }
  kvsim_scenario_fini(&e);
  return rc < 0 ? kvsim_err_prefix(err, "band edge at step-time scale %.4g (prefill %.4g)", edge->step,
                                   edge->prefill)
                : rc;
}

/* The nominal run: outputs streamed into opts->dir, committed only after
 * the edges ran and their ranges were merged (nothing half-written if an
 * edge fails). */
static int run_nominal(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts,
                       kvsim_summary_t *edges, kvsim_summary_t *out, kvsim_err *err) {
  kvsim_run_output_t *o = NULL;
  int rc = kvsim__study_run_into(sc, opts, &o, err);
  kvsim_band_edge_t edge[2];
  kvsim_study_band_edges(sc, edge);
  for (int i = 0; rc == KVSIM_OK && i < 2; i++)
    rc = run_edge(sc, &edge[i], opts, &edges[i], err);
  if (rc == KVSIM_OK) {
    kvsim_run_output_merge_ranges(o, edges, 2, &edge[0], &edge[1]);
    rc = opts->dir ? kvsim_run_output_commit(o, err) : KVSIM_OK;
  }
  if (rc == KVSIM_OK)
    *out = *kvsim_run_output_summary(o);
  kvsim_run_output_close(o);
  return rc;
}

int kvsim_study_run_band(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts, bool band,
                         kvsim_summary_t *out, kvsim_err *err) {
  if (!band)
    return kvsim_study_run(sc, opts, out, err);
  static const kvsim_study_run_opts_t none = {NULL, false, 0};
  if (!opts)
    opts = &none;
  /* Resolve first, as kvsim_study_run does: a plan that is refused must
   * not leave an output folder behind. */
  kvsim_resolved_t res;
  int rc = kvsim_scenario_resolve(sc, &res, err);
  if (rc < 0)
    return rc;
  kvsim_summary_t *edges = malloc(2 * sizeof *edges);
  if (!edges)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  rc = run_nominal(sc, opts, edges, out, err);
  free(edges);
  return rc;
}
