/* One run into its outputs, shared by kvsim_study_run and the band's
 * nominal run. Internal to the study room. */
#ifndef KVSIM_STUDY_RUN_H
#define KVSIM_STUDY_RUN_H

#include "kvsim/run_output.h"
#include "kvsim/study.h"
#include "study/early.h"

/* A run that its early-stop rule ended (study/early.h): the verdict is a
 * miss, and there is no summary. Positive: not an error. */
#define KVSIM__STUDY_STOPPED 1

/* Opens sc's outputs in opts->dir (none when NULL) into *o and runs sc
 * into them, building the summary (kvsim_run_output_finish) but
 * committing nothing: the caller commits (kvsim_run_output_commit) and
 * closes *o, also on error. res: sc's resolved configuration when the
 * caller has it (the plan is not computed again), else NULL. */
int kvsim__study_run_into(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                          const kvsim_study_run_opts_t *opts, kvsim_run_output_t **o,
                          kvsim_err *err);

/* kvsim__study_run_into with an early-stop rule (NULL: none): returns
 * KVSIM__STUDY_STOPPED, nothing built, when the rule ended the run. */
int kvsim__study_run_guarded(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                             const kvsim_study_run_opts_t *opts, kvsim__early_t *early,
                             kvsim_run_output_t **o, kvsim_err *err);

/* kvsim__study_run_resolved with an early-stop rule (NULL: none; else
 * only for runs without output files, progress or checks): a summary,
 * or KVSIM__STUDY_STOPPED when the rule ended the run (not cached here:
 * the caller keeps the verdict, kvsim__study_memo_put_stopped). */
int kvsim__study_run_early(const kvsim_scenario_t *sc, const kvsim_resolved_t *given,
                           const kvsim_study_run_opts_t *opts, kvsim__early_t *early,
                           kvsim_summary_t *out, kvsim_err *err);

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
/* A point stopped early for the targets `tag` names: a miss, no summary.
 * get_stopped: true when sc was stopped for the same tag. A full run's
 * summary (memo_get) serves any tag; a stopped entry never a full run. */
void kvsim__study_memo_put_stopped(const kvsim_scenario_t *sc, const char *tag);
bool kvsim__study_memo_get_stopped(const kvsim_scenario_t *sc, const char *tag);
/* Hits since the process started (tests). */
int64_t kvsim__study_memo_hits(void);

/* Ends the parallel runner's children (SIGTERM, so that each removes its
 * temporary files) and waits for them. Async-signal-safe: for a signal
 * handler (kvsim__signal_hook). */
void kvsim__study_pool_stop(void);

#endif
