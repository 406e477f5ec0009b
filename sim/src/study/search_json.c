/* kvsim plan's text around a search: the --slo targets parsed, a point's
 * line, and the answer and its points as JSON (--json). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/study.h"

static const char *const metric_names[] = {"ttft", "tpot", "e2e", "queue"};
static const char *const stat_names[] = {"mean", "p50", "p90", "p99"};

/* One item of --slo, "ttft_p99=2s", into se's next target. */
static int parse_target(char *tok, kvsim_search_t *se, kvsim_err *err) {
  kvsim_slo_target_t *t = &se->targets[se->ntargets];
  char *eq = strchr(tok, '='), *us = strchr(tok, '_');
  if (eq == tok)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--slo: '%s' has no METRIC_STAT before '=' (e.g. ttft_p99=2s)", tok);
  if (eq && !eq[1])
    return kvsim_err_set(
        err, KVSIM_EINVAL,
        "--slo: '%s' has no value after '=' (a positive finite number with s, ms or us)", tok);
  if (!eq || !us || us > eq)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--slo: '%s' is not METRIC_STAT=VALUE (e.g. ttft_p99=2s)", tok);
  *us = *eq = '\0';
  if (kvsim_metric_parse(tok, &t->metric) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--slo: unknown metric '%s' (ttft, tpot, e2e, queue)",
                         tok);
  if (kvsim_stat_parse(us + 1, &t->stat) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--slo: unknown statistic '%s' (p50, p90, p99, mean)",
                         us + 1);
  /* Twice, the stricter limit would silently be the one that counts. */
  for (int k = 0; k < se->ntargets; k++)
    if (se->targets[k].metric == t->metric && se->targets[k].stat == t->stat)
      return kvsim_err_set(err, KVSIM_EINVAL, "--slo: %s_%s is given twice",
                           metric_names[t->metric], stat_names[t->stat]);
  char *end;
  double v = strtod(eq + 1, &end);
  double unit = !strcmp(end, "ms")  ? 1e-3
                : !strcmp(end, "us") ? 1e-6
                : !strcmp(end, "s")  ? 1
                : !*end              ? 0
                                     : -1;
  /* isfinite: strtod reads "inf" and overflows 1e400 to it, a target
   * every run meets. */
  if (end == eq + 1 || unit < 0 || !(v > 0) || !isfinite(v))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--slo: bad value '%s' (a positive finite number with s, ms or us)",
                         eq + 1);
  /* A bare number was read as seconds: "tpot_p99=50", meant as 50 ms,
   * became a 50 s target that every run meets. The unit is required. */
  if (unit == 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--slo: %s_%s=%s has no unit (write %ss, %sms or %sus)",
                         metric_names[t->metric], stat_names[t->stat], eq + 1, eq + 1, eq + 1,
                         eq + 1);
  t->limit_s = v * unit;
  /* Past the simulator's time limit every run meets it: no target. */
  if (t->limit_s > KVSIM_TIME_MAX_S)
    return kvsim_err_set(err, KVSIM_EINVAL, "--slo: %s_%s=%s: %g s is outside (0, %g]",
                         metric_names[t->metric], stat_names[t->stat], eq + 1, t->limit_s,
                         KVSIM_TIME_MAX_S);
  se->ntargets++;
  return KVSIM_OK;
}

/* "ttft_p99=2s,tpot_p99=100ms" -> targets. Split at each comma by hand:
 * strtok_r would pass over the empty items of "a,,b", ",a" and "a,", a
 * slip (a target lost in editing) that is said rather than skipped. */
int kvsim_search_parse_slo(const char *s, kvsim_search_t *se, kvsim_err *err) {
  se->ntargets = 0;
  char buf[512];
  if (!*s)
    return kvsim_err_set(err, KVSIM_EINVAL, "--slo: no target given");
  /* Cut short, the last item would silently read as another value. */
  if (strlen(s) >= sizeof buf)
    return kvsim_err_set(err, KVSIM_EINVAL, "--slo: longer than %zu characters", sizeof buf - 1);
  snprintf(buf, sizeof buf, "%s", s);
  int item = 0;
  for (char *tok = buf, *next; tok; tok = next) {
    next = strchr(tok, ',');
    if (next)
      *next++ = '\0';
    item++;
    if (!*tok)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "--slo: item %d of '%s' is empty (targets are METRIC_STAT=VALUE, "
                           "separated by single commas)",
                           item, s);
    if (se->ntargets == KVSIM_SLO_MAX_TARGETS)
      return kvsim_err_set(err, KVSIM_EINVAL, "--slo: at most %d targets", KVSIM_SLO_MAX_TARGETS);
    int rc = parse_target(tok, se, err);
    if (rc < 0)
      return rc;
  }
  return KVSIM_OK;
}

void kvsim_search_point_print(const kvsim_search_t *se, const kvsim_search_point_t *p, FILE *out) {
  fprintf(out, "  %s = %-10.6g", se->key, p->value);
  for (int i = 0; i < se->ntargets; i++)
    if (isnan(p->actual[i])) /* no sample (nothing finished, or no TPOT): no figure */
      fprintf(out, " %s_%s -", metric_names[se->targets[i].metric],
              stat_names[se->targets[i].stat]);
    else
      fprintf(out, " %s_%s %.4g s", metric_names[se->targets[i].metric],
              stat_names[se->targets[i].stat], p->actual[i]);
  fprintf(out, " -> %s%s%s\n", p->meets ? "meets" : "misses", p->note[0] ? ": " : "", p->note);
}

static void target_key(const kvsim_slo_target_t *t, char *buf, size_t cap) {
  snprintf(buf, cap, "%s_%s_s", metric_names[t->metric], stat_names[t->stat]);
}

static void add_num(cJSON *o, const char *k, double v) {
  if (isnan(v))
    cJSON_AddNullToObject(o, k);
  else
    cJSON_AddNumberToObject(o, k, v);
}

cJSON *kvsim_search_json(const kvsim_search_t *se, const char *what, const char *slo) {
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
      add_num(p, k, pt->actual[j]); /* null: no sample */
    }
    if (pt->note[0])
      cJSON_AddStringToObject(p, "note", pt->note);
    if (pt->stopped_early) /* its figures are null: the run ended at its miss */
      cJSON_AddBoolToObject(p, "stopped_early", true);
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
    cJSON_AddItemToArray(bs, cJSON_CreateNumber(se->band_edge[i].step));
  bs = cJSON_AddArrayToObject(o, "band_prefill_time_scales");
  for (int i = 0; i < 2; i++)
    cJSON_AddItemToArray(bs, cJSON_CreateNumber(se->band_edge[i].prefill));
  /* rate: relative; util: absolute (the search's 0.005); replicas: exact. */
  cJSON_AddNumberToObject(o, "tolerance", se->kind == KVSIM_SEARCH_RATE ? se->tolerance
                                          : se->kind == KVSIM_SEARCH_UTIL ? 0.005 : 0);
  cJSON_AddStringToObject(o, "tolerance_unit", se->kind == KVSIM_SEARCH_RATE ? "relative" : se->unit);
  cJSON_AddBoolToObject(o, "slo_met", !isnan(se->best));
  cJSON_AddBoolToObject(o, "lower_bound", se->lower_bound);
  cJSON_AddStringToObject(o, "calibration", kvsim_cal_status_name(se->cal_status));
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
  if (se->stopped[0]) /* why the search ended at its first point (kvsim/study.h) */
    cJSON_AddStringToObject(o, "stopped", se->stopped);
  return o;
}

