/* Plan searches: bisection on a monotone predicate, and the predicate of
 * `kvsim plan` (a copy of the scenario with one typed override, simulated,
 * checked against latency targets). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/study.h"
#include "study/run.h"

int kvsim_search_bisect_up(kvsim_search_pred_fn pred, void *ctx, double lo, double hi, double tol,
                           bool integer, double *best, kvsim_err *err) {
  while (integer ? hi - lo > 1 : (hi - lo) > tol * lo) {
    double mid = integer ? floor((lo + hi) / 2) : (lo + hi) / 2;
    /* lo and hi adjacent doubles: no midpoint left to try (a tolerance
     * below the spacing of doubles would otherwise never be met). */
    if (!(mid > lo && mid < hi))
      break;
    int ok = pred(ctx, mid, err);
    if (ok < 0)
      return ok;
    if (ok)
      lo = mid;
    else
      hi = mid;
  }
  *best = lo;
  return KVSIM_OK;
}

int kvsim_search_bisect_down(kvsim_search_pred_fn pred, void *ctx, double lo, double hi, double tol,
                             bool integer, double *best, kvsim_err *err) {
  while (integer ? hi - lo > 1 : (hi - lo) > tol) {
    double mid = integer ? floor((lo + hi) / 2) : (lo + hi) / 2;
    if (!(mid > lo && mid < hi)) /* as in kvsim_search_bisect_up */
      break;
    int ok = pred(ctx, mid, err);
    if (ok < 0)
      return ok;
    if (ok)
      hi = mid;
    else
      lo = mid;
  }
  *best = hi;
  return KVSIM_OK;
}

int kvsim_search_rate(kvsim_search_pred_fn pred, void *ctx, double tol, double *best, kvsim_err *err) {
  *best = NAN;
  if (!(tol >= KVSIM_SEARCH_MIN_TOLERANCE && tol < 1))
    return kvsim_err_set(err, KVSIM_EINVAL, "--tolerance: %g must be in [%g, 1)", tol,
                         KVSIM_SEARCH_MIN_TOLERANCE);
  /* Double or halve the multiplier until the predicate flips, then bisect. */
  double lo = 0, hi = 0, x = 1;
  for (int i = 0; i < 12 && !(lo > 0 && hi > 0); i++) {
    int ok = pred(ctx, x, err);
    if (ok < 0)
      return ok;
    if (ok)
      lo = x;
    else
      hi = x;
    x = hi > 0 ? (lo > 0 ? x : x / 2) : x * 2;
  }
  if (lo > 0 && hi > 0)
    return kvsim_search_bisect_up(pred, ctx, lo, hi, tol, false, best, err);
  if (lo > 0)
    *best = lo; /* meets even at the largest multiplier tried */
  return KVSIM_OK;
}

int kvsim_search_rate_near(kvsim_search_pred_fn pred, void *ctx, double guess, double tol,
                           double *best, kvsim_err *err) {
  if (!(guess > 0))
    return kvsim_search_rate(pred, ctx, tol, best, err);
  *best = NAN;
  if (!(tol >= KVSIM_SEARCH_MIN_TOLERANCE && tol < 1))
    return kvsim_err_set(err, KVSIM_EINVAL, "--tolerance: %g must be in [%g, 1)", tol,
                         KVSIM_SEARCH_MIN_TOLERANCE);
  const double floor_x = ldexp(1, -11), ceil_x = ldexp(1, 11);
  double x = guess < floor_x ? floor_x : guess > ceil_x ? ceil_x : guess;
  double lo = 0, hi = 0, f = 1 + 4 * tol;
  for (int i = 0; i < 12; i++) {
    int ok = pred(ctx, x, err);
    if (ok < 0)
      return ok;
    if (ok)
      lo = x;
    else
      hi = x;
    if (lo > 0 && hi > 0)
      break;
    /* On in the direction that has not flipped yet, each step twice the
     * last in log-rate; the end of the range tried is the last. */
    double next = lo > 0 ? lo * f : hi / f;
    next = next < floor_x ? floor_x : next > ceil_x ? ceil_x : next;
    if (next == x)
      break;
    x = next;
    f *= f;
  }
  if (lo > 0 && hi > 0)
    return kvsim_search_bisect_up(pred, ctx, lo, hi, tol, false, best, err);
  if (lo > 0)
    *best = lo; /* meets even at the largest multiplier tried */
  return KVSIM_OK;
}

