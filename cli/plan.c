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

static const char *const metric_names[] = {"ttft", "tpot", "e2e", "queue"};
static const char *const stat_names[] = {"mean", "p50", "p90", "p99"};

/* "ttft_p99=2s,tpot_p99=100ms" -> targets. */
static int parse_slo(const char *s, kvsim_search_t *se) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (se->ntargets == KVSIM_SLO_MAX_TARGETS)
      return cli_fail("plan", "--slo: at most %d targets", KVSIM_SLO_MAX_TARGETS);
    kvsim_slo_target_t *t = &se->targets[se->ntargets];
    char *eq = strchr(tok, '='), *us = strchr(tok, '_');
    if (!eq || !us || us > eq)
      return cli_fail("plan", "--slo: '%s' is not METRIC_STAT=VALUE (e.g. ttft_p99=2s)", tok);
    *us = *eq = '\0';
    if (kvsim_metric_parse(tok, &t->metric) < 0)
      return cli_fail("plan", "--slo: unknown metric '%s' (ttft, tpot, e2e, queue)", tok);
    if (kvsim_stat_parse(us + 1, &t->stat) < 0)
      return cli_fail("plan", "--slo: unknown statistic '%s' (p50, p90, p99, mean)", us + 1);
    char *end;
    double v = strtod(eq + 1, &end);
    double unit = !strcmp(end, "ms") ? 1e-3 : !strcmp(end, "us") ? 1e-6 : (!*end || !strcmp(end, "s")) ? 1 : -1;
    if (end == eq + 1 || unit < 0 || !(v > 0))
      return cli_fail("plan", "--slo: bad value '%s' (a positive number with s, ms or us)", eq + 1);
    t->limit_s = v * unit;
    se->ntargets++;
  }
  if (!se->ntargets)
    return cli_fail("plan", "--slo: no target given");
  return 0;
}

static void target_key(const kvsim_slo_target_t *t, char *buf, size_t cap) {
  snprintf(buf, cap, "%s_%s_s", metric_names[t->metric], stat_names[t->stat]);
}

static void list_point(const kvsim_search_t *se, const kvsim_search_point_t *p) {
  fprintf(stderr, "  %s = %-10.6g", se->key, p->value);
  for (int i = 0; i < se->ntargets; i++)
    fprintf(stderr, " %s_%s %.4g s", metric_names[se->targets[i].metric],
            stat_names[se->targets[i].stat], p->actual[i]);
  fprintf(stderr, " -> %s%s%s\n", p->meets ? "meets" : "misses", p->note[0] ? ": " : "", p->note);
}

/* Each point tried: its line, above the progress line a terminal shows
 * (erased, then redrawn after it). */
static void on_point(void *ctx, const kvsim_search_t *se, const kvsim_search_point_t *p) {
  kvsim_progress_t *pr = ctx;
  if (pr->mode == KVSIM_PROGRESS_LINE)
    fputs("\r\033[K", stderr);
  if (p->ran)
    list_point(se, p);
  kvsim_progress_step(pr, NULL, NULL, !p->ran);
}

static void add_num(cJSON *o, const char *k, double v) {
  if (isnan(v))
    cJSON_AddNullToObject(o, k);
  else
    cJSON_AddNumberToObject(o, k, v);
}

