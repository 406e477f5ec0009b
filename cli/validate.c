/* kvsim validate: flags -> the fidelity library (kvsim/fidelity.h) -> its text or JSON report. Modes: --startup (the start-up log table), --measured FILE
 * SCENARIO.json (a measured run against its simulation), --silicon (fixed-concurrency rows), --all
 * (leave-one-GPU-out over every dev source). Exit codes: 0 ok, 1 --max-error exceeded, 2 bad input. */
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "commands.h"
#include "kvsim/fidelity.h"

/* Prints a library JSON text; false when there is none (out of memory). */
static bool put_json(char *s) {
  if (!s)
    return false;
  puts(s);
  free(s);
  return true;
}

/* The parsed flags of kvsim validate. */
typedef struct vopts {
  const char *startup, *measured, *silicon, *series, *perf_file;
  cli_list metas, sets, filters, gpus;
  bool json, band, terms, all, no_refit, range_seen, max_error_seen;
  double max_error, range_ratio;
} vopts_t;

/* --band: the library's coverage report (text or JSON) of a filled cov. */
static int put_coverage(int rc, kvsim_fid_coverage_t *cov, bool json, kvsim_err *err) {
  rc = rc == KVSIM_OK && kvsim_fidelity_coverage_report(cov, json, stdout) < 0 ? kvsim_err_set(err, KVSIM_ENOMEM, "out of memory") : rc;
  kvsim_fidelity_coverage_fini(cov);
  return rc;
}

static int run_measured(const char *file, const char *scenario, const cli_list *sets, const char *series,
                        const char *perf, bool json, double max_error, bool band) {
  kvsim_err err = {0};
  kvsim_fid_measured_t m;
  if (kvsim_fidelity_measured_load(file, series, &m, &err) < 0) {
    kvsim_fidelity_measured_fini(&m);
    return cli_fail("validate", "%s", err.msg); /* names the file: requests or --series */
  }
  kvsim_scenario_t sc;
  if (kvsim_fidelity_measured_scenario(&m, scenario, sets->items, sets->n, &sc, &err) < 0) {
    kvsim_fidelity_measured_fini(&m);
    return cli_fail("validate", "%s", err.msg);
  }
  /* Another GPU's kernel tables in place of the scenario GPU's own. */
  char label[96];
  snprintf(label, sizeof label, "%s", perf ? perf : "");
  if (perf && kvsim_gpu_use_kernels(&sc.gpu, perf, &err) < 0) {
    kvsim_fidelity_measured_fini(&m);
    kvsim_scenario_fini(&sc);
    return cli_fail("validate", "--perf: %s", err.msg);
  }
  kvsim_fid_measured_cmp_t c;
  kvsim_fid_coverage_t cov = {0};
  int rc = band ? put_coverage(kvsim_fidelity_coverage_measured(&m, &sc, perf ? label : NULL, &cov, &err), &cov,
                               json, &err)
                : kvsim_fidelity_measured_compare(&m, &sc, &c, &err);
  if (rc == KVSIM_OK && !band) {
    if (!json)
      kvsim_fidelity_measured_print(stdout, &m, &sc, &c);
    else if (!put_json(kvsim_fidelity_measured_to_json(&m, &sc, &c)))
      rc = kvsim_err_set(&err, KVSIM_ENOMEM, "out of memory");
  }
  kvsim_fidelity_measured_fini(&m);
  kvsim_scenario_fini(&sc);
  if (rc < 0 || band)
    return rc < 0 ? cli_fail("validate", "%s", err.msg) : 0;
  char which[32] = "";
  double w = max_error >= 0 ? kvsim_fidelity_lat_worst(&c.lat, which, sizeof which) : 0;
  if (max_error >= 0 && w > max_error) {
    fprintf(stderr, "kvsim validate: %s error %.1f%% exceeds --max-error %.1f%%\n", which, w, max_error);
    return 1;
  }
  return 0;
}

