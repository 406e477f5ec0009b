/* One run into its outputs, shared by kvsim_study_run and the band's
 * nominal run. Internal to the study room. */
#ifndef KVSIM_STUDY_RUN_H
#define KVSIM_STUDY_RUN_H

#include "kvsim/run_output.h"
#include "kvsim/study.h"

/* Opens sc's outputs in opts->dir (none when NULL) into *o and runs sc
 * into them, building the summary (kvsim_run_output_finish) but
 * committing nothing: the caller commits (kvsim_run_output_commit) and
 * closes *o, also on error. */
int kvsim__study_run_into(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts,
                          kvsim_run_output_t **o, kvsim_err *err);

/* Ends the parallel runner's children (SIGTERM, so that each removes its
 * temporary files) and waits for them. Async-signal-safe: for a signal
 * handler (kvsim__signal_hook). */
void kvsim__study_pool_stop(void);

#endif
