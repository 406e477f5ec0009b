/* kvsim run: simulate a scenario and write timeseries.csv, requests.csv and
 * summary.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "kvsim/engine.h"
#include "kvsim/report.h"
#include "kvsim/run_output.h"
#include "kvsim/scenario.h"

int cmd_run(int argc, char **argv) {
  cli_list sets = {0};
  const char *out = NULL;
  bool quiet = false, progress = false, check = false, print_summary = false, bench = false;
  const cli_arg args[] = {
      {"--set", ARG_LIST, &sets, "override a scenario key: --set engine.max_num_seqs=128 (repeatable)", NULL},
      {"--out", ARG_STR, &out, "output folder (default results/<scenario name>)", NULL},
      {"--quiet", ARG_FLAG, &quiet, "no progress line and no result line", NULL},
      {"--progress", ARG_FLAG, &progress, "progress line on stderr even when not a terminal", NULL},
      {"--check-invariants", ARG_FLAG, &check, "check pool and request invariants after every step (slow)", NULL},
      {"--summary", ARG_FLAG, &print_summary, "print summary.json to stdout", NULL},
      {"--bench", ARG_FLAG, &bench, "print wall time, simulated requests per wall-second and peak RSS (JSON) to stderr", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("run", "SCENARIO.json [--set KEY=VAL]... [--out DIR] [--quiet]", args, argc,
                     argv, 2, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (npos != 1)
    return cli_fail("run", "expected one SCENARIO.json (see kvsim run --help)");

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  if (kvsim_scenario_load(pos[0], sets.items, sets.n, &sc, &err) < 0)
    return cli_fail("run", "%s", err.msg);
  char dir[4096];
  if (out)
    snprintf(dir, sizeof dir, "%s", out);
  else
    snprintf(dir, sizeof dir, "results/%s", sc.name);
#ifdef KVSIM_CHECK_INVARIANTS
  check = true;
#endif
  kvsim_run_output_t *o = NULL;
  bool show = !quiet && (progress || isatty(2));
  if (kvsim_run_output_open(dir, &sc, show, &o, &err) < 0) {
    kvsim_run_output_close(o);
    kvsim_scenario_fini(&sc);
    return cli_fail("run", "%s", err.msg);
  }
  kvsim_sink_t sink = kvsim_run_output_sink(o);
  kvsim_run_opts_t opts = {.check_invariants = check};
  kvsim_run_stats_t st;
  rc = kvsim_run(&sc, &opts, &sink, &st, &err);
  if (show)
    fputs("\r\033[K", stderr);
  if (rc == KVSIM_OK)
    rc = kvsim_run_output_finish(o, &st, true, &err);
  if (rc < 0) {
    kvsim_run_output_close(o);
    kvsim_scenario_fini(&sc);
    return cli_fail("run", "%s", err.msg);
  }
  const cJSON *sum = kvsim_run_output_summary(o);
  if (print_summary) {
    char *s = kvsim_report_json_string(sum);
    puts(s);
    free(s);
  } else if (!quiet) {
    const cJSON *lat = cJSON_GetObjectItem(sum, "latency");
    const cJSON *ttft = cJSON_GetObjectItem(lat, "ttft_s"), *tpot = cJSON_GetObjectItem(lat, "tpot_s");
    printf("%s: %lld requests (%lld finished, %lld rejected) in %.1f s simulated; "
           "TTFT p50 %.3f s p99 %.3f s; TPOT p50 %.4f s; KV peak %.1f%%; %lld preemptions -> %s/\n",
           sc.name, (long long)st.requests_arrived, (long long)st.requests_finished,
           (long long)st.requests_rejected, kvsim_time_to_s(st.end_time),
           cJSON_GetObjectItem(ttft, "p50")->valuedouble, cJSON_GetObjectItem(ttft, "p99")->valuedouble,
           cJSON_GetObjectItem(tpot, "p50")->valuedouble, 100 * st.kv_usage_peak,
           (long long)st.preemptions, dir);
  }
  kvsim_run_output_close(o);
  kvsim_scenario_fini(&sc);
  if (bench) {
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr,
            "{\"requests\": %lld, \"wall_s\": %.3f, \"requests_per_wall_s\": %.0f, "
            "\"peak_rss_mb\": %.1f, \"steps\": %lld}\n",
            (long long)st.requests_arrived, wall, (double)st.requests_arrived / wall,
            (double)ru.ru_maxrss / 1024.0, (long long)st.steps);
  }
  return 0;
}
