/* kvsim compare: candidate deployments x one workload x an SLO -> one table
 * (compare.csv), the plot's points (compare_sweep.csv) and REPORT.md (the
 * study room's compare); scripts/plot_compare.sh DIR draws the plots. */
#include <stdio.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "kvsim/deploy.h"
#include "kvsim/study.h"

int cmd_compare(int argc, char **argv) {
  int64_t jobs = kvsim_study_cores();
  const char *out = NULL;
  double tol = 0.02;
  bool quiet = false, progress = false;
  const cli_arg args[] = {
      {"--jobs", ARG_INT, &jobs, "candidates in parallel (processes; default: the core count)", NULL},
      {"--out", ARG_PATH, &out, "output folder (default results/<study name>)", NULL},
      {"--tolerance", ARG_NUM, &tol, "relative precision of the goodput search (default 0.02)", NULL},
      {"--progress", ARG_FLAG, &progress, "one line per finished candidate on stderr even when not a terminal", NULL},
      {"--quiet", ARG_FLAG, &quiet, "no progress and no table on stdout", NULL},
      CLI_MEMORY_BUDGET_ARG,
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("compare", "[STUDY.json] [--jobs N] [--out DIR]\n\n"
                     "Without STUDY.json runs the embedded default study (configs/studies/default.json).\n"
                     "A study with a search block searches deployments: search.csv, REPORT.md.",
                     args, argc, argv, 2, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (jobs < 1 || jobs > 256)
    return cli_fail("compare", "--jobs: %lld must be in [1, 256]", (long long)jobs);
  if (!(tol >= KVSIM_SEARCH_MIN_TOLERANCE && tol < 1))
    return cli_fail("compare", "--tolerance: %g must be in [%g, 1)", tol,
                    KVSIM_SEARCH_MIN_TOLERANCE);
  kvsim_err err = {0};
  static kvsim_compare_t c;
  rc = npos ? kvsim_compare_load(pos[0], &c, &err) : kvsim_compare_load_default(&c, &err);
  if (rc < 0)
    return cli_fail("compare", "%s", err.msg);
  char dir[4096], command[8400];
  snprintf(dir, sizeof dir, out ? "%s" : "results/%s", out ? out : c.name);
  snprintf(command, sizeof command, "kvsim compare%s%s --out %s", npos ? " " : "", npos ? pos[0] : "", dir);
  kvsim_progress_t pr;
  kvsim_progress_mode mode = quiet ? KVSIM_PROGRESS_NONE : isatty(2) ? KVSIM_PROGRESS_LINE : progress ? KVSIM_PROGRESS_LINES : KVSIM_PROGRESS_NONE;
  kvsim_progress_init(&pr, stderr, mode, "compare", c.search ? c.nconfigs : c.ncandidates, NULL);
  kvsim_compare_opts_t o = {dir, (int)jobs, tol, &pr, command};
  if (c.search) { /* a deployment search (kvsim/deploy.h) */
    kvsim_deploy_result_t dr;
    rc = kvsim_deploy_run(&c, &o, &dr, &err);
    kvsim_progress_end(&pr);
    if (rc == 0 && !quiet)
      kvsim_deploy_print(&c, &dr, dir, stdout);
    kvsim_deploy_result_fini(&dr);
    kvsim_compare_fini(&c);
    return rc < 0 ? cli_fail("compare", "%s", err.msg) : 0;
  }
  kvsim_compare_result_t res;
  rc = kvsim_compare_run(&c, &o, &res, &err);
  kvsim_progress_end(&pr);
  if (rc < 0) {
    kvsim_compare_result_fini(&res);
    kvsim_compare_fini(&c);
    return cli_fail("compare", "%s", err.msg);
  }
  if (!quiet)
    kvsim_compare_print(&c, &res, dir, stdout);
  int failed = res.failed;
  kvsim_compare_result_fini(&res);
  kvsim_compare_fini(&c);
  return failed ? 1 : 0;
}
