/* Running a scenario from a command: load it with overrides, simulate,
 * and keep the summary. Shared by run, plan and sweep. */
#ifndef KVSIM_CLI_RUNNER_H
#define KVSIM_CLI_RUNNER_H

#include <stdbool.h>

#include <cJSON.h>

#include "kvsim/engine.h"
#include "kvsim/error.h"

typedef struct cli_run_result {
  cJSON *summary;          /* owned; NULL when the run failed */
  kvsim_run_stats_t stats;
  char name[128];
} cli_run_result;

/* Loads `path` (NULL: the embedded default scenario) with `sets`, runs it, writes outputs into `dir` (NULL: no
 * files; "" : results/<scenario name>). Returns 0 or a negative code with
 * err set (bad scenario, plan that does not fit, bad trace row). */
/* check: 0 no invariant checks, 1 after every step, 2 after a number of
 * steps that keeps the checks' cost near that of the run (debug builds). */
int cli_run_scenario(const char *path, const char *const *sets, int nsets, const char *dir,
                     bool progress, int check, cli_run_result *res, kvsim_err *err);
void cli_run_result_fini(cli_run_result *res);

/* A number in a summary by dotted path ("latency.ttft_s.p99"); NAN if absent. */
double cli_summary_num(const cJSON *summary, const char *path);

#endif