int kvsim_search_replicas(kvsim_search_pred_fn pred, void *ctx, double *best, kvsim_err *err) {
  *best = NAN;
  double n = 1, prev = 0;
  int ok = 0;
  for (; n <= 1024; prev = n, n *= 2)
    if ((ok = pred(ctx, n, err)) != 0)
      break;
  if (ok < 0)
    return ok;
  if (ok == KVSIM_SEARCH_STOP)
    return KVSIM_OK;
  return ok > 0 ? kvsim_search_bisect_down(pred, ctx, prev, n, 1, true, best, err) : KVSIM_OK;
}

int kvsim_search_util(kvsim_search_pred_fn pred, void *ctx, double *best, kvsim_err *err) {
  *best = NAN;
  double hi = 0.98, lo = 0.3;
  int ok = pred(ctx, hi, err);
  if (ok <= 0)
    return ok;
  int okl = pred(ctx, lo, err);
  if (okl < 0)
    return okl;
  if (okl > 0) {
    *best = lo;
    return KVSIM_OK;
  }
  return kvsim_search_bisect_down(pred, ctx, lo, hi, 0.005, false, best, err);
}

/* A point's value at the 9 significant digits a table prints, so the
 * value reported reproduces the run when given back with --set. */
static double digits9(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.9g", v);
  return strtod(buf, NULL);
}

static int apply(const kvsim_search_t *se, kvsim_scenario_t *sc, double v, kvsim_err *err) {
  switch (se->kind) {
  case KVSIM_SEARCH_REPLICAS:
    return kvsim_scenario_set_replicas(sc, llround(v), err);
  case KVSIM_SEARCH_UTIL:
    return kvsim_scenario_set_memory_fraction(sc, digits9(v), err);
  default:
    /* At the workload's duration, not its request count. */
    return kvsim_study_set_rate(sc, se->trace ? "rate" : "synthetic.arrival.rate", digits9(v), err);
  }
}

/* A request too long for max_model_len, or for one replica's pool, is
 * rejected whatever the replica count: every count misses, and doubling
 * up to 1,024 replicas would only grow the memory. The reason is kept. */
static void stop_for_length(kvsim_search_t *se, const kvsim_summary_t *sum) {
  if (sum->rejected_too_long > 0)
    snprintf(se->stopped, sizeof se->stopped,
             "%lld requests rejected as longer than max_model_len (%lld tokens), whatever the "
             "replica count",
             (long long)sum->rejected_too_long, (long long)sum->plan.p.max_model_len);
  else if (sum->rejected_no_fit > 0)
    snprintf(se->stopped, sizeof se->stopped,
             "%lld requests rejected as needing more KV blocks than one replica's pool holds "
             "(%lld), whatever the replica count",
             (long long)sum->rejected_no_fit, (long long)sum->pool_usable_blocks);
}

/* The targets as a cache tag: a point stopped for these targets. */
static void targets_tag(const kvsim_search_t *se, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < se->ntargets && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%d %d %a;", (int)se->targets[i].metric,
                            (int)se->targets[i].stat, se->targets[i].limit_s);
}

/* sc's run for a point, ended once its miss is decided (study/early.h):
 * KVSIM_OK with *sum, or KVSIM__STUDY_STOPPED with pt's note. A point
 * already run in full or already stopped is not run again. */
static int run_point(const kvsim_search_t *se, const kvsim_scenario_t *sc, kvsim_summary_t *sum,
                     kvsim_search_point_t *pt, kvsim_err *err) {
  char tag[KVSIM_SLO_MAX_TARGETS * 64];
  targets_tag(se, tag, sizeof tag);
  if (kvsim__study_memo_get(sc, sum))
    return KVSIM_OK;
  if (kvsim__study_memo_get_stopped(sc, tag)) {
    snprintf(pt->note, sizeof pt->note, "stopped early: a point already stopped in this study");
    return KVSIM__STUDY_STOPPED;
  }
  kvsim__early_t *e = kvsim__malloc(sizeof *e);
  if (!e)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  int rc = kvsim__early_init(e, sc, se->targets, se->ntargets, err);
  if (rc == KVSIM_OK)
    rc = kvsim__study_run_early(sc, NULL, NULL, e->active ? e : NULL, sum, err);
  if (rc == KVSIM__STUDY_STOPPED) {
    kvsim__study_memo_put_stopped(sc, tag);
    kvsim__early_note(e, pt->note, sizeof pt->note);
  }
  free(e);
  return rc;
}

