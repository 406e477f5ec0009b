/* A search point's run stopped once its miss is decided (study/early.h:
 * the rule and why it gives the full run's verdict). */
#include "study/early.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/vec.h"
#include "kvsim/workload.h"

int64_t kvsim__early_need(int64_t window, double q) {
  int64_t need = 0;
  /* n - i(n) grows with n but for the rounding of q (n - 1): the largest
   * over every sample count the window allows, computed as GSL does
   * (gsl_stats_quantile_from_sorted_data: lhs = (int)(f * (n - 1))). */
  for (int64_t n = 1; n <= window; n++) {
    int64_t i = (int64_t)(q * (double)(n - 1));
    if (n - i > need)
      need = n - i;
  }
  return need;
}

static double quantile_of(kvsim_stat s) {
  return s == KVSIM_STAT_P50 ? 0.50 : s == KVSIM_STAT_P90 ? 0.90 : s == KVSIM_STAT_P99 ? 0.99 : 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int kvsim__early_init_arrivals(kvsim__early_t *e, const int64_t *arrival_ns, int64_t n,
                               const kvsim_slo_target_t *t, int nt) {
  memset(e, 0, sizeof *e);
  if (n <= 0)
    return KVSIM_OK;
  int rc = kvsim_steady_window(arrival_ns, n, &e->window);
  if (rc < 0)
    return rc;
  int64_t w = n - e->window.warmup - e->window.drain;
  if (w <= 0 || w > KVSIM__EARLY_MAX_WINDOW)
    return KVSIM_OK;
  e->first = e->last = arrival_ns[0];
  for (int64_t i = 1; i < n; i++) {
    e->first = arrival_ns[i] < e->first ? arrival_ns[i] : e->first;
    e->last = arrival_ns[i] > e->last ? arrival_ns[i] : e->last;
  }
  for (int k = 0; k < nt && k < KVSIM_SLO_MAX_TARGETS; k++) {
    double q = quantile_of(t[k].stat);
    e->metric[k] = t[k].metric;
    e->limit_s[k] = t[k].limit_s;
    e->need[k] = q > 0 ? kvsim__early_need(w, q) : 0;
    e->active |= e->need[k] > 0;
  }
  e->ntargets = nt < KVSIM_SLO_MAX_TARGETS ? nt : KVSIM_SLO_MAX_TARGETS;
  return KVSIM_OK;
}

/* The workload's arrivals as the run will see them; *n = -1 when they
 * depend on the run or are too many to decide early. */
static int read_arrivals(const kvsim_scenario_t *sc, int64_t **out, int64_t *n, kvsim_err *err) {
  /* The largest workload whose window can stay under the cap. */
  const int64_t most = (int64_t)(KVSIM__EARLY_MAX_WINDOW / (1 - 2 * KVSIM_STEADY_TRIM)) + 2;
  kvsim_source_t *src = NULL;
  int64_t *a = NULL, cap = 0;
  *n = 0;
  int rc = kvsim_source_open(sc->workload, sc->seed, &src, err);
  while (rc >= 0) {
    kvsim_req_spec_t spec;
    rc = kvsim_source_next(src, &spec, err);
    if (rc == KVSIM_SOURCE_END)
      break;
    if (rc != KVSIM_SOURCE_REQUEST || spec.client >= 0 || spec.session >= 0 || *n >= most) {
      *n = rc < 0 ? 0 : -1; /* closed loop, sessions, too many: no rule */
      break;
    }
    if ((rc = kvsim__grow((void **)&a, &cap, *n + 1, sizeof *a)) < 0) {
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for the workload's arrivals");
      break;
    }
    a[(*n)++] = spec.arrival;
  }
  kvsim_source_close(src);
  if (rc < 0 || *n < 0) {
    kvsim__free(a);
    a = NULL;
  }
  *out = a;
  return rc < 0 ? rc : KVSIM_OK;
}

int kvsim__early_init(kvsim__early_t *e, const kvsim_scenario_t *sc, const kvsim_slo_target_t *t,
                      int nt, kvsim_err *err) {
  memset(e, 0, sizeof *e);
  /* A disaggregated run hands requests between its sides: its own
   * records, not checked against this rule. */
  if (sc->disagg.enabled)
    return KVSIM_OK;
  int64_t *a = NULL, n = 0;
  int rc = read_arrivals(sc, &a, &n, err);
  if (rc < 0 || n <= 0)
    return rc;
  qsort(a, (size_t)n, sizeof *a, cmp_i64);
  /* Arrivals the time cut would leave out change the window. */
  bool cut = sc->max_time_s > 0 && a[n - 1] >= kvsim_time_from_s(sc->max_time_s);
  rc = cut ? KVSIM_OK : kvsim__early_init_arrivals(e, a, n, t, nt);
  kvsim__free(a);
  return rc < 0 ? kvsim_err_set(err, rc, "out of memory for the steady window") : KVSIM_OK;
}

/* Past the limit with a margin: a value counted here keeps the window's
 * quantile, interpolated by GSL and rounded to the nanosecond
 * (report/run_output.c latency_of), strictly above the limit. */
static bool past(double v, double limit) { return v > limit + 2e-9 + fabs(limit) * 1e-12; }

bool kvsim__early_request(kvsim__early_t *e, const kvsim_request_t *r) {
  if (!e->active || e->decided)
    return e->decided;
  if (r->arrival < e->first || r->arrival > e->last) {
    e->active = false; /* not the arrivals read: the rule does not hold */
    return false;
  }
  if (r->status != KVSIM_REQ_FINISHED || !kvsim_steady_contains(&e->window, r->arrival))
    return false;
  e->finished++;
  /* The figures as run_output.c's add_finished computes them. */
  for (int k = 0; k < e->ntargets; k++) {
    double v;
    switch (e->metric[k]) {
    case KVSIM_METRIC_TTFT:
      v = kvsim_time_to_s(r->first_token - r->arrival);
      break;
    case KVSIM_METRIC_TPOT:
      if (r->num_output <= 1)
        continue; /* no TPOT sample */
      v = kvsim_time_to_s(r->finish - r->first_token) / (double)(r->num_output - 1);
      break;
    case KVSIM_METRIC_E2E:
      v = kvsim_time_to_s(r->finish - r->arrival);
      break;
    default:
      v = kvsim_time_to_s(r->first_scheduled - r->arrival);
      break;
    }
    if (e->need[k] > 0 && past(v, e->limit_s[k]) && ++e->over[k] >= e->need[k]) {
      e->decided = true;
      e->missed = k;
      return true;
    }
  }
  return false;
}

static int on_sample(void *ctx, const kvsim_sample_t *s) {
  kvsim__early_t *e = ctx;
  return e->inner.sample ? e->inner.sample(e->inner.ctx, s) : KVSIM_OK;
}

static int on_request(void *ctx, const kvsim_request_t *r) {
  kvsim__early_t *e = ctx;
  int rc = e->inner.request ? e->inner.request(e->inner.ctx, r) : KVSIM_OK;
  if (rc < 0)
    return rc;
  /* Any negative code ends the run; e->decided says it was this one. */
  return kvsim__early_request(e, r) ? KVSIM_EINVAL : KVSIM_OK;
}

static void on_progress(void *ctx, kvsim_time_ns now, int64_t done, int64_t in_flight) {
  kvsim__early_t *e = ctx;
  if (e->inner.progress)
    e->inner.progress(e->inner.ctx, now, done, in_flight);
}

static int on_disagg_sample(void *ctx, const kvsim_disagg_sample_t *s) {
  kvsim__early_t *e = ctx;
  return e->inner.disagg_sample ? e->inner.disagg_sample(e->inner.ctx, s) : KVSIM_OK;
}

kvsim_sink_t kvsim__early_sink(kvsim__early_t *e, kvsim_sink_t inner) {
  e->inner = inner;
  return (kvsim_sink_t){e, on_sample, on_request, inner.progress ? on_progress : NULL,
                        inner.disagg_sample ? on_disagg_sample : NULL};
}

void kvsim__early_note(const kvsim__early_t *e, char *buf, size_t cap) {
  static const char *const names[] = {"TTFT", "TPOT", "E2E", "queue"};
  int k = e->missed;
  int m = e->metric[k] >= 0 && e->metric[k] <= KVSIM_METRIC_QUEUE ? (int)e->metric[k] : 0;
  snprintf(buf, cap,
           "stopped early: %lld of the steady window's requests past the %s limit %g s, enough "
           "to miss it (after %lld finished)",
           (long long)e->over[k], names[m], e->limit_s[k], (long long)e->finished);
}
