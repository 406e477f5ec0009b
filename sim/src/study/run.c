/* One run of a study: the scenario, its outputs, its typed summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/report.h"
#include "kvsim/run_output.h"
#include "kvsim/study.h"
#include "kvsim/workload.h"
#include "study/run.h"

/* The workload's first request, read and dropped: a trace with a header
 * alone, or whose first row is bad, fails here, before the output folder
 * exists, not after it was made (the run reads the file again). */
static int first_request(const kvsim_scenario_t *sc, kvsim_err *err) {
  kvsim_source_t *src = NULL;
  int rc = kvsim_source_open(sc->workload, sc->seed, &src, err);
  if (rc < 0)
    return rc;
  kvsim_req_spec_t spec;
  rc = kvsim_source_next(src, &spec, err);
  kvsim_source_close(src);
  return rc < 0 ? rc : KVSIM_OK;
}

/* A run writes these into its folder (renamed into place at the end): one
 * that is the scenario or what its workload reads would be replaced by
 * an output (a trace called requests.csv beside its scenario, run with
 * --out of that folder). */
static int outputs_not_inputs(const kvsim_scenario_t *sc, const char *dir, kvsim_err *err) {
  static const char *const names[] = {"summary.json", "timeseries.csv", "requests.csv",
                                      "REPORT.md"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    if ((sc->path[0] && kvsim__same_file(sc->path, p)) || kvsim_workload_reads(sc->workload, p))
      return kvsim_err_set(
          err, KVSIM_EINVAL, "--out: %s is an input of the run (%s); choose another folder", p,
          sc->path[0] && kvsim__same_file(sc->path, p) ? "its scenario" : "its workload");
  }
  return KVSIM_OK;
}

int kvsim__study_run_into(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                          const kvsim_study_run_opts_t *opts, kvsim_run_output_t **o,
                          kvsim_err *err) {
  return kvsim__study_run_guarded(sc, res, opts, NULL, o, err);
}

int kvsim__study_run_guarded(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                             const kvsim_study_run_opts_t *opts, kvsim__early_t *early,
                             kvsim_run_output_t **o, kvsim_err *err) {
  int rc = opts->dir ? outputs_not_inputs(sc, opts->dir, err) : KVSIM_OK;
  if (rc == KVSIM_OK && opts->dir)
    rc = first_request(sc, err);
  if (rc < 0)
    return rc;
  rc = kvsim_run_output_open(opts->dir, sc, opts->progress, o, err);
  if (rc < 0)
    return rc;
  kvsim_sink_t sink = kvsim_run_output_sink(*o);
  if (early)
    sink = kvsim__early_sink(early, sink);
  kvsim_run_opts_t ro = {.check_invariants = opts->check > 0, .check_period = opts->check == 2 ? -1 : 0};
  kvsim_run_stats_t st;
  rc =
      res ? kvsim_run_resolved(sc, res, &ro, &sink, &st, err) : kvsim_run(sc, &ro, &sink, &st, err);
  if (opts->progress)
    fputs("\r\033[K", stderr);
  if (rc < 0 && early && early->decided)
    return KVSIM__STUDY_STOPPED; /* the verdict is decided: no summary */
  if (rc < 0 && kvsim_run_output_failed(*o, err) < 0)
    return rc; /* the sink's code: its message is the output's */
  return rc == KVSIM_OK ? kvsim_run_output_finish(*o, &st, false, err) : rc;
}

int kvsim_study_run(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts,
                    kvsim_summary_t *out, kvsim_err *err) {
  return kvsim__study_run_resolved(sc, NULL, opts, out, err);
}

int kvsim__study_run_resolved(const kvsim_scenario_t *sc, const kvsim_resolved_t *given,
                              const kvsim_study_run_opts_t *opts, kvsim_summary_t *out,
                              kvsim_err *err) {
  return kvsim__study_run_early(sc, given, opts, NULL, out, err);
}

int kvsim__study_run_early(const kvsim_scenario_t *sc, const kvsim_resolved_t *given,
                           const kvsim_study_run_opts_t *opts, kvsim__early_t *early,
                           kvsim_summary_t *out, kvsim_err *err) {
  static const kvsim_study_run_opts_t none = {NULL, false, 0};
  if (!opts)
    opts = &none;
  const bool plain = !opts->dir && !opts->progress && !opts->check;
  if (plain && kvsim__study_memo_get(sc, out))
    return KVSIM_OK;
  /* Resolve first (pure): a plan that is refused must not leave an
   * output folder behind. The run takes this configuration as it is. */
  kvsim_resolved_t own;
  /* A disaggregated scenario runs its sides, each resolved by the run
   * (engine/disagg_run.c); its top level (TP 1 unless given) is no
   * instance and need not fit: DeepSeek-V3 fp8 fits at TP 8 only. */
  const bool sides = sc->disagg.enabled && !given;
  int rc = given || sides ? KVSIM_OK : kvsim_scenario_resolve(sc, &own, err);
  if (rc < 0)
    return rc;
  const kvsim_resolved_t *res = given ? given : sides ? NULL : &own;
  kvsim_run_output_t *o = NULL;
  rc = kvsim__study_run_guarded(sc, res, opts, early, &o, err);
  if (rc == KVSIM__STUDY_STOPPED) {
    kvsim_run_output_close(o);
    return rc;
  }
  if (rc == KVSIM_OK && opts->dir)
    rc = kvsim_run_output_commit(o, err);
  if (rc == KVSIM_OK)
    *out = *kvsim_run_output_summary(o);
  kvsim_run_output_close(o);
  if (rc == KVSIM_OK && plain)
    kvsim__study_memo_put(sc, out);
  return rc;
}

/* Measures the advice, then writes summary.json again with it (the
 * first one, written with the run's other outputs, is replaced whole). */
int kvsim_study_run_verified(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts, bool band,
                             int jobs, kvsim_summary_t *out, kvsim_err *err) {
  int rc = band ? kvsim__study_band_verified(sc, opts, jobs, out, err)
                : kvsim_study_run_band(sc, opts, band, out, err);
  if (rc == KVSIM_OK && !band)
    rc = kvsim_study_verify_advice(sc, out, jobs, err);
  if (rc < 0 || !opts || !opts->dir || !out->ndiagnosis)
    return rc;
  cJSON *j = kvsim_summary_json(out, sc);
  char *text = j ? kvsim_report_json_string(j) : NULL;
  cJSON_Delete(j);
  if (!text)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory for summary.json", opts->dir);
  char path[4200];
  snprintf(path, sizeof path, "%s/summary.json", opts->dir);
  size_t len = strlen(text);
  text[len] = '\n';
  rc = kvsim_report_write_atomic(path, text, len + 1, err);
  free(text);
  return rc;
}
