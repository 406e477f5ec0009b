/* kvsim plan: search the arrival rate, replica count or memory utilization
 * at which a scenario meets its latency SLO (the study room's search). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "kvsim/report.h"
#include "kvsim/study.h"

/* Each point tried: its line, above the progress line a terminal shows
 * (erased, then redrawn after it). */
static void on_point(void *ctx, const kvsim_search_t *se, const kvsim_search_point_t *p) {
  kvsim_progress_t *pr = ctx;
  if (pr->mode == KVSIM_PROGRESS_LINE)
    fputs("\r\033[K", stderr);
  if (p->ran)
    kvsim_search_point_print(se, p, stderr);
  kvsim_progress_step(pr, NULL, NULL, !p->ran);
}

int cmd_plan(int argc, char **argv) {
  cli_list sets = {0};
  const char *slo = NULL, *what = "rate";
  bool json = false, quiet = false;
  double tol = 0.02;
  static kvsim_search_t se;
  const cli_arg args[] = {
      {"--slo", ARG_STR, &slo, "targets, e.g. ttft_p99=2s,tpot_p99=100ms (metrics ttft, tpot, e2e, queue; p50, p90, p99, mean)", NULL},
      {"--search", ARG_STR, &what, "rate (highest arrival rate), replicas (fewest), util (lowest share of GPU memory: the profile's own key)", NULL},
      {"--set", ARG_LIST, &sets, "override a scenario key (repeatable)", NULL},
      {"--tolerance", ARG_NUM, &tol, "relative precision of the rate search (default 0.02)", NULL},
      {"--no-range", ARG_FLAG, &se.no_range, "skip the re-runs at the step-time band's edges (no range)", NULL},
      CLI_MEMORY_BUDGET_ARG,
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {"--quiet", ARG_FLAG, &quiet, "do not list each simulated point on stderr", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("plan", "SCENARIO.json --slo ttft_p99=2s,tpot_p99=100ms [--search rate|replicas|util]",
                     args, argc, argv, 2, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (npos != 1)
    return cli_fail("plan", "expected one SCENARIO.json (see kvsim plan --help)");
  if (!slo)
    return cli_fail("plan", "--slo is required (e.g. --slo ttft_p99=2s,tpot_p99=100ms)");
  if (!(tol >= KVSIM_SEARCH_MIN_TOLERANCE && tol < 1))
    return cli_fail("plan", "--tolerance: %g must be in [%g, 1)", tol, KVSIM_SEARCH_MIN_TOLERANCE);
  se.tolerance = tol;
  /* Off a terminal the points' lines are the progress (as they always
   * were); on one, a line below them counts simulations and failures (a
   * search does not know its length in advance: no ETA). */
  kvsim_progress_t pr;
  kvsim_progress_init(&pr, stderr, isatty(2) ? KVSIM_PROGRESS_LINE : KVSIM_PROGRESS_NONE, "plan", 0, NULL);
  se.on_point = quiet ? NULL : on_point;
  se.ctx = &pr;
  kvsim_err err = {0};
  if (kvsim_search_parse_slo(slo, &se, &err) < 0)
    return cli_fail("plan", "%s", err.msg);
  if (!strcmp(what, "rate"))
    se.kind = KVSIM_SEARCH_RATE;
  else if (!strcmp(what, "replicas"))
    se.kind = KVSIM_SEARCH_REPLICAS;
  else if (!strcmp(what, "util"))
    se.kind = KVSIM_SEARCH_UTIL;
  else
    return cli_fail("plan", "--search: unknown '%s' (rate, replicas, util)", what);

  /* The scenario is parsed once; each point runs a copy with one override. */
  kvsim_scenario_t sc;
  if (kvsim_scenario_load(pos[0], sets.items, sets.n, &sc, &err) < 0)
    return cli_fail("plan", "%s", err.msg);
  se.base = &sc;
  rc = kvsim_search_run_stoppable(&se, pos[0], pr.mode == KVSIM_PROGRESS_LINE, &err);
  kvsim_progress_end(&pr);
  kvsim_scenario_fini(&sc);
  if (rc < 0)
    return cli_fail("plan", "%s", err.msg);
  if (json) {
    cJSON *j = kvsim_search_json(&se, what, slo);
    char *text = j ? kvsim_report_json_string(j) : NULL;
    if (text)
      puts(text);
    free(text);
    cJSON_Delete(j);
  } else {
    char sum[1024];
    kvsim_search_summary(&se, slo, sum, sizeof sum);
    puts(sum);
  }
  return isnan(se.best) ? 1 : 0;
}
