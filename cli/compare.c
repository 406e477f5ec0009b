/* kvsim compare: candidate deployments x one workload x an SLO -> one table
 * (compare.csv), the plot's points (compare_sweep.csv), REPORT.md, and the
 * plots when gnuplot is present (the study room's compare). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "kvsim/study.h"

static void print_rows(const kvsim_compare_t *c, const kvsim_compare_result_t *res) {
  for (int i = 0; i < res->n; i++) {
    const kvsim_compare_row_t *r = &res->rows[i];
    if (r->rc < 0) {
      printf("  %-28s %s: %s\n", c->cand[i].label, r->rc == KVSIM_ENOFIT ? "does not fit" : "failed",
             r->error);
      continue;
    }
    printf("  %-28s goodput %.3g req/s [%.3g, %.3g]; ", c->cand[i].label, r->goodput,
           r->goodput_range[0], r->goodput_range[1]);
    if (isnan(r->replicas))
      printf("no replica count meets %g req/s", c->target_rate);
    else
      printf("%.0f replicas = %.0f GPUs, p99 TTFT %.3g s, TPOT %.3g s", r->replicas,
             r->replicas * r->gpus_per_replica, r->ttft_p99, r->tpot_p99);
    if (isfinite(r->cost_per_hour))
      printf(", $%.2f/h", r->cost_per_hour);
    printf(" (%s)\n", kvsim_cal_status_name(r->cal_status));
  }
}

/* The plots, when gnuplot is there: scripts/plot_compare.sh beside the
 * binary's source tree, or on PATH. A missing gnuplot is said, not an
 * error: the tables and REPORT.md do not need it. */
static void plot(const char *dir) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fprintf(stderr, "kvsim compare: gnuplot not found: no plots (the tables and REPORT.md are written)\n");
    return;
  }
  const char *script = getenv("KVSIM_PLOT_COMPARE");
  if (!script)
    script = access("scripts/plot_compare.sh", R_OK) == 0 ? "scripts/plot_compare.sh" : NULL;
  if (!script) {
    fprintf(stderr, "kvsim compare: scripts/plot_compare.sh not found here: run it on %s to plot\n", dir);
    return;
  }
  char cmd[8400];
  snprintf(cmd, sizeof cmd, "bash '%s' '%s'", script, dir);
  if (system(cmd) != 0)
    fprintf(stderr, "kvsim compare: %s failed on %s\n", script, dir);
}

int cmd_compare(int argc, char **argv) {
  int64_t jobs = 1;
  const char *out = NULL;
  double tol = 0.02;
  bool quiet = false, progress = false, no_plots = false;
  const cli_arg args[] = {
      {"--jobs", ARG_INT, &jobs, "candidates in parallel (processes; default 1)", NULL},
      {"--out", ARG_STR, &out, "output folder (default results/<study name>)", NULL},
      {"--tolerance", ARG_NUM, &tol, "relative precision of the goodput search (default 0.02)", NULL},
      {"--no-plots", ARG_FLAG, &no_plots, "do not run scripts/plot_compare.sh", NULL},
      {"--progress", ARG_FLAG, &progress, "one line per finished candidate on stderr even when not a terminal", NULL},
      {"--quiet", ARG_FLAG, &quiet, "no progress and no table on stdout", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("compare", "[STUDY.json] [--jobs N] [--out DIR]\n\n"
                     "Without STUDY.json runs the embedded default study (configs/studies/default.json).",
                     args, argc, argv, 2, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (jobs < 1 || jobs > 256)
    return cli_fail("compare", "--jobs: %lld must be in [1, 256]", (long long)jobs);
  if (!(tol > 0 && tol < 1))
    return cli_fail("compare", "--tolerance: %g must be in (0, 1)", tol);
  kvsim_err err = {0};
  static kvsim_compare_t c;
  rc = npos ? kvsim_compare_load(pos[0], &c, &err) : kvsim_compare_load_default(&c, &err);
  if (rc < 0)
    return cli_fail("compare", "%s", err.msg);
  char dir[4096], command[8400];
  snprintf(dir, sizeof dir, out ? "%s" : "results/%s", out ? out : c.name);
  snprintf(command, sizeof command, "kvsim compare%s%s --out %s", npos ? " " : "", npos ? pos[0] : "", dir);
  kvsim_progress_t pr;
  kvsim_progress_init(&pr, stderr,
                      quiet ? KVSIM_PROGRESS_NONE
                      : isatty(2) ? KVSIM_PROGRESS_LINE
                      : progress  ? KVSIM_PROGRESS_LINES
                                  : KVSIM_PROGRESS_NONE,
                      "compare", c.ncandidates, NULL);
  kvsim_compare_opts_t o = {dir, (int)jobs, tol, &pr, command};
  kvsim_compare_result_t res;
  rc = kvsim_compare_run(&c, &o, &res, &err);
  kvsim_progress_end(&pr);
  if (rc < 0) {
    kvsim_compare_result_fini(&res);
    kvsim_compare_fini(&c);
    return cli_fail("compare", "%s", err.msg);
  }
  if (!quiet) {
    printf("%s\n", res.answer);
    print_rows(&c, &res);
    printf("-> %s/compare.csv, %s/REPORT.md\n", dir, dir);
  }
  int failed = res.failed;
  kvsim_compare_result_fini(&res);
  kvsim_compare_fini(&c);
  if (!no_plots)
    plot(dir);
  return failed ? 1 : 0;
}
