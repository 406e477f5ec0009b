/* kvsim plan: search the arrival rate, replica count or memory utilization
 * at which a scenario meets its latency SLO, by repeated simulation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "kvsim/report.h"
#include "kvsim/scenario.h"
#include "runner.h"

#define MAX_TARGETS 12
#define MAX_POINTS 64

typedef struct target {
  char metric[16]; /* ttft, tpot, e2e, queue */
  char stat[8];    /* p50, p90, p99, mean */
  double limit_s;
} target_t;

typedef struct point {
  double x;        /* the searched value */
  bool ok, ran;
  double actual[MAX_TARGETS];
  int64_t rejected;
  char why[256];
} point_t;

typedef struct search {
  const char *scenario;
  const cli_list *sets;
  const char *key;       /* the scenario key varied */
  double base;           /* rate search: value at multiplier 1 */
  bool trace;            /* rate search on a trace: time_scale = base / multiplier */
  bool integer;
  target_t t[MAX_TARGETS];
  int nt;
  point_t p[MAX_POINTS];
  int np;
  bool quiet;
} search_t;

/* "ttft_p99=2s,tpot_p99=100ms" -> targets. */
static int parse_slo(const char *s, search_t *se) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (se->nt == MAX_TARGETS)
      return cli_fail("plan", "--slo: at most %d targets", MAX_TARGETS);
    target_t *t = &se->t[se->nt];
    char *eq = strchr(tok, '='), *us = strchr(tok, '_');
    if (!eq || !us || us > eq)
      return cli_fail("plan", "--slo: '%s' is not METRIC_STAT=VALUE (e.g. ttft_p99=2s)", tok);
    snprintf(t->metric, sizeof t->metric, "%.*s", (int)(us - tok), tok);
    snprintf(t->stat, sizeof t->stat, "%.*s", (int)(eq - us - 1), us + 1);
    if (strcmp(t->metric, "ttft") && strcmp(t->metric, "tpot") && strcmp(t->metric, "e2e") &&
        strcmp(t->metric, "queue"))
      return cli_fail("plan", "--slo: unknown metric '%s' (ttft, tpot, e2e, queue)", t->metric);
    if (strcmp(t->stat, "p50") && strcmp(t->stat, "p90") && strcmp(t->stat, "p99") &&
        strcmp(t->stat, "mean"))
      return cli_fail("plan", "--slo: unknown statistic '%s' (p50, p90, p99, mean)", t->stat);
    char *end;
    double v = strtod(eq + 1, &end);
    double unit = !strcmp(end, "ms") ? 1e-3 : !strcmp(end, "us") ? 1e-6 : (!*end || !strcmp(end, "s")) ? 1 : -1;
    if (end == eq + 1 || unit < 0 || !(v > 0))
      return cli_fail("plan", "--slo: bad value '%s' (a positive number with s, ms or us)", eq + 1);
    t->limit_s = v * unit;
    se->nt++;
  }
  if (!se->nt)
    return cli_fail("plan", "--slo: no target given");
  return 0;
}

/* Simulates at x; returns 1 meets, 0 misses, <0 fatal (bad scenario). */
static int evaluate(search_t *se, double x, kvsim_err *err) {
  for (int i = 0; i < se->np; i++)
    if (se->p[i].x == x)
      return se->p[i].ok;
  if (se->np == MAX_POINTS)
    return 0;
  point_t *pt = &se->p[se->np++];
  memset(pt, 0, sizeof *pt);
  pt->x = x;
  const char *sets[70];
  int n = 0;
  for (int i = 0; i < se->sets->n && n < 68; i++)
    sets[n++] = se->sets->items[i];
  char assign[256];
  double v = se->trace ? se->base / x : se->base > 0 ? se->base * x : x;
  if (se->integer)
    snprintf(assign, sizeof assign, "%s=%lld", se->key, (long long)llround(v));
  else
    snprintf(assign, sizeof assign, "%s=%.9g", se->key, v);
  sets[n++] = assign;
  cli_run_result res;
  int rc = cli_run_scenario(se->scenario, sets, n, NULL, false, 0, &res, err);
  if (rc == KVSIM_EINVAL || rc == KVSIM_EPARSE || rc == KVSIM_EIO)
    return rc; /* the scenario itself is wrong: stop */
  if (rc < 0) {
    snprintf(pt->why, sizeof pt->why, "%s", err->msg);
    pt->ran = false;
    return 0;
  }
  pt->ran = true;
  pt->ok = true;
  pt->rejected = res.stats.requests_rejected;
  if (pt->rejected) {
    pt->ok = false;
    snprintf(pt->why, sizeof pt->why, "%lld requests rejected", (long long)pt->rejected);
  }
  for (int i = 0; i < se->nt; i++) {
    char path[64];
    snprintf(path, sizeof path, "latency.%s_s.%s", se->t[i].metric, se->t[i].stat);
    pt->actual[i] = cli_summary_num(res.summary, path);
    if (!(pt->actual[i] <= se->t[i].limit_s))
      pt->ok = false;
  }
  cli_run_result_fini(&res);
  if (!se->quiet) {
    fprintf(stderr, "  %s = %-10.6g", se->key, v);
    for (int i = 0; i < se->nt; i++)
      fprintf(stderr, " %s_%s %.4g s", se->t[i].metric, se->t[i].stat, pt->actual[i]);
    fprintf(stderr, " -> %s%s%s\n", pt->ok ? "meets" : "misses", pt->why[0] ? ": " : "", pt->why);
  }
  return pt->ok;
}

