/* kvsim run: simulate a scenario and write timeseries.csv, requests.csv and
 * summary.json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "kvsim/report.h"
#include "runner.h"

/* One line for a terminal: where the results are and the headline figures,
 * with the calibration's +/- band when the GPU has one. */
static void print_line(const cli_run_result *r, const char *dir) {
  const cJSON *s = r->summary;
  double ttft50 = cli_summary_num(s, "latency.ttft_s.p50"), ttft99 = cli_summary_num(s, "latency.ttft_s.p99");
  double band = cli_summary_num(s, "latency.uncertainty.ttft_p99_s");
  char pm[48] = "";
  if (!isnan(band) && band > 0)
    snprintf(pm, sizeof pm, " +/- %.3f s", band);
  printf("%s: %lld requests (%lld finished, %lld rejected) in %.1f s simulated; TTFT p50 %.3f s, "
         "p99 %.3f s%s; TPOT p50 %.4f s; KV peak %.1f%%; %lld preemptions -> %s/\n",
         r->name, (long long)r->stats.requests_arrived, (long long)r->stats.requests_finished,
         (long long)r->stats.requests_rejected, kvsim_time_to_s(r->stats.end_time), ttft50, ttft99, pm,
         cli_summary_num(s, "latency.tpot_s.p50"), 100 * r->stats.kv_usage_peak,
         (long long)r->stats.preemptions, dir);
}

int cmd_run(int argc, char **argv) {
  cli_list sets = {0};
  const char *out = NULL;
  bool quiet = false, progress = false, check = false, print_summary = false, bench = false;
  const cli_arg args[] = {
      {"--set", ARG_LIST, &sets, "override a scenario key: --set engine.max_num_seqs=128 (repeatable)", NULL},
      {"--out", ARG_STR, &out, "output folder (default results/<scenario name>)", NULL},
      {"--quiet", ARG_FLAG, &quiet, "no progress line and no result line", NULL},
      {"--progress", ARG_FLAG, &progress, "progress line on stderr even when not a terminal", NULL},
      {"--check-invariants", ARG_FLAG, &check, "check after every step what it touched (its requests' blocks, the free-queue ends), and the whole pool when sampled (about the run's own cost)", NULL},
      {"--summary", ARG_FLAG, &print_summary, "print summary.json to stdout", NULL},
      {"--bench", ARG_FLAG, &bench, "print wall time, simulated requests per wall-second and peak RSS (JSON) to stderr", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("run", "[SCENARIO.json] [--set KEY=VAL]... [--out DIR] [--quiet]\n\n"
                     "Without SCENARIO.json runs the embedded default study (configs/scenarios/default.json).",
                     args, argc, argv, 2, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int check_mode = check ? 1 : 0;
#ifdef KVSIM_CHECK_INVARIANTS
  /* Debug builds check the invariants as they run (DESIGN.md section 6),
   * as --check-invariants does in any build. */
  if (!check)
    check_mode = 2;
#endif
  bool show = !quiet && (progress || isatty(2));
  kvsim_err err = {0};
  cli_run_result res;
  rc = cli_run_scenario(npos ? pos[0] : NULL, sets.items, sets.n, out ? out : "", show, check_mode, &res,
                        &err);
  if (rc < 0)
    return cli_fail("run", "%s", err.msg);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", out ? out : "results/");
  if (!out)
    snprintf(dir, sizeof dir, "results/%s", res.name);
  if (print_summary) {
    char *s = kvsim_report_json_string(res.summary);
    puts(s);
    free(s);
  } else if (!quiet) {
    print_line(&res, dir);
  }
  if (bench) {
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr,
            "{\"requests\": %lld, \"wall_s\": %.3f, \"requests_per_wall_s\": %.0f, "
            "\"peak_rss_mb\": %.1f, \"steps\": %lld}\n",
            (long long)res.stats.requests_arrived, wall, (double)res.stats.requests_arrived / wall,
            (double)ru.ru_maxrss / 1024.0, (long long)res.stats.steps);
  }
  cli_run_result_fini(&res);
  return 0;
}