/* Simulates at x: 1 meets, 0 misses, < 0 the scenario itself is wrong. */
static int evaluate(void *ctx, double x, kvsim_err *err) {
  kvsim_search_t *se = ctx;
  for (int i = 0; i < se->npoints; i++)
    if (se->points[i].x == x)
      return se->points[i].meets;
  if (se->npoints == KVSIM_SEARCH_MAX_POINTS)
    return 0;
  kvsim_search_point_t *pt = &se->points[se->npoints++];
  memset(pt, 0, sizeof *pt);
  pt->x = x;
  pt->value = se->base_value > 0 ? se->base_value * x : x;
  kvsim_scenario_t sc;
  int rc = kvsim_scenario_copy(se->base, &sc, err);
  if (rc < 0)
    return rc;
  kvsim_summary_t *sum = kvsim__malloc(sizeof *sum);
  if (!sum)
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  const bool early = se->early_stop && se->kind != KVSIM_SEARCH_REPLICAS;
  if (rc == KVSIM_OK && (rc = apply(se, &sc, pt->value, err)) == KVSIM_OK)
    rc = early ? run_point(se, &sc, sum, pt, err) : kvsim_study_run(&sc, NULL, sum, err);
  kvsim_scenario_fini(&sc);
  if (rc == KVSIM_EINVAL || rc == KVSIM_EPARSE || rc == KVSIM_EIO || rc == KVSIM_ENOMEM) {
    free(sum);
    return rc;
  }
  if (rc == KVSIM_EBUDGET && se->kind == KVSIM_SEARCH_REPLICAS) {
    /* More replicas would only need more memory: the doubling ends here,
     * as at 1,024 replicas, with the budget named. */
    snprintf(pt->note, sizeof pt->note, "%s", err->msg);
    snprintf(se->stopped, sizeof se->stopped, "%s", err->msg);
    se->stopped_budget = true;
  } else if (rc < 0) {
    /* A rate whose requests pile up past the budget misses, as overloaded. */
    snprintf(pt->note, sizeof pt->note, "%s", err->msg);
  } else if (rc == KVSIM__STUDY_STOPPED) {
    /* Missed, as the full run would: no figures (run_point's note). */
    pt->ran = pt->stopped_early = true;
    for (int i = 0; i < se->ntargets; i++)
      pt->actual[i] = NAN;
  } else {
    pt->ran = pt->meets = true;
    pt->rejected = sum->requests_rejected;
    if (pt->rejected) {
      pt->meets = false;
      snprintf(pt->note, sizeof pt->note, "%lld requests rejected", (long long)pt->rejected);
    }
    if (se->kind == KVSIM_SEARCH_REPLICAS)
      stop_for_length(se, sum);
    bool no_tpot = false;
    for (int i = 0; i < se->ntargets; i++) {
      const kvsim_slo_target_t *t = &se->targets[i];
      const kvsim_latency_t *l = kvsim_summary_latency(sum, t->metric);
      pt->actual[i] = kvsim_latency_stat(l, t->stat);
      /* Requests finished but none had a second token: no TPOT, and no
       * request missed the target (as summary.json's slo says, met with
       * a reason), rather than a p99 of 0 s read as meeting. */
      if (l->count == 0 && sum->requests_finished > 0) {
        pt->actual[i] = NAN;
        no_tpot = true;
      } else if (!(pt->actual[i] <= t->limit_s)) {
        pt->meets = false;
      }
    }
    if (no_tpot) {
      size_t len = strlen(pt->note);
      snprintf(pt->note + len, sizeof pt->note - len, "%sno request had a second token",
               len ? "; " : "");
    }
    /* Nothing finished (a rate so high that no request gets through
     * before output.max_time_s, or all rejected): the statistics are of
     * nothing, not 0 s, and the point is the opposite of meeting. */
    if (sum->requests_finished == 0) {
      pt->meets = false;
      for (int i = 0; i < se->ntargets; i++)
        pt->actual[i] = NAN;
      size_t len = strlen(pt->note);
      snprintf(pt->note + len, sizeof pt->note - len, "%sno request finished", len ? "; " : "");
    }
  }
  if (se->on_point)
    se->on_point(se->ctx, se, pt);
  free(sum);
  return se->stopped[0] ? KVSIM_SEARCH_STOP : pt->meets;
}

/* What the scenario's workload lets a rate search vary: workload.rate
 * (req/s) on a trace or where the scenario gives it, else the synthetic
 * arrival process's own rate. */
