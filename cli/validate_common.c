/* Latency samples, time series and in-memory runs shared by the fidelity
 * commands (validate_common.h). */
#include "validate_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

void fid_lat_init(fid_lat *l) {
  memset(l, 0, sizeof *l);
  kvsim_dist_init(&l->ttft);
  kvsim_dist_init(&l->tpot);
  kvsim_dist_init(&l->e2e);
  kvsim_dist_init(&l->queue);
  l->t_first = INFINITY;
  l->t_last = -INFINITY;
}

void fid_lat_fini(fid_lat *l) {
  kvsim_dist_fini(&l->ttft);
  kvsim_dist_fini(&l->tpot);
  kvsim_dist_fini(&l->e2e);
  kvsim_dist_fini(&l->queue);
  memset(l, 0, sizeof *l);
}

/* Latencies can come out a hair below zero from clock rounding in the
 * measured files; the distribution only takes x >= 0. */
static double nonneg(double x) { return x > 0 ? x : 0; }

int fid_lat_add(fid_lat *l, double arrival, double scheduled, double first, double last,
                int64_t prompt, int64_t out) {
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

fid_stat fid_stat_of(kvsim_dist_t *d) {
  fid_stat s = {NAN, NAN, NAN, NAN, d->n};
  if (d->n == 0)
    return s;
  s.mean = kvsim_dist_mean(d);
  s.p50 = kvsim_dist_quantile(d, 0.50);
  s.p90 = kvsim_dist_quantile(d, 0.90);
  s.p99 = kvsim_dist_quantile(d, 0.99);
  return s;
}

void fid_series_fini(fid_series *s) {
  free(s->t);
  free(s->running);
  free(s->waiting);
  free(s->kv);
  memset(s, 0, sizeof *s);
}

int fid_series_push(fid_series *s, double t, double running, double waiting, double kv) {
  if (s->n == s->cap) {
    int64_t cap = s->cap ? s->cap * 2 : 256;
    double **arrs[] = {&s->t, &s->running, &s->waiting, &s->kv};
    for (int i = 0; i < 4; i++) {
      double *p = realloc(*arrs[i], (size_t)cap * sizeof *p);
      if (!p)
        return KVSIM_ENOMEM;
      *arrs[i] = p;
    }
    s->cap = cap;
  }
  s->t[s->n] = t;
  s->running[s->n] = running;
  s->waiting[s->n] = waiting;
  s->kv[s->n] = kv;
  s->n++;
  return KVSIM_OK;
}

void fid_series_compare(const fid_series *meas, const fid_series *sim, fid_series_cmp *out) {
  memset(out, 0, sizeof *out);
  double sr = 0, sw = 0, sk = 0, mr = 0, mw = 0, mk = 0, pr = 0, pw = 0, pk = 0;
  int64_t n = 0, j = 0;
  for (int64_t i = 0; i < meas->n && sim->n > 0; i++) {
    double t = meas->t[i];
    /* Both series tick once a second; the simulated value in force at t is
     * that of the last tick at or before t (a gauge holds until the next
     * sample). Past the simulated run's end everything is idle. */
    while (j + 1 < sim->n && sim->t[j + 1] <= t + 1e-9)
      j++;
    double r = 0, w = 0, k = 0;
    if (sim->t[j] <= t + 1e-9 && !(j == sim->n - 1 && t > sim->t[j] + 1.5)) {
      r = sim->running[j];
      w = sim->waiting[j];
      k = sim->kv[j];
    }
    sr += fabs(r - meas->running[i]);
    sw += fabs(w - meas->waiting[i]);
    sk += fabs(k - meas->kv[i]);
    mr += meas->running[i];
    mw += meas->waiting[i];
    mk += meas->kv[i];
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

/* ---- in-memory run ---- */

typedef struct collect {
  fid_lat *lat;
  double client_s;          /* added to the first and last token times */
  fid_series *ser;
  int nrep;
  kvsim_time_ns tick;
  /* The tick being accumulated: one slot per replica, overwritten by a
   * later row of the same replica at the same time (a preemption row). */
  kvsim_time_ns cur;
  double *running, *waiting, *kv;
  bool *seen;
} collect_t;

static int flush_tick(collect_t *c) {
  if (c->cur < 0)
    return KVSIM_OK;
  double r = 0, w = 0, k = 0;
  int m = 0;
  for (int i = 0; i < c->nrep; i++)
    if (c->seen[i]) {
      r += c->running[i];
      w += c->waiting[i];
      k += c->kv[i];
      m++;
      c->seen[i] = false;
    }
  int rc = m ? fid_series_push(c->ser, kvsim_time_to_s(c->cur), r, w, k / m) : KVSIM_OK;
  c->cur = -1;
  return rc;
}

static int on_sample(void *ctx, const kvsim_sample_t *s) {
  collect_t *c = ctx;
  if (!c->ser || c->tick <= 0 || s->time % c->tick != 0)
    return KVSIM_OK; /* only the periodic rows, not the extra rows at preemptions */
  if (s->time != c->cur) {
    int rc = flush_tick(c);
    if (rc < 0)
      return rc;
    c->cur = s->time;
  }
  if (s->replica < 0 || s->replica >= c->nrep)
    return KVSIM_OK;
  c->running[s->replica] = (double)s->num_requests_running;
  c->waiting[s->replica] = (double)s->num_requests_waiting;
  c->kv[s->replica] = s->kv_cache_usage;
  c->seen[s->replica] = true;
  return KVSIM_OK;
}

static int on_request(void *ctx, const kvsim_request_t *r) {
  collect_t *c = ctx;
  if (r->status != KVSIM_REQ_FINISHED)
    return KVSIM_OK;
  return fid_lat_add(c->lat, kvsim_time_to_s(r->arrival), kvsim_time_to_s(r->first_scheduled),
                     kvsim_time_to_s(r->first_token) + c->client_s,
                     kvsim_time_to_s(r->finish) + c->client_s, r->num_prompt, r->num_output);
}

static int simulate(const kvsim_scenario_t *sc, double client_s, fid_lat *lat, fid_series *ser,
                    kvsim_run_stats_t *st, kvsim_err *err) {
  collect_t c;
  memset(&c, 0, sizeof c);
  c.lat = lat;
  c.client_s = client_s;
  c.ser = ser;
  c.nrep = sc->replicas > 0 ? sc->replicas : 1;
  c.tick = kvsim_time_from_s(sc->sample_interval_s);
  c.cur = -1;
  c.running = calloc((size_t)c.nrep, sizeof *c.running);
  c.waiting = calloc((size_t)c.nrep, sizeof *c.waiting);
  c.kv = calloc((size_t)c.nrep, sizeof *c.kv);
  c.seen = calloc((size_t)c.nrep, sizeof *c.seen);
  kvsim_run_stats_t local;
  int rc;
  if (!c.running || !c.waiting || !c.kv || !c.seen) {
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    goto out;
  }
  lat->has_queue = true; /* the simulator knows when each request was first scheduled */
  if (ser)
    ser->has_kv = true;
  kvsim_sink_t sink = {&c, on_sample, on_request, NULL};
  kvsim_run_opts_t opts = {.check_invariants = false};
  rc = kvsim_run(sc, &opts, &sink, st ? st : &local, err);
  if (rc == KVSIM_OK && ser)
    rc = flush_tick(&c);
  if (rc < 0 && !err->msg[0])
    kvsim_err_set(err, rc, "%s", kvsim_strerror(rc));
out:
  free(c.running);
  free(c.waiting);
  free(c.kv);
  free(c.seen);
  return rc;
}

int fid_simulate(const kvsim_scenario_t *sc, fid_lat *lat, fid_series *ser, kvsim_run_stats_t *st,
                 kvsim_err *err) {
  return simulate(sc, 0, lat, ser, st, err);
}

int fid_simulate_client(const kvsim_scenario_t *sc, fid_lat *lat, fid_series *ser,
                        kvsim_run_stats_t *st, kvsim_err *err) {
  return simulate(sc, sc->gpu.perf.frontend_us * 1e-6, lat, ser, st, err);
}

void fid_apply_perf(kvsim_scenario_t *sc, const kvsim_gpu_perf_t *p) { sc->gpu.perf = *p; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double fid_median_abs(const double *x, int n) {
  if (n <= 0)
    return NAN;
  double *a = malloc((size_t)n * sizeof *a);
  if (!a)
    return NAN;
  for (int i = 0; i < n; i++)
    a[i] = fabs(x[i]);
  qsort(a, (size_t)n, sizeof *a, cmp_double);
  double m = gsl_stats_median_from_sorted_data(a, 1, (size_t)n);
  free(a);
  return m;
}
