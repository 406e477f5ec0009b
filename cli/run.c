/* kvsim run: simulate a scenario and write timeseries.csv, requests.csv and
 * summary.json. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "core/arith.h"
#include "kvsim/openmetrics.h"
#include "kvsim/report.h"
#include "kvsim/study.h"

static void print_bench(const struct timespec *t0, const kvsim_summary_t *s) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double wall = (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  fprintf(stderr,
          "{\"requests\": %lld, \"wall_s\": %.3f, \"requests_per_wall_s\": %.0f, "
          "\"peak_rss_mb\": %.1f, \"steps\": %lld, \"sequence_steps\": %lld}\n",
          (long long)s->requests_total, wall, (double)s->requests_total / wall,
          (double)ru.ru_maxrss / 1024.0, (long long)s->steps, (long long)s->sequence_steps);
}

/* The default folder: results/<name>/, and with --set overrides
 * results/<name>+<8 hex digits of a hash of the overrides, in order>/, so
 * that a run with other settings never overwrites another's results. */
static void default_dir(const char *name, const cli_list *sets, char *dir, size_t cap) {
  if (!sets->n) {
    snprintf(dir, cap, "results/%s", name);
    return;
  }
  uint64_t h = 0xcbf29ce484222325u; /* FNV-1a, then mixed */
  for (int i = 0; i < sets->n; i++)
    for (const char *c = sets->items[i];; c++) {
      h = (h ^ (unsigned char)*c) * 0x100000001b3u;
      if (!*c)
        break;
    }
  snprintf(dir, cap, "results/%s+%08llx", name, (unsigned long long)(kvsim__mix64(h) >> 32));
}

/* The run failed: what it wrote goes, and the folders it made. */
static int fail_undo(kvsim_new_dirs_t *made, char (*paths)[4200], const int *slots, int n,
                     const kvsim_err *err) {
  for (int i = 0; i < n; i++) {
    if (made->top)
      remove(paths[i]);
    kvsim_report_untrack(slots[i]);
  }
  kvsim_report_new_dirs_undo(made);
  return cli_fail("run", "%s", err->msg);
}