static int rate_key(kvsim_search_t *se, kvsim_err *err) {
  kvsim_workload_shape_t w;
  kvsim_workload_shape(se->base->workload, &w);
  se->unit = "req/s";
  if (!w.synthetic || w.rate_given) {
    /* A trace goes faster by compressing its clock; workload.rate derives
     * the time_scale from the trace's own mean rate. */
    se->key = "workload.rate";
    se->trace = true;
    return kvsim_workload_mean_rate(se->base->workload, &se->base_value, err);
  }
  if (!w.arrival_has_rate)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--search rate needs an open-loop arrival process with a rate, or a trace");
  se->key = "workload.synthetic.arrival.rate";
  se->base_value = w.arrival_rate;
  return KVSIM_OK;
}

/* The search again on a copy of the base at one edge of the band. */
static int edge(const kvsim_search_t *se, const kvsim_band_edge_t *at, double elasticity,
                double *best, bool *lower_bound, int *npoints, kvsim_err *err) {
  *best = NAN;
  kvsim_search_t *e = kvsim__malloc(sizeof *e);
  if (!e)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  *e = *se;
  e->on_point = NULL;
  e->no_range = true;
  e->early_stop = true; /* an edge's points are not reported, its answer is */
  /* From the nominal answer, interpolated in log-rate against the log of
   * the edge's step-time scale: rate ~ scale^-elasticity. */
  e->start = se->kind == KVSIM_SEARCH_RATE && se->factor > 0 && at->step > 0
                 ? se->factor * pow(at->step, -elasticity)
                 : 0;
  kvsim_scenario_t sc;
  int rc = kvsim_scenario_copy(se->base, &sc, err);
  if (rc == KVSIM_OK &&
      (rc = kvsim_scenario_set_band_edge(&sc, at, err)) == KVSIM_OK) {
    e->base = &sc;
    rc = kvsim_search_run(e, err);
    *best = e->best;
    *lower_bound = e->lower_bound;
    *npoints += e->npoints;
  }
  kvsim_scenario_fini(&sc);
  free(e);
  return rc;
}

/* The range: the search at both band edges. Slower steps lower the rate
 * found and raise the replicas or utilization needed. */
static int range(kvsim_search_t *se, kvsim_err *err) {
  kvsim_study_band_edges(se->base, se->band_edge);
  double fast, slow;
  bool fast_lb = false, slow_lb = false;
  int rc;
  /* A goodput falls faster than the step time grows (the queue's knee):
   * about scale^-2 on the default study's GPUs. The fast edge's answer
   * gives the slow edge its own exponent. */
  double k = 2;
  if ((rc = edge(se, &se->band_edge[0], k, &fast, &fast_lb, &se->range_points, err)) < 0)
    return rc;
  double s0 = se->band_edge[0].step;
  if (fast > 0 && se->best > 0 && s0 > 0 && fabs(log(s0)) > 1e-3) {
    k = log(fast / se->best) / -log(s0);
    k = k < 0.5 ? 0.5 : k > 4 ? 4 : k;
  }
  if ((rc = edge(se, &se->band_edge[1], k, &slow, &slow_lb, &se->range_points, err)) < 0)
    return rc;
  bool up = se->kind == KVSIM_SEARCH_RATE;
  se->range[0] = up ? slow : fast;
  se->range[1] = up ? fast : slow;
  se->range_lower_bound[0] = up ? slow_lb : fast_lb;
  se->range_lower_bound[1] = up ? fast_lb : slow_lb;
  if (!isnan(se->range[0]) && !isnan(se->range[1]) && se->range[0] > se->range[1]) {
    double t = se->range[0]; /* queueing noise can cross the edges: report low to high */
    se->range[0] = se->range[1];
    se->range[1] = t;
    bool b = se->range_lower_bound[0];
    se->range_lower_bound[0] = se->range_lower_bound[1];
    se->range_lower_bound[1] = b;
  }
  return KVSIM_OK;
}

static int search(kvsim_search_t *se, kvsim_err *err) {
  int rc;
  double m;
  switch (se->kind) {
  case KVSIM_SEARCH_RATE:
    if ((rc = rate_key(se, err)) < 0 ||
        (rc = kvsim_search_rate_near(evaluate, se, se->start, se->tolerance, &m, err)) < 0)
      return rc;
    se->factor = m;
    se->best = isnan(m) ? m : se->base_value * m;
    /* Met at every multiplier tried: the answer is a lower bound. */
    se->lower_bound = !isnan(m);
    for (int i = 0; i < se->npoints; i++)
      se->lower_bound &= se->points[i].meets;
    return KVSIM_OK;
  case KVSIM_SEARCH_REPLICAS:
    se->key = "hardware.replicas";
    se->unit = "replicas";
    return kvsim_search_replicas(evaluate, se, &se->best, err);
  default: {
    /* The profile's own share of GPU memory: SGLang and TGI ignore vLLM's
     * gpu_memory_utilization, HF Transformers has none. */
    const char *k = kvsim_sched_fraction_key(se->base->sched_ops);
    if (!k)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "--search util: the %s profile has no share of GPU memory to vary (it "
                           "sizes its cache by batch and length): search rate or replicas",
                           se->base->sched_ops->name);
    snprintf(se->fraction_key, sizeof se->fraction_key, "engine.%s", k);
    se->key = se->fraction_key;
    se->unit = se->fraction_key + strlen("engine.");
    return kvsim_search_util(evaluate, se, &se->best, err);
  }
  }
}

