/* kvsim sweep: run a grid of variations of one scenario (in parallel
 * processes) and write one comparison table, sweep.csv (the study room's
 * sweep); --merge joins the tables of shards run on several machines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "kvsim/report.h"
#include "kvsim/study.h"

#define MAX_SHARD_DIRS 4096

static int merge(const char *const *dirs, int ndirs, const char *out) {
  kvsim_err err = {0};
  char table[4200];
  if (kvsim_sweep_merge(dirs, ndirs, out, table, sizeof table, &err) < 0)
    return cli_fail("sweep", "%s", err.msg); /* it names --merge or --out */
  printf("%s: joined from %d folder%s\n", table, ndirs, ndirs == 1 ? "" : "s");
  return 0;
}

/* One machine's sweep (or its shard), with its progress and result lines. */
static int run(const char *file, int jobs, const char *shard_s, const char *out, bool keep, bool report,
               bool quiet, bool progress, bool allow_failures) {
  kvsim_sweep_opts_t opts = {.jobs = jobs, .shard = 0, .nshards = 1, .keep_runs = keep};
  kvsim_err err = {0};
  if (shard_s && kvsim_sweep_parse_shard(shard_s, &opts.shard, &opts.nshards, &err) < 0)
    return cli_fail("sweep", "%s", err.msg);
  kvsim_sweep_t s;
  if (kvsim_sweep_load(file, &s, &err) < 0)
    return cli_fail("sweep", "%s", err.msg);
  char dir[4096];
  snprintf(dir, sizeof dir, out ? "%s" : "results/%s", out ? out : s.name);
  opts.out = dir;
  kvsim_progress_t pr;
  kvsim_progress_mode mode = quiet ? KVSIM_PROGRESS_NONE
                             : isatty(2) ? KVSIM_PROGRESS_LINE
                             : progress  ? KVSIM_PROGRESS_LINES
                                         : KVSIM_PROGRESS_NONE;
  int64_t mine = s.points > opts.shard ? (s.points - opts.shard + opts.nshards - 1) / opts.nshards : 0;
  kvsim_progress_init(&pr, stderr, mode, "sweep", mine, NULL);
  opts.progress = &pr;
  opts.report_from = report ? file : NULL; /* written before the sweep counts as done */
  kvsim_sweep_result_t res;
  int rc = kvsim_sweep_run(&s, &opts, &res, &err);
  kvsim_progress_end(&pr);
  kvsim_sweep_fini(&s);
  if (rc < 0) {
    kvsim_sweep_result_fini(&res);
    return cli_fail("sweep", "%s", err.msg);
  }
  /* --quiet (a job script's, a loop's): silent when every run fitted and
   * ran, as `run --quiet` prints no result line; what went wrong is still
   * said. */
  int64_t failed = res.failed, bad = res.failed + res.no_fit;
  if (!quiet || bad)
    printf("%s: %lld run%s failed or did not fit (see the error column)\n", res.table,
           (long long)bad, bad == 1 ? "" : "s");
  kvsim_sweep_result_fini(&res);
  if (failed && !allow_failures) {
    fprintf(stderr,
            "kvsim sweep: error: %lld run%s failed (see the error column; --allow-failures to "
            "exit 0)\n",
            (long long)failed, failed == 1 ? "" : "s");
    return 1;
  }
  return 0;
}

int cmd_sweep(int argc, char **argv) {
  int64_t jobs = kvsim_study_cores();
  const char *out = NULL, *shard_s = NULL;
  bool allow_failures = false, do_merge = false, progress = false, quiet = false, keep = false,
       report = false, jobs_seen = false;
  const cli_arg args[] = {
      {"--jobs", ARG_INT, &jobs, "runs in parallel (processes; default: the core count)", &jobs_seen},
      {"--out", ARG_PATH, &out, "output folder (default results/<sweep name>)", NULL},
      {"--shard", ARG_STR, &shard_s,
       "I/N: run only runs I, I+N, I+2N, ... (0 <= I < N; for several machines)", NULL},
      {"--merge", ARG_FLAG, &do_merge,
       "join shards: kvsim sweep --merge DIR... [--out DIR] writes the one-machine sweep.csv",
       NULL},
      {"--keep-runs", ARG_FLAG, &keep,
       "keep each run's timeseries.csv and requests.csv in runNNNN/ (default: only its "
       "summary.json)",
       NULL},
      {"--progress", ARG_FLAG, &progress,
       "one line per finished run on stderr even when it is not a terminal", NULL},
      {"--quiet", ARG_FLAG, &quiet,
       "no progress on stderr, and no result line unless runs failed or did not fit", NULL},
      {"--report", ARG_FLAG, &report,
       "also write REPORT.md (one page: the points meeting the SLO, the table)", NULL},
      CLI_MEMORY_BUDGET_ARG,
      {"--allow-failures", ARG_FLAG, &allow_failures,
       "exit 0 even when runs failed (a plan that does not fit is a row, never a failure)", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  static const char *pos[MAX_SHARD_DIRS];
  int npos;
  int rc = cli_parse("sweep", "SWEEP.json [--jobs N] [--out DIR] [--shard I/N] [--keep-runs] | --merge DIR... [--out DIR]",
                     args, argc, argv, 2, pos, MAX_SHARD_DIRS, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  /* Run flags mean nothing to a merge (an explicit --jobs 1 too); DESIGN.md's
   * merge takes the folders and --out only, so --quiet is one of them. */
  const char *run_flag = shard_s          ? "--shard"
                         : keep           ? "--keep-runs"
                         : jobs_seen      ? "--jobs"
                         : report         ? "--report"
                         : allow_failures ? "--allow-failures"
                         : progress       ? "--progress"
                         : quiet          ? "--quiet"
                         : cli_budget_seen ? "--memory-budget"
                                          : NULL;
  if (do_merge && run_flag)
    return cli_fail("sweep", "--merge: takes the shards' folders and --out only, not %s", run_flag);
  if (do_merge)
    return npos ? merge(pos, npos, out) : cli_fail("sweep", "--merge: expected the shards' folders (DIR...)");
  if (npos != 1)
    return cli_fail("sweep", "expected one SWEEP.json (see kvsim sweep --help)");
  if (jobs < 1 || jobs > 256)
    return cli_fail("sweep", "--jobs: %lld must be in [1, 256]", (long long)jobs);
  return run(pos[0], (int)jobs, shard_s, out, keep, report, quiet, progress, allow_failures);
}
