/* Latency samples, their percentiles and the comparison of two runs; time
 * series and their mean absolute difference (kvsim/fidelity.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "core/alloc.h"
#include "core/vec.h"
#include "fidelity/fid.h"
#include "kvsim/fidelity.h"

void kvsim_fidelity_lat_init(kvsim_fid_lat_t *l) {
  memset(l, 0, sizeof *l);
  kvsim_dist_init(&l->ttft);
  kvsim_dist_init(&l->tpot);
  kvsim_dist_init(&l->e2e);
  kvsim_dist_init(&l->queue);
  l->t_first = INFINITY;
  l->t_last = -INFINITY;
  l->first_arrival_unix_s = NAN;
}

void kvsim_fidelity_lat_fini(kvsim_fid_lat_t *l) {
  kvsim_dist_fini(&l->ttft);
  kvsim_dist_fini(&l->tpot);
  kvsim_dist_fini(&l->e2e);
  kvsim_dist_fini(&l->queue);
  memset(l, 0, sizeof *l);
}

/* Latencies can come out a hair below zero from clock rounding in the
 * measured files; the distribution only takes x >= 0. */
static double nonneg(double x) { return x > 0 ? x : 0; }

int kvsim_fidelity_lat_add(kvsim_fid_lat_t *l, double arrival, double scheduled, double first,
                           double last, int64_t prompt, int64_t out) {
  int rc;
  if ((rc = kvsim_dist_add(&l->ttft, nonneg(first - arrival))) < 0 ||
      (rc = kvsim_dist_add(&l->e2e, nonneg(last - arrival))) < 0)
    return rc;
  if (out > 1 && (rc = kvsim_dist_add(&l->tpot, nonneg((last - first) / (double)(out - 1)))) < 0)
    return rc;
  if (scheduled >= 0 && l->has_queue && (rc = kvsim_dist_add(&l->queue, nonneg(scheduled - arrival))) < 0)
    return rc;
  if (arrival < l->t_first)
    l->t_first = arrival;
  if (last > l->t_last)
    l->t_last = last;
  l->finished++;
  l->output_tokens += out;
  l->prompt_tokens += prompt;
  return KVSIM_OK;
}

kvsim_fid_stat_t kvsim_fidelity_stat_of(kvsim_dist_t *d) {
  kvsim_fid_stat_t s = {NAN, NAN, NAN, NAN, d->n};
  if (d->n == 0)
    return s;
  s.mean = kvsim_dist_mean(d);
  s.p50 = kvsim_dist_quantile(d, 0.50);
  s.p90 = kvsim_dist_quantile(d, 0.90);
  s.p99 = kvsim_dist_quantile(d, 0.99);
  return s;
}

const char *kvsim_fidelity_lat_name(int k) {
  static const char *const names[KVSIM_FID_NLAT] = {"ttft", "tpot", "e2e", "queue"};
  return k >= 0 && k < KVSIM_FID_NLAT ? names[k] : "?";
}

static void fill_side(kvsim_fid_lat_t *l, kvsim_fid_stat_t st[KVSIM_FID_NLAT], double *makespan,
                      double *tput) {
  st[KVSIM_FID_TTFT] = kvsim_fidelity_stat_of(&l->ttft);
  st[KVSIM_FID_TPOT] = kvsim_fidelity_stat_of(&l->tpot);
  st[KVSIM_FID_E2E] = kvsim_fidelity_stat_of(&l->e2e);
  st[KVSIM_FID_QUEUE] = l->has_queue ? kvsim_fidelity_stat_of(&l->queue) : (kvsim_fid_stat_t){NAN, NAN, NAN, NAN, 0};
  *makespan = l->finished ? l->t_last - l->t_first : NAN;
  *tput = *makespan > 0 ? (double)l->output_tokens / *makespan : NAN;
}

void kvsim_fidelity_lat_compare(kvsim_fid_lat_t *meas, kvsim_fid_lat_t *sim, kvsim_fid_lat_cmp_t *out) {
  memset(out, 0, sizeof *out);
  fill_side(meas, out->meas, &out->makespan_meas, &out->tput_meas);
  fill_side(sim, out->sim, &out->makespan_sim, &out->tput_sim);
  out->has_queue = meas->has_queue;
  out->n_meas = meas->finished;
  out->n_sim = sim->finished;
}

double kvsim_fidelity_err_pct(double sim, double meas) {
  return meas != 0 && isfinite(meas) && isfinite(sim) ? (sim - meas) / meas * 100 : NAN;
}