int cmd_run(int argc, char **argv) {
  cli_list sets = {0};
  const char *out = NULL, *openmetrics = NULL;
  double om_start = KVSIM_OPENMETRICS_DEFAULT_START;
  bool quiet = false, progress = false, check = false, print_summary = false, bench = false;
  bool no_verify = false, no_band = false, report = false;
  const cli_arg args[] = {
      {"--set", ARG_LIST, &sets, "override a scenario key: --set engine.max_num_seqs=128 (repeatable)", NULL},
      {"--out", ARG_PATH, &out, "output folder (default results/<scenario name>, with --set results/<name>+<hash of the overrides>)", NULL},
      {"--quiet", ARG_FLAG, &quiet, "no progress line and no result line", NULL},
      {"--progress", ARG_FLAG, &progress, "progress line on stderr even when not a terminal", NULL},
      {"--check-invariants", ARG_FLAG, &check, "check after every step what it touched (its requests' blocks, the free-queue ends), and the whole pool when sampled (about the run's own cost)", NULL},
      {"--summary", ARG_FLAG, &print_summary, "print summary.json to stdout", NULL},
      {"--no-verify-advice", ARG_FLAG, &no_verify, "do not re-run the scenario with each change the diagnosis advises (summary.json then lists the advice unmeasured)", NULL},
      {"--no-band", ARG_FLAG, &no_band, "one run only: skip the two runs with step times at the band's edges (no *_range figures)", NULL},
      {"--report", ARG_FLAG, &report, "also write REPORT.md (one page: the question, the answer with ranges, figures, plan, diagnosis)", NULL},
      CLI_MEMORY_BUDGET_ARG,
      {"--openmetrics", ARG_PATH, &openmetrics, "also write the time series as OpenMetrics text under vLLM's metric names (promtool tsdb create-blocks-from openmetrics FILE)", NULL},
      {"--openmetrics-start", ARG_NUM, &om_start, "with --openmetrics: wall-clock time of simulated t = 0, seconds since the epoch (default 1735689600, 2025-01-01T00:00:00Z)", NULL},
      {"--bench", ARG_FLAG, &bench, "print wall time (all runs: the band's three, the advice's), simulated requests per wall-second and peak RSS (JSON) to stderr", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("run", "[SCENARIO.json] [--set KEY=VAL]... [--out DIR] [--quiet] [--no-band] [--openmetrics FILE]\n\n"
                     "Without SCENARIO.json runs the embedded default study (configs/scenarios/default.json).",
                     args, argc, argv, 2, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (om_start != KVSIM_OPENMETRICS_DEFAULT_START && !openmetrics)
    return cli_fail("run", "--openmetrics-start goes with --openmetrics FILE");
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* --check-invariants, and debug builds always (CONTRIBUTING.md, "Layout"):
   * each step checks what it touched, the whole pool when sampled (2). */
  kvsim_study_run_opts_t opts = {NULL, !quiet && (progress || isatty(2)), check ? 2 : 0};
#ifdef KVSIM_CHECK_INVARIANTS
  opts.check = 2;
#endif
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  rc = npos ? kvsim_scenario_load(pos[0], sets.items, sets.n, &sc, &err)
            : kvsim_scenario_load_default(sets.items, sets.n, &sc, &err);
  if (rc < 0)
    return cli_fail("run", "%s", err.msg);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", out ? out : "");
  if (!out)
    default_dir(sc.name, &sets, dir, sizeof dir);
  opts.dir = dir;
  /* A run that fails or is stopped leaves no folder it made itself: its
   * outputs are removed with it (in a folder that existed, a failed run
   * leaves no temporary files, and the files it replaced are gone). */
  kvsim_new_dirs_t made;
  kvsim_report_new_dirs(dir, &made);
  static const char *const outputs[] = {"timeseries.csv", "requests.csv", "summary.json",
                                        "REPORT.md"};
  enum { NOUT = sizeof outputs / sizeof *outputs };
  char paths[NOUT][4200];
  int slots[NOUT];
  for (int i = 0; i < NOUT; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/%s", dir, outputs[i]);
    slots[i] = made.top ? kvsim_report_track(paths[i]) : -1;
  }
  kvsim_summary_t *s = malloc(sizeof *s);
  if (!s)
    kvsim_err_set(&err, KVSIM_ENOMEM, "out of memory");
  /* One process per core runs the band's edges and re-runs the advised changes. */
  if (!s || (no_verify ? kvsim_study_run_band(&sc, &opts, !no_band, s, &err)
                       : kvsim_study_run_verified(&sc, &opts, !no_band, kvsim_study_cores(), s, &err)) < 0) {
    kvsim_scenario_fini(&sc);
    free(s);
    return fail_undo(&made, paths, slots, NOUT, &err);
  }
  if (print_summary) {
    cJSON *j = kvsim_summary_json(s, &sc);
    char *text = kvsim_report_json_string(j);
    puts(text);
    free(text);
    cJSON_Delete(j);
  } else if (!quiet) {
    char line[1024];
    kvsim_summary_run_line(s, dir, line, sizeof line);
    puts(line);
    if (kvsim_summary_steady_warning(s, line, sizeof line))
      fprintf(stderr, "%s\n", line);
  }
  if (bench)
    print_bench(&t0, s);
  rc = report ? kvsim_report_md_run_write(&sc, s, dir, NULL, &err) : 0;
  if (rc == 0 && openmetrics)
    rc = kvsim_openmetrics_write_run(dir, &sc, om_start, openmetrics, &err);
  /* Printed output cut short (a reader that went away with SIGPIPE
   * ignored, a full disk) fails the run as SIGPIPE itself would. */
  errno = 0;
  if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
    rc = kvsim_err_set(&err, KVSIM_EIO, "standard output: write failed%s%s", errno ? ": " : "",
                       errno ? strerror(errno) : "");
  kvsim_scenario_fini(&sc);
  free(s);
  if (rc < 0)
    return fail_undo(&made, paths, slots, NOUT, &err);
  for (int i = 0; i < NOUT; i++)
    kvsim_report_untrack(slots[i]);
  kvsim_report_new_dirs_keep(&made);
  return 0;
}