/* Largest x in [lo, hi] that meets (lo meets, hi misses), to relative tol. */
static int bisect_up(search_t *se, double lo, double hi, double tol, double *best, kvsim_err *err) {
  while (se->integer ? hi - lo > 1 : (hi - lo) > tol * lo) {
    double mid = se->integer ? floor((lo + hi) / 2) : (lo + hi) / 2;
    int ok = evaluate(se, mid, err);
    if (ok < 0)
      return ok;
    if (ok)
      lo = mid;
    else
      hi = mid;
  }
  *best = lo;
  return 0;
}

/* Smallest x in [lo, hi] that meets (lo misses, hi meets). */
static int bisect_down(search_t *se, double lo, double hi, double tol, double *best, kvsim_err *err) {
  while (se->integer ? hi - lo > 1 : (hi - lo) > tol) {
    double mid = se->integer ? floor((lo + hi) / 2) : (lo + hi) / 2;
    int ok = evaluate(se, mid, err);
    if (ok < 0)
      return ok;
    if (ok)
      hi = mid;
    else
      lo = mid;
  }
  *best = hi;
  return 0;
}

int cmd_plan(int argc, char **argv) {
  cli_list sets = {0};
  const char *slo = NULL, *what = "rate";
  bool json = false, quiet = false;
  double tol = 0.02;
  const cli_arg args[] = {
      {"--slo", ARG_STR, &slo, "targets, e.g. ttft_p99=2s,tpot_p99=100ms (metrics ttft, tpot, e2e, queue; p50, p90, p99, mean)", NULL},
      {"--search", ARG_STR, &what, "rate (highest arrival rate), replicas (fewest), util (lowest gpu_memory_utilization)", NULL},
      {"--set", ARG_LIST, &sets, "override a scenario key (repeatable)", NULL},
      {"--tolerance", ARG_NUM, &tol, "relative precision of the rate search (default 0.02)", NULL},
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
  search_t se;
  memset(&se, 0, sizeof se);
  se.scenario = pos[0];
  se.sets = &sets;
  se.quiet = quiet;
  if ((rc = parse_slo(slo, &se)))
    return rc;

  /* What the scenario's workload allows us to vary. */
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  if (kvsim_scenario_load(pos[0], sets.items, sets.n, &sc, &err) < 0)
    return cli_fail("plan", "%s", err.msg);
  const cJSON *wl = cJSON_GetObjectItemCaseSensitive(sc.resolved, "workload");
  const cJSON *syn = cJSON_GetObjectItemCaseSensitive(wl, "synthetic");
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(syn, "arrival");
  const cJSON *rate = cJSON_GetObjectItemCaseSensitive(arr, "rate");
  const cJSON *ts = cJSON_GetObjectItemCaseSensitive(wl, "time_scale");
  /* Keep what we need before the scenario (and its JSON) goes. */
  bool is_syn = syn != NULL, has_rate = cJSON_IsNumber(rate);
  double rate_v = has_rate ? rate->valuedouble : 0, ts_v = cJSON_IsNumber(ts) ? ts->valuedouble : 1.0;
  kvsim_scenario_fini(&sc);

  double best = NAN;
  char unit[64] = "";
  if (!strcmp(what, "rate")) {
    if (is_syn && has_rate) {
      se.key = "workload.synthetic.arrival.rate";
      se.base = rate_v;
      snprintf(unit, sizeof unit, "req/s");
    } else if (!is_syn) {
      /* A trace goes faster by compressing its clock. */
      se.key = "workload.time_scale";
      se.base = ts_v;
      snprintf(unit, sizeof unit, "x the trace's rate");
    } else {
      return cli_fail("plan", "--search rate needs an open-loop arrival process with a rate, or a trace");
    }
    /* Double or halve the rate from the scenario's until the SLO flips,
     * then bisect. For a trace the multiplier divides time_scale. */
    se.trace = !is_syn;
    double lo = 0, hi = 0, x = 1;
    for (int i = 0; i < 12 && !(lo > 0 && hi > 0); i++) {
      int ok = evaluate(&se, x, &err);
      if (ok < 0)
        return cli_fail("plan", "%s", err.msg);
      if (ok)
        lo = x;
      else
        hi = x;
      x = hi > 0 ? (lo > 0 ? x : x / 2) : x * 2;
    }
    double m = NAN;
    if (lo > 0 && hi > 0 && (rc = bisect_up(&se, lo, hi, tol, &m, &err)) < 0)
      return cli_fail("plan", "%s", err.msg);
    if (lo > 0 && !(hi > 0))
      m = lo; /* meets even at the largest rate tried */
    if (!isnan(m))
      best = se.trace ? m : se.base * m;
  } else if (!strcmp(what, "replicas")) {
    se.key = "hardware.replicas";
    se.integer = true;
    double n = 1, prev = 0;
    int ok = 0;
    for (; n <= 1024; prev = n, n *= 2)
      if ((ok = evaluate(&se, n, &err)) != 0)
        break;
    if (ok < 0)
      return cli_fail("plan", "%s", err.msg);
    if (ok > 0 && (rc = bisect_down(&se, prev, n, 1, &best, &err)) < 0)
      return cli_fail("plan", "%s", err.msg);
    snprintf(unit, sizeof unit, "replicas");
  } else if (!strcmp(what, "util")) {
    se.key = "engine.gpu_memory_utilization";
    double hi = 0.98, lo = 0.3;
    int ok = evaluate(&se, hi, &err);
    if (ok < 0)
      return cli_fail("plan", "%s", err.msg);
    if (ok > 0) {
      int okl = evaluate(&se, lo, &err);
      if (okl < 0)
        return cli_fail("plan", "%s", err.msg);
      if (okl > 0)
        best = lo;
      else if ((rc = bisect_down(&se, lo, hi, 0.005, &best, &err)) < 0)
        return cli_fail("plan", "%s", err.msg);
    }
    snprintf(unit, sizeof unit, "gpu_memory_utilization");
  } else {
    return cli_fail("plan", "--search: unknown '%s' (rate, replicas, util)", what);
  }

  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "search", what);
    cJSON_AddStringToObject(o, "key", se.key);
    cJSON *t = cJSON_AddObjectToObject(o, "slo");
    for (int i = 0; i < se.nt; i++) {
      char k[32];
      snprintf(k, sizeof k, "%s_%s_s", se.t[i].metric, se.t[i].stat);
      cJSON_AddNumberToObject(t, k, se.t[i].limit_s);
    }
    cJSON *pts = cJSON_AddArrayToObject(o, "points");
    for (int i = 0; i < se.np; i++) {
      cJSON *p = cJSON_CreateObject();
      double v = se.trace ? se.p[i].x : se.base > 0 ? se.base * se.p[i].x : se.p[i].x;
      cJSON_AddNumberToObject(p, "value", v);
      cJSON_AddBoolToObject(p, "meets", se.p[i].ok);
      for (int k = 0; k < se.nt; k++) {
        char key[32];
        snprintf(key, sizeof key, "%s_%s_s", se.t[k].metric, se.t[k].stat);
        if (se.p[i].ran)
          cJSON_AddNumberToObject(p, key, se.p[i].actual[k]);
      }
      if (se.p[i].why[0])
        cJSON_AddStringToObject(p, "note", se.p[i].why);
      cJSON_AddItemToArray(pts, p);
    }
    if (isnan(best))
      cJSON_AddNullToObject(o, "best");
    else
      cJSON_AddNumberToObject(o, "best", best);
    cJSON_AddStringToObject(o, "unit", unit);
    char *s = kvsim_report_json_string(o);
    puts(s);
    free(s);
    cJSON_Delete(o);
  } else if (isnan(best)) {
    printf("No %s meets the SLO %s in the range searched (%d simulations).\n", what, slo, se.np);
  } else {
    const char *adj = !strcmp(what, "rate") ? "Highest" : !strcmp(what, "replicas") ? "Fewest" : "Lowest";
    printf("%s %s meeting %s: %.4g %s (%d simulations)\n", adj, what, slo, best, unit, se.np);
  }
  return isnan(best) ? 1 : 0;
}
