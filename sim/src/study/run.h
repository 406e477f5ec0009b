/* One run into its outputs, shared by kvsim_study_run and the band's
 * nominal run. Internal to the study room. */
#ifndef KVSIM_STUDY_RUN_H
#define KVSIM_STUDY_RUN_H

#include "kvsim/run_output.h"
#include "kvsim/study.h"

/* Opens sc's outputs in opts->dir (none when NULL) into *o and runs sc
 * into them, building the summary (kvsim_run_output_finish) but
 * committing nothing: the caller commits (kvsim_run_output_commit) and
 * closes *o, also on error. res: sc's resolved configuration when the
 * caller has it (the plan is not computed again), else NULL. */
int kvsim__study_run_into(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                          const kvsim_study_run_opts_t *opts, kvsim_run_output_t **o,
                          kvsim_err *err);

/* kvsim_study_run with sc's resolved configuration when the caller has
 * it (res; a band edge takes its nominal run's, as only step times
 * differ), else NULL: resolved here. */
int kvsim__study_run_resolved(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                              const kvsim_study_run_opts_t *opts, kvsim_summary_t *out,
                              kvsim_err *err);

/* Jobs run in the advice's pool before its own (the band's edges):
 * job/done as kvsim_study_parallel's for indices 0..n - 1; finish runs
 * after the pool, before the advice is judged against *s (it may
 * update *s); its error is the call's. */
typedef struct kvsim__study_extra {
  int n;
  kvsim_study_job_fn job;
  kvsim_study_done_fn done;
  int (*finish)(void *ctx, kvsim_summary_t *s, kvsim_err *err);
  void *ctx;
} kvsim__study_extra_t;

/* kvsim_study_verify_advice with `extra` jobs in the same pool. */
int kvsim__study_verify_advice_with(const kvsim_scenario_t *sc, kvsim_summary_t *s, int jobs,
                                    const kvsim__study_extra_t *extra, kvsim_err *err);

/* kvsim_study_run_band with the band, then the advice verified, the two
 * edges and the advised runs in one pool of `jobs` processes. */
int kvsim__study_band_verified(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts,
                               int jobs, kvsim_summary_t *out, kvsim_err *err);

/* The study's cache of simulated points (memo.c): between begin and end
 * (nestable; the cache is dropped at the outermost end), a run without
 * output files, progress or checks of a scenario already run returns
 * that run's summary. get: true and *out filled on a hit. */
void kvsim__study_memo_begin(void);
void kvsim__study_memo_end(void);
bool kvsim__study_memo_get(const kvsim_scenario_t *sc, kvsim_summary_t *out);
void kvsim__study_memo_put(const kvsim_scenario_t *sc, const kvsim_summary_t *s);
/* Hits since the process started (tests). */
int64_t kvsim__study_memo_hits(void);

/* Ends the parallel runner's children (SIGTERM, so that each removes its
 * temporary files) and waits for them. Async-signal-safe: for a signal
 * handler (kvsim__signal_hook). */
void kvsim__study_pool_stop(void);

#endif