int kvsim_search_run(kvsim_search_t *se, kvsim_err *err) {
  se->npoints = se->range_points = 0;
  se->best = se->factor = se->range[0] = se->range[1] = NAN;
  se->band_edge[0] = se->band_edge[1] = (kvsim_band_edge_t){1, 1};
  se->trace = se->lower_bound = se->range_lower_bound[0] = se->range_lower_bound[1] = false;
  se->base_value = 0;
  se->stopped[0] = '\0';
  se->stopped_budget = false;
  se->gpus_per_replica = kvsim_scenario_gpus_per_replica(se->base);
  snprintf(se->gpu, sizeof se->gpu, "%s", se->base->gpu.name);
  se->cal_status = se->base->gpu.perf.status;
  /* The search's points and its edges' share the study's cache. */
  kvsim__study_memo_begin();
  int rc = search(se, err);
  if (rc == KVSIM_OK && !se->no_range && (!se->stopped[0] || se->stopped_budget))
    rc = range(se, err);
  kvsim__study_memo_end();
  return rc;
}

static void fmt_value(const kvsim_search_t *se, double v, bool lower_bound, char *buf, size_t cap) {
  if (isnan(v))
    snprintf(buf, cap, "none");
  else
    snprintf(buf, cap, se->kind == KVSIM_SEARCH_RATE ? "%s%.4g" : se->kind == KVSIM_SEARCH_UTIL ? "%s%.3f" : "%s%.0f",
             lower_bound ? ">= " : "", v);
}

void kvsim_search_summary(const kvsim_search_t *se, const char *slo, char *buf, size_t cap) {
  static const char *const what[] = {"rate", "replicas", "util"};
  static const char *const adj[] = {"Highest", "Fewest", "Lowest"};
  if (se->stopped[0]) {
    snprintf(buf, cap, "No %s meets the SLO %s: %s (stopped after %d simulation%s).",
             what[se->kind], slo, se->stopped, se->npoints, se->npoints == 1 ? "" : "s");
    return;
  }
  if (isnan(se->best)) {
    snprintf(buf, cap, "No %s meets the SLO %s in the range searched (%d simulations).",
             what[se->kind], slo, se->npoints);
    return;
  }
  char v[32], lo[32], hi[32], extra[160] = "", rng[128] = "";
  fmt_value(se, se->best, se->lower_bound, v, sizeof v);
  fmt_value(se, se->range[0], se->range_lower_bound[0], lo, sizeof lo);
  fmt_value(se, se->range[1], se->range_lower_bound[1], hi, sizeof hi);
  if (!se->no_range)
    snprintf(rng, sizeof rng, " [%s, %s] over the step-time band x%.3g..x%.3g (prefill x%.3g..x%.3g)", lo, hi,
             se->band_edge[0].step, se->band_edge[1].step, se->band_edge[0].prefill, se->band_edge[1].prefill);
  if (se->kind == KVSIM_SEARCH_RATE)
    snprintf(extra, sizeof extra, " (%.4g x the scenario's %.4g req/s, to %g %%)", se->factor,
             se->base_value, 100 * se->tolerance);
  else if (se->kind == KVSIM_SEARCH_REPLICAS)
    snprintf(extra, sizeof extra, " = %lld GPUs (%s x %d GPUs per replica)",
             (long long)llround(se->best) * se->gpus_per_replica, v, se->gpus_per_replica);
  char sims[64] = "";
  if (!se->no_range)
    snprintf(sims, sizeof sims, "; %d more at the band's edges", se->range_points);
  snprintf(buf, cap, "%s %s meeting %s: %s %s%s%s (%d simulations%s; %s step times %s)", adj[se->kind],
           what[se->kind], slo, v, se->unit, extra, rng, se->npoints, sims, se->gpu,
           kvsim_cal_status_name(se->cal_status));
}