static int run_silicon(const vopts_t *o, const kvsim_gpu_perf_t *perf) {
  const cli_list *filters = &o->filters, *gpus = &o->gpus;
  const double range_ratio = o->range_seen ? o->range_ratio : KVSIM_FID_SIL_RANGE_AUTO, max_error = o->max_error;
  kvsim_err err = {0};
  kvsim_gpu_t ov[sizeof gpus->items / sizeof *gpus->items];
  for (int i = 0; i < gpus->n; i++)
    if (kvsim_gpu_load(gpus->items[i], &ov[i], &err) < 0)
      return cli_fail("validate", "--gpu: %s", err.msg);
  kvsim_fid_coverage_t cov = {0};
  if (o->band)
    return put_coverage(kvsim_fidelity_coverage_silicon(o->silicon, filters->items, filters->n, ov, gpus->n, range_ratio, perf,
                                                        o->perf_file, &cov, &err), &cov, o->json, &err) < 0 ? cli_fail("validate", "--silicon: %s", err.msg) : 0;
  kvsim_fid_silicon_t s;
  if (kvsim_fidelity_silicon_compare(o->silicon, filters->items, filters->n, ov, gpus->n, range_ratio, perf, &s,
                                     &err) < 0) {
    kvsim_fidelity_silicon_fini(&s);
    return err.code == KVSIM_ENOMEM ? cli_fail("validate", "out of memory")
                                    : cli_fail("validate", "--silicon: %s", err.msg);
  }
  if (s.compared == 0) { /* before any output, no result: why (the first skip's reason, filters) */
    char why[320];
    snprintf(why, sizeof why, "%d skipped%s%s; %d failed%s", s.skipped, s.nreasons ? ": " : "",
             s.nreasons ? s.reasons[0].reason : "", s.failed, filters->n ? "; check --filter" : "");
    kvsim_fidelity_silicon_fini(&s);
    return cli_fail("validate", "--silicon: %s: no row could be compared (%s)", o->silicon, why);
  }
  bool ok = true;
  if (o->json)
    ok = put_json(kvsim_fidelity_silicon_to_json(&s, o->silicon));
  else
    kvsim_fidelity_silicon_print(stdout, &s);
  if (o->terms && !o->json)
    kvsim_fidelity_silicon_print_terms(stdout, &s);
  if (o->terms && !o->json) /* the prefill's terms read the catalog GPU's own tables */
    kvsim_fidelity_silicon_print_prefill_terms(stdout, &s, range_ratio, gpus->n == 0 && !perf);
  int n = s.compared;
  double mt = s.ttft_med, mp = s.tpot_med;
  kvsim_fidelity_silicon_fini(&s);
  if (!ok)
    return cli_fail("validate", "out of memory");
  if (max_error >= 0 && (n == 0 || mt > max_error || mp > max_error)) {
    fprintf(stderr, "kvsim validate: median absolute error (TTFT %.1f%%, TPOT %.1f%%) exceeds --max-error %.1f%%\n",
            mt, mp, max_error);
    return 1;
  }
  return 0;
}

static int run_all(bool no_refit, bool json) {
  kvsim_fid_logo_opts_t o = {"../shared/validation", "configs/scenarios", 8, no_refit, NULL, NULL};
  kvsim_err err = {0};
  return put_json(kvsim_fidelity_logo_report(&o, json, &err)) ? 0 : cli_fail("validate", "--all: %s", err.msg);
}

static int run_startup(const char *file, const cli_list *metas, bool json, double max_error) {
  kvsim_fid_startup_t t = {0};
  kvsim_err err = {0};
  int rc = 0;
  if (kvsim_fidelity_startup_read(file, &t, &err) < 0)
    rc = cli_fail("validate", "--startup: %s", err.msg);
  for (int i = 0; !rc && i < metas->n; i++)
    if (kvsim_fidelity_startup_add_meta(metas->items[i], &t, &err) < 0)
      rc = err.code == KVSIM_ENOMEM ? cli_fail("validate", "out of memory")
                                    : cli_fail("validate", "--meta: %s", err.msg);
  if (!rc && kvsim_fidelity_startup_evaluate(&t, &err) < 0)
    rc = cli_fail("validate", "out of memory");
  /* Before any output: a table of nothing is bad input, not a median of
   * nan% (with --max-error) or an exit 0 with "n/a" (without). */
  if (!rc && kvsim_fidelity_startup_validated(&t, &err) < 0)
    rc = cli_fail("validate", "--startup: %s: %s", file, err.msg);
  if (!rc && json && !put_json(kvsim_fidelity_startup_to_json(&t, file)))
    rc = cli_fail("validate", "out of memory");
  else if (!rc && !json)
    kvsim_fidelity_startup_print(stdout, &t, file);
  double med = t.median_abs_err;
  kvsim_fidelity_startup_fini(&t);
  if (rc)
    return rc;
  if (max_error >= 0 && med > max_error) {
    fprintf(stderr, "kvsim validate: median absolute error %.1f%% exceeds --max-error %.1f%%\n", med, max_error);
    return 1;
  }
  return 0;
}

