/* Output edge: JSON forms of results shared by several commands. Writers
 * of run outputs (time series, per-request table, summary) live in
 * run_output.h. */
#ifndef KVSIM_REPORT_H
#define KVSIM_REPORT_H

#include <stdio.h>

#include <cJSON.h>

#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

/* Adds the memory plan's keys (those of `kvsim calc --json`) to obj. */
void kvsim_report_plan_json(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g,
                            cJSON *obj);

/* Prints the plan in the engine's own log words. */
void kvsim_report_plan_text(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g,
                            FILE *out);
/* The same, with the "To fit:" line's text given (calc's reverse answer,
 * so that one answer is printed); NULL prints kvsim_plan_advice's. */
void kvsim_report_plan_text_fit(const kvsim_plan_t *pl, const kvsim_model_t *m,
                                const kvsim_gpu_t *g, const char *to_fit, FILE *out);

/* Serialises a cJSON tree deterministically (fixed number formatting) to a
 * malloc'd string; the caller frees it. */
char *kvsim_report_json_string(const cJSON *j);

/* Creates dir and its missing parents (mkdir -p). Errors: KVSIM_EIO
 * naming the folder that could not be made. */
int kvsim_report_mkdirs(const char *dir, kvsim_err *err);

/* Writes `text` to path atomically: a temporary file in the same folder,
 * then rename. */
int kvsim_report_write_atomic(const char *path, const char *text, size_t len, kvsim_err *err);

/* Installs SIGINT and SIGTERM handlers that remove this process's
 * temporary output files (run outputs, summaries, tables being written),
 * then end the process with the signal's default action (a non-zero
 * status). Call once at start-up; forked children inherit it. */
void kvsim_report_cleanup_on_signals(void);

#endif