double kvsim_fidelity_lat_worst(const kvsim_fid_lat_cmp_t *c, char *which, size_t cap) {
  double worst = 0;
  const char *q[] = {"mean", "p50", "p99"};
  for (int k = 0; k < 3; k++) {
    double mv[] = {c->meas[k].mean, c->meas[k].p50, c->meas[k].p99};
    double sv[] = {c->sim[k].mean, c->sim[k].p50, c->sim[k].p99};
    for (int j = 0; j < 3; j++) {
      double e = fabs(kvsim_fidelity_err_pct(sv[j], mv[j]));
      if (!isfinite(e))
        e = INFINITY; /* nothing simulated (or measured) to compare: a failure */
      if (e > worst) {
        worst = e;
        snprintf(which, cap, "%s_%s", kvsim_fidelity_lat_name(k), q[j]);
      }
    }
  }
  return worst;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double kvsim_fidelity_median_abs(const double *x, int n) {
  if (n <= 0)
    return NAN;
  double *a = kvsim__malloc((size_t)n * sizeof *a);
  if (!a)
    return NAN;
  for (int i = 0; i < n; i++)
    a[i] = fabs(x[i]);
  qsort(a, (size_t)n, sizeof *a, cmp_double);
  double m = gsl_stats_median_from_sorted_data(a, 1, (size_t)n);
  kvsim__free(a);
  return m;
}

/* ---- time series ---- */

void kvsim_fidelity_series_fini(kvsim_fid_series_t *s) {
  kvsim__vec_free(s);
  s->has_kv = false;
}

int kvsim_fidelity_series_push(kvsim_fid_series_t *s, double t, double running, double waiting,
                               double kv) {
  kvsim_fid_point_t p = {t, running, waiting, kv};
  return kvsim__vec_push(s, p);
}

void kvsim_fidelity_series_compare(const kvsim_fid_series_t *meas, const kvsim_fid_series_t *sim,
                                   kvsim_fid_series_cmp_t *out) {
  memset(out, 0, sizeof *out);
  double sr = 0, sw = 0, sk = 0, mr = 0, mw = 0, mk = 0, pr = 0, pw = 0, pk = 0;
  int64_t n = 0, j = 0;
  for (int64_t i = 0; i < meas->n && sim->n > 0; i++) {
    const kvsim_fid_point_t *m = &meas->v[i];
    double t = m->t;
    /* Both series tick once a second; the simulated value in force at t is
     * that of the last tick at or before t (a gauge holds until the next
     * sample). Past the simulated run's end everything is idle. */
    while (j + 1 < sim->n && sim->v[j + 1].t <= t + 1e-9)
      j++;
    double r = 0, w = 0, k = 0;
    if (sim->v[j].t <= t + 1e-9 && !(j == sim->n - 1 && t > sim->v[j].t + 1.5)) {
      r = sim->v[j].running;
      w = sim->v[j].waiting;
      k = sim->v[j].kv;
    }
    sr += fabs(r - m->running);
    sw += fabs(w - m->waiting);
    sk += fabs(k - m->kv);
    mr += m->running;
    mw += m->waiting;
    mk += m->kv;
    pr += r;
    pw += w;
    pk += k;
    n++;
  }
  out->n = n;
  if (n == 0) {
    out->running_mad = out->waiting_mad = out->kv_mad = NAN;
    return;
  }
  out->running_mad = sr / (double)n;
  out->waiting_mad = sw / (double)n;
  out->running_mean_meas = mr / (double)n;
  out->waiting_mean_meas = mw / (double)n;
  out->running_mean_sim = pr / (double)n;
  out->waiting_mean_sim = pw / (double)n;
  if (meas->has_kv) {
    out->kv_mad = 100 * sk / (double)n;
    out->kv_mean_meas = 100 * mk / (double)n;
    out->kv_mean_sim = 100 * pk / (double)n;
  } else {
    out->kv_mad = out->kv_mean_meas = out->kv_mean_sim = NAN;
  }
}

/* ---- helpers of the room ---- */

int kvsim__fid_recode(int rc, int bad, kvsim_err *err) {
  if (rc >= 0)
    return rc;
  if (rc == KVSIM_ENOENT)
    rc = KVSIM_EIO;
  else if (rc == KVSIM_EPARSE)
    rc = bad;
  if (err)
    err->code = rc;
  return rc;
}

cJSON *kvsim__fid_num_or_null(double x) { return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull(); }

char *kvsim__fid_print(cJSON *o) {
  char *s = o ? cJSON_Print(o) : NULL;
  cJSON_Delete(o);
  return s;
}