static void print_json(const kvsim_search_t *se, const char *what, const char *slo) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "search", what);
  cJSON_AddStringToObject(o, "key", se->key);
  cJSON *t = cJSON_AddObjectToObject(o, "slo");
  char k[32];
  for (int i = 0; i < se->ntargets; i++) {
    target_key(&se->targets[i], k, sizeof k);
    cJSON_AddNumberToObject(t, k, se->targets[i].limit_s);
  }
  cJSON *pts = cJSON_AddArrayToObject(o, "points");
  for (int i = 0; i < se->npoints; i++) {
    const kvsim_search_point_t *pt = &se->points[i];
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "value", se->base_value > 0 ? se->base_value * pt->x : pt->x);
    cJSON_AddBoolToObject(p, "meets", pt->meets);
    for (int j = 0; j < se->ntargets && pt->ran; j++) {
      target_key(&se->targets[j], k, sizeof k);
      cJSON_AddNumberToObject(p, k, pt->actual[j]);
    }
    if (pt->note[0])
      cJSON_AddStringToObject(p, "note", pt->note);
    cJSON_AddItemToArray(pts, p);
  }
  add_num(o, "best", se->best); /* the older name of value */
  add_num(o, "value", se->best);
  cJSON_AddStringToObject(o, "unit", se->unit);
  cJSON *r = cJSON_AddArrayToObject(o, "range");
  for (int i = 0; i < 2; i++)
    cJSON_AddItemToArray(r, isnan(se->range[i]) ? cJSON_CreateNull() : cJSON_CreateNumber(se->range[i]));
  cJSON *bs = cJSON_AddArrayToObject(o, "band_step_time_scales");
  for (int i = 0; i < 2; i++)
    cJSON_AddItemToArray(bs, cJSON_CreateNumber(se->band_scale[i]));
  /* rate: relative; util: absolute (the search's 0.005); replicas: exact. */
  cJSON_AddNumberToObject(o, "tolerance", se->kind == KVSIM_SEARCH_RATE ? se->tolerance
                                          : se->kind == KVSIM_SEARCH_UTIL ? 0.005 : 0);
  cJSON_AddStringToObject(o, "tolerance_unit", se->kind == KVSIM_SEARCH_RATE ? "relative" : se->unit);
  cJSON_AddBoolToObject(o, "slo_met", !isnan(se->best));
  if (se->kind == KVSIM_SEARCH_RATE) {
    add_num(o, "factor", se->factor);
    cJSON_AddNumberToObject(o, "base_rate", se->base_value);
  }
  if (se->kind == KVSIM_SEARCH_REPLICAS) {
    cJSON_AddNumberToObject(o, "gpus_per_replica", se->gpus_per_replica);
    add_num(o, "gpus", se->best * se->gpus_per_replica);
  }
  cJSON_AddNumberToObject(o, "simulations", se->npoints + se->range_points);
  char sum[1024];
  kvsim_search_summary(se, slo, sum, sizeof sum);
  cJSON_AddStringToObject(o, "summary", sum);
  char *s = kvsim_report_json_string(o);
  puts(s);
  free(s);
  cJSON_Delete(o);
}

int cmd_plan(int argc, char **argv) {
  cli_list sets = {0};
  const char *slo = NULL, *what = "rate";
  bool json = false, quiet = false;
  double tol = 0.02;
  static kvsim_search_t se;
  const cli_arg args[] = {
      {"--slo", ARG_STR, &slo, "targets, e.g. ttft_p99=2s,tpot_p99=100ms (metrics ttft, tpot, e2e, queue; p50, p90, p99, mean)", NULL},
      {"--search", ARG_STR, &what, "rate (highest arrival rate), replicas (fewest), util (lowest gpu_memory_utilization)", NULL},
      {"--set", ARG_LIST, &sets, "override a scenario key (repeatable)", NULL},
      {"--tolerance", ARG_NUM, &tol, "relative precision of the rate search (default 0.02)", NULL},
      {"--no-range", ARG_FLAG, &se.no_range, "skip the re-runs at the step-time band's edges (no range)", NULL},
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
  if (!(tol > 0 && tol < 1))
    return cli_fail("plan", "--tolerance: %g must be in (0, 1)", tol);
  se.tolerance = tol;
  /* Off a terminal the points' lines are the progress (as they always
   * were); on one, a line below them counts simulations and failures (a
   * search does not know its length in advance: no ETA). */
  kvsim_progress_t pr;
  kvsim_progress_init(&pr, stderr, isatty(2) ? KVSIM_PROGRESS_LINE : KVSIM_PROGRESS_NONE, "plan", 0, NULL);
  se.on_point = quiet ? NULL : on_point;
  se.ctx = &pr;
  if ((rc = parse_slo(slo, &se)))
    return rc;
  if (!strcmp(what, "rate"))
    se.kind = KVSIM_SEARCH_RATE;
  else if (!strcmp(what, "replicas"))
    se.kind = KVSIM_SEARCH_REPLICAS;
  else if (!strcmp(what, "util"))
    se.kind = KVSIM_SEARCH_UTIL;
  else
    return cli_fail("plan", "--search: unknown '%s' (rate, replicas, util)", what);

  /* The scenario is parsed once; each point runs a copy with one override. */
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  if (kvsim_scenario_load(pos[0], sets.items, sets.n, &sc, &err) < 0)
    return cli_fail("plan", "%s", err.msg);
  se.base = &sc;
  rc = kvsim_search_run(&se, &err);
  kvsim_progress_end(&pr);
  kvsim_scenario_fini(&sc);
  if (rc < 0)
    return cli_fail("plan", "%s", err.msg);
  if (json) {
    print_json(&se, what, slo);
  } else {
    char sum[1024];
    kvsim_search_summary(&se, slo, sum, sizeof sum);
    puts(sum);
  }
  return isnan(se.best) ? 1 : 0;
}
