/* The seeds' troubleshooting table, measured on the run: what limited it
 * and what to change. Internal to the report. */
#ifndef KVSIM_REPORT_DIAGNOSIS_H
#define KVSIM_REPORT_DIAGNOSIS_H

#include "kvsim/engine.h"
#include "kvsim/summary.h"

/* Appends findings to out->diagnosis. `sched` is the scheduler
 * configuration the run used (the resolved one: the plan's limits). */
void kvsim__diagnose(const kvsim_sched_cfg_t *sched, const kvsim_run_stats_t *st, double ttft_p50,
                     double ttft_p99, kvsim_summary_t *out);

/* Appends a finding when the GPU's step-time coefficients are not its own
 * fit (cal->status not fitted): a run's latencies then rest on borrowed
 * or spec-only figures, and the summary's ranges are wide for that. */
void kvsim__diagnose_calibration(const kvsim_calibration_t *cal, kvsim_summary_t *out);

#endif
