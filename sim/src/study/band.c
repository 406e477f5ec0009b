/* One run with its band through the queue (kvsim/study.h): the scenario
 * at nominal step times, then at the band's two edges, the ranges of the
 * three merged into the nominal run's summary before it is written.
 * Re-running, rather than scaling the nominal latencies, is the point: a
 * 20 % slower step can turn a stable queue into a growing one, so a p99
 * moves far more than 20 %, and not symmetrically. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/run_output.h"
#include "kvsim/summary.h"
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

/* A copy of sc at one edge, run without files. res: sc's resolved
 * configuration, the edge's too (an edge changes step times only, which
 * neither the memory plan nor the scheduler's settings read). */
static int run_edge(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                    const kvsim_band_edge_t *edge, const kvsim_study_run_opts_t *opts,
                    kvsim_summary_t *out, kvsim_err *err) {
  kvsim_scenario_t e;
  int rc = kvsim_scenario_copy(sc, &e, err);
  if (rc < 0)
    return kvsim_err_prefix(err, "band edge at step-time scale %.4g", edge->step);
  rc = kvsim_scenario_set_band_edge(&e, edge, err);
  if (rc == KVSIM_OK) {
    kvsim_study_run_opts_t eo = {NULL, opts->progress, opts->check};
    rc = kvsim__study_run_resolved(&e, res, &eo, out, err);
  }
  kvsim_scenario_fini(&e);
  return rc < 0 ? kvsim_err_prefix(err, "band edge at step-time scale %.4g (prefill %.4g)", edge->step,
                                   edge->prefill)
                : rc;
}

/* The nominal run: outputs streamed into opts->dir, committed only after
 * the edges ran and their ranges were merged (nothing half-written if an
 * edge fails). */
static int run_nominal(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                       const kvsim_study_run_opts_t *opts, kvsim_summary_t *edges,
                       kvsim_summary_t *out, kvsim_err *err) {
  kvsim_run_output_t *o = NULL;
  int rc = kvsim__study_run_into(sc, res, opts, &o, err);
  kvsim_band_edge_t edge[2];
  kvsim_study_band_edges(sc, edge);
  for (int i = 0; rc == KVSIM_OK && i < 2; i++)
    rc = run_edge(sc, res, &edge[i], opts, &edges[i], err);
  if (rc == KVSIM_OK) {
    kvsim_run_output_merge_ranges(o, edges, 2, &edge[0], &edge[1]);
    rc = opts->dir ? kvsim_run_output_commit(o, err) : KVSIM_OK;
  }
  if (rc == KVSIM_OK)
    *out = *kvsim_run_output_summary(o);
  kvsim_run_output_close(o);
  return rc;
}

/* Without files: the nominal run and the edges each through
 * kvsim_study_run (the study's cache), their ranges merged as
 * run_nominal merges them. */
static int run_plain(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                     const kvsim_study_run_opts_t *opts, kvsim_summary_t *edges,
                     kvsim_summary_t *out, kvsim_err *err) {
  int rc = kvsim__study_run_resolved(sc, res, opts, out, err);
  kvsim_band_edge_t edge[2];
  kvsim_study_band_edges(sc, edge);
  for (int i = 0; rc == KVSIM_OK && i < 2; i++)
    rc = run_edge(sc, res, &edge[i], opts, &edges[i], err);
  if (rc == KVSIM_OK)
    kvsim_summary_merge_ranges(out, edges, 2, &edge[0], &edge[1]);
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
  kvsim_summary_t *edges = kvsim__malloc(2 * sizeof *edges);
  if (!edges)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  rc = !opts->dir && !opts->progress && !opts->check ? run_plain(sc, &res, opts, edges, out, err)
                                                     : run_nominal(sc, &res, opts, edges, out, err);
  free(edges);
  return rc;
}

/* The nominal run first (its diagnosis lists the advice), then the two
 * edges and the advised runs together in one pool: on two cores the
 * edges no longer run one after the other before the advice starts. */
typedef struct edges_ctx {
  const kvsim_scenario_t *sc;
  const kvsim_resolved_t *res; /* sc's, the edges' too */
  const kvsim_study_run_opts_t *opts;
  kvsim_band_edge_t edge[2];
  kvsim_summary_t *sums; /* [2] */
  int rc[2];
  kvsim_err err[2];
  kvsim_run_output_t *o;
} edges_ctx_t;

static int edge_job(void *vctx, int64_t i, kvsim_summary_t *out, kvsim_err *err) {
  edges_ctx_t *c = vctx;
  return run_edge(c->sc, c->res, &c->edge[i], c->opts, out, err);
}

static int edge_done(void *vctx, int64_t i, int rc, const kvsim_summary_t *s, const kvsim_err *e) {
  edges_ctx_t *c = vctx;
  c->rc[i] = rc;
  if (rc == KVSIM_OK)
    c->sums[i] = *s;
  else
    c->err[i] = *e;
  return KVSIM_OK;
}

/* After the pool: the first edge that failed is the error (as when the
 * edges ran in order); else their ranges merged, the outputs committed,
 * and *s the merged summary the advice is judged against. */
static int edges_finish(void *vctx, kvsim_summary_t *s, kvsim_err *err) {
  edges_ctx_t *c = vctx;
  for (int i = 0; i < 2; i++)
    if (c->rc[i] < 0) {
      *err = c->err[i];
      return c->rc[i];
    }
  kvsim_run_output_merge_ranges(c->o, c->sums, 2, &c->edge[0], &c->edge[1]);
  int rc = c->opts->dir ? kvsim_run_output_commit(c->o, err) : KVSIM_OK;
  if (rc == KVSIM_OK)
    *s = *kvsim_run_output_summary(c->o);
  return rc;
}

int kvsim__study_band_verified(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts,
                               int jobs, kvsim_summary_t *out, kvsim_err *err) {
  static const kvsim_study_run_opts_t none = {NULL, false, 0};
  if (!opts)
    opts = &none;
  kvsim_resolved_t res;
  int rc = kvsim_scenario_resolve(sc, &res, err);
  if (rc < 0)
    return rc;
  edges_ctx_t *c = kvsim__calloc(1, sizeof *c);
  kvsim_summary_t *sums = kvsim__malloc(2 * sizeof *sums);
  if (!c || !sums) {
    free(c);
    free(sums);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  }
  c->sc = sc;
  c->res = &res;
  c->opts = opts;
  c->sums = sums;
  kvsim_study_band_edges(sc, c->edge);
  rc = kvsim__study_run_into(sc, &res, opts, &c->o, err);
  if (rc == KVSIM_OK) {
    *out = *kvsim_run_output_summary(c->o);
    kvsim__study_extra_t extra = {2, edge_job, edge_done, edges_finish, c};
    rc = kvsim__study_verify_advice_with(sc, out, jobs, &extra, err);
  }
  kvsim_run_output_close(c->o);
  free(sums);
  free(c);
  return rc;
}