/* One mode of the four, with the flags that go with it: another mode's are refused, never ignored. */
static int dispatch(vopts_t *o, const char *const *pos, int npos) {
  if (o->max_error_seen && !(o->max_error >= 0)) /* -1 is "no threshold", not a value to give */
    return cli_fail("validate", "--max-error: %g must be >= 0", o->max_error);
  int modes = (o->startup != NULL) + (o->measured != NULL) + (o->silicon != NULL) + o->all;
  kvsim_gpu_perf_t perf;
  if (o->perf_file) {
    kvsim_err err = {0};
    if (o->startup || o->all)
      return cli_fail("validate", "--perf goes with --measured or --silicon");
    if (kvsim_fidelity_perf_of_kernels(o->perf_file, &perf, &err) < 0)
      return cli_fail("validate", "--perf: %s", err.msg);
  }
  if (modes == 0)
    return cli_fail("validate", "--startup FILE is required (or --measured FILE SCENARIO.json, or --silicon FILE; "
                                "see kvsim validate --help)");
  if (modes > 1)
    return cli_fail("validate", "give only one of --startup, --measured, --silicon, --all");
  const char *alien = !o->silicon && o->terms ? "--terms goes with --silicon"
      : !o->silicon && (o->filters.n || o->gpus.n || o->range_seen) ? "--filter, --gpu and --range-ratio go with --silicon"
      : o->terms && (o->band || o->json) ? "--terms is the text report's (--json has them as decode_step_ms; not with --band)"
      : o->band && (o->startup || o->all) ? "--band goes with --measured or --silicon"
      : o->metas.n && !o->startup ? "--meta goes with --startup" : o->no_refit && !o->all ? "--no-refit goes with --all" : NULL;
  if (alien)
    return cli_fail("validate", "%s", alien);
  if (o->measured) {
    if (npos != 1)
      return cli_fail("validate", "--measured FILE needs the SCENARIO.json that replays it");
    return run_measured(o->measured, pos[0], &o->sets, o->series, o->perf_file, o->json, o->max_error, o->band);
  }
  if (npos)
    return cli_fail("validate", "unexpected argument '%s'", pos[0]);
  if (o->sets.n || o->series)
    return cli_fail("validate", "--set and --series go with --measured");
  if (o->silicon) {
    if (o->range_seen && !(o->range_ratio > 0 && o->range_ratio <= 1))
      return cli_fail("validate", "--range-ratio: %g must be in (0, 1]", o->range_ratio);
    return run_silicon(o, o->perf_file ? &perf : NULL);
  }
  return o->all ? run_all(o->no_refit, o->json) : run_startup(o->startup, &o->metas, o->json, o->max_error);
}

int cmd_validate(int argc, char **argv) {
  vopts_t o = {.max_error = -1, .range_ratio = KVSIM_FID_SIL_RANGE_RATIO};
  const cli_arg args[] = {
      {"--startup", ARG_PATH, &o.startup,
       "start-up log table (vllm_startup_logs.csv): logged vs kvsim KV budget per row", NULL},
      {"--meta", ARG_LIST, &o.metas, "with --startup: a run's meta.json (engine_kwargs, kv_cache, hardware) as one more row; repeatable", NULL},
      {"--measured", ARG_PATH, &o.measured, "measured run (LLMServingSim requests.jsonl, kvsim requests.csv, aiperf profile_export.jsonl, a vLLM or SGLang benchmark JSON); the scenario that replays it is the positional argument", NULL},
      {"--set", ARG_LIST, &o.sets, "with --measured: override a scenario key (repeatable)", NULL},
      {"--series", ARG_PATH, &o.series, "with --measured: measured time series (default: vllm/timeseries.csv beside requests.jsonl)", NULL},
      {"--silicon", ARG_PATH, &o.silicon,
       "fixed-concurrency table (AIConfigurator silicon CSV): each row reproduced by a closed-loop run", NULL},
      {"--filter", ARG_LIST, &o.filters,
       "with --silicon: keep rows with KEY=VALUE (model, gpu, or a column such as system, precision, tp_size); repeatable, the same key twice = either value", NULL},
      {"--gpu", ARG_LIST, &o.gpus,
       "with --silicon: a GPU JSON file replacing the catalog GPU of the same name (e.g. calibrated coefficients); repeatable", NULL},
      {"--perf", ARG_STR, &o.perf_file,
       "with --measured or --silicon: this kernel profile (configs/kernels NAME, e.g. h200) replaces every GPU's own tables, scaled to the GPU by its spec figures, as a GPU without tables of its own runs", NULL},
      {"--range-ratio", ARG_NUM, &o.range_ratio,
       "with --silicon: lengths uniform in [ratio x isl, isl] and [ratio x osl, osl] like the "
       "benchmark's random dataset (default the row's: its campaign's, else 0.8 vLLM, 1 SGLang)",
       &o.range_seen},
      {"--band", ARG_FLAG, &o.band, "with --measured or --silicon: coverage: is each measured mean TTFT/TPOT/E2E inside the range of runs at the band's edge step times", NULL},
      {"--terms", ARG_FLAG, &o.terms, "with --silicon: each row's mean decode step, and one prompt's prefill, by term", NULL},
      {"--all", ARG_FLAG, &o.all, "leave-one-group-out over ../shared/validation, run from the checkout", NULL},
      {"--no-refit", ARG_FLAG, &o.no_refit, "with --all: skip the passes on other GPUs' tables (the borrowed and spec-only bands)", NULL},
      {"--json", ARG_FLAG, &o.json, "print one JSON object", NULL},
      {"--max-error", ARG_NUM, &o.max_error,
       "exit 1 when the error exceeds this many percent (--startup, --silicon: median absolute error; "
       "--measured: any of TTFT/TPOT/E2E mean, p50, p99)",
       &o.max_error_seen},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("validate",
                     "--startup FILE [--meta FILE]... | --measured FILE SCENARIO.json [--set K=V]... "
                     "[--series FILE] [--perf GPU] | --silicon FILE [--filter K=V]... [--gpu FILE]... "
                     "[--perf GPU] [--range-ratio R] [--band] [--terms] | --all  [--json] [--max-error PCT]",
                     args, argc, argv, 2, pos, 1, &npos);
  return rc ? (rc == 1 ? 0 : rc) : dispatch(&o, pos, npos);
}
