/* Outputs of `kvsim run`: timeseries.csv and requests.csv streamed to
 * temporary files while the run goes, summary.json at the end; all three
 * renamed into place only when the run succeeded (nothing half-written).
 * Without a folder, only the summary is built (for sweeps and tests). */
#ifndef KVSIM_RUN_OUTPUT_H
#define KVSIM_RUN_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "kvsim/engine.h"
#include "kvsim/error.h"
#include "kvsim/scenario.h"
#include "kvsim/summary.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvsim_run_output kvsim_run_output_t;

/* dir may be NULL (no files). The folder is created if missing. */
int kvsim_run_output_open(const char *dir, const kvsim_scenario_t *sc, bool progress,
                          kvsim_run_output_t **out, kvsim_err *err);
/* The same writing the two tables to the caller's streams (an
 * open_memstream, say), which stay the caller's: no folder, nothing
 * renamed, not closed by close. summary.json is not written; take the
 * summary (kvsim_run_output_summary) after finish. */
int kvsim_run_output_open_streams(const kvsim_scenario_t *sc, FILE *ts, FILE *rq,
                                  kvsim_run_output_t **out, kvsim_err *err);
kvsim_sink_t kvsim_run_output_sink(kvsim_run_output_t *o);

/* Builds the typed summary from the run's totals (st->resolved gives the
 * configuration the run used); with commit, writes summary.json (printed
 * from the summary) and renames the temporary files into place. Errors:
 * KVSIM_EIO naming the folder (a write or rename failed). */
int kvsim_run_output_finish(kvsim_run_output_t *o, const kvsim_run_stats_t *st, bool commit,
                            kvsim_err *err);
/* Between a finish without commit and the commit: merges the summaries of
 * the same scenario run at the band's edges into this run's summary
 * (summary.h kvsim_summary_merge_ranges), so that summary.json carries the
 * ranges. */
void kvsim_run_output_merge_ranges(kvsim_run_output_t *o, const kvsim_summary_t *edges, int n,
                                   const kvsim_band_edge_t *lo, const kvsim_band_edge_t *hi);
/* Writes summary.json and renames the temporary files into place (what
 * finish does with commit); nothing without a folder or when committed
 * already. Errors as finish's. */
int kvsim_run_output_commit(kvsim_run_output_t *o, kvsim_err *err);
/* After kvsim_run failed with a code from the sink: the sink's error (a
 * write to timeseries.csv or requests.csv failed, naming the file and the
 * system's reason) copied into err, and its code; KVSIM_OK when the sink
 * did not fail. */
int kvsim_run_output_failed(const kvsim_run_output_t *o, kvsim_err *err);
/* The summary built by finish (owned by o, valid until close); NULL
 * before finish. */
const kvsim_summary_t *kvsim_run_output_summary(const kvsim_run_output_t *o);
/* Removes temporary files of a run that failed, frees everything. */
void kvsim_run_output_close(kvsim_run_output_t *o);

/* Header lines (stable contract: docs/scenario.md, "Outputs"). */
extern const char *const kvsim_timeseries_header;
extern const char *const kvsim_requests_header;

#ifdef __cplusplus
}
#endif

#endif
