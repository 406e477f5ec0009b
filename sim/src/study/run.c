/* One run of a study: the scenario, its outputs, its typed summary. */
#include <stdio.h>
#include <string.h>

#include "kvsim/run_output.h"
#include "kvsim/study.h"

int kvsim_study_run(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts,
                    kvsim_summary_t *out, kvsim_err *err) {
  static const kvsim_study_run_opts_t none = {NULL, false, 0};
  if (!opts)
    opts = &none;
  /* Resolve first (pure and cheap): a plan that is refused must not
   * leave an output folder behind. kvsim_run resolves again. */
  kvsim_resolved_t res;
  int rc = kvsim_scenario_resolve(sc, &res, err);
  if (rc < 0)
    return rc;
  kvsim_run_output_t *o = NULL;
  rc = kvsim_run_output_open(opts->dir, sc, opts->progress, &o, err);
  if (rc == KVSIM_OK) {
    kvsim_sink_t sink = kvsim_run_output_sink(o);
    kvsim_run_opts_t ro = {.check_invariants = opts->check > 0,
                           .check_period = opts->check == 2 ? -1 : 0};
    kvsim_run_stats_t st;
    rc = kvsim_run(sc, &ro, &sink, &st, err);
    if (opts->progress)
      fputs("\r\033[K", stderr);
    if (rc == KVSIM_OK)
      rc = kvsim_run_output_finish(o, &st, opts->dir != NULL, err);
    if (rc == KVSIM_OK)
      *out = *kvsim_run_output_summary(o);
  }
  kvsim_run_output_close(o);
  return rc;
}
