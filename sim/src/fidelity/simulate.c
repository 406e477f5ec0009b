/* Running a scenario in memory for a comparison: the library's run with a
 * sink that keeps finished requests' latencies and the per-tick time
 * series (kvsim/fidelity.h). */
#include <string.h>

#include "core/alloc.h"
#include "fidelity/fid.h"
#include "kvsim/fidelity.h"

typedef struct collect {
  kvsim_fid_lat_t *lat;
  /* Client-side latency added to the first and last token times: a fixed
   * cost (HTTP, request handling) plus tokenisation in proportion to the
   * prompt (vllm/entrypoints/openai/serving_engine.py tokenises the
   * prompt in the API server before the engine sees the request). */
  double client_s, client_per_token_s;
  kvsim_fid_series_t *ser;
  /* Every row (the extra rows at preemptions and the closing row too), on
   * whole milliseconds as Prometheus stores them, each replica's values
   * held until its next row: the simulated side of a Prometheus scrape,
   * whose samples fall anywhere (kvsim__fid_simulate). */
  bool every_row;
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
      c->seen[i] = c->every_row;
    }
  int rc = m ? kvsim_fidelity_series_push(c->ser, kvsim_time_to_s(c->cur), r, w, k / m) : KVSIM_OK;
  c->cur = -1;
  return rc;
}

static int on_sample(void *ctx, const kvsim_sample_t *s) {
  collect_t *c = ctx;
  const kvsim_time_ns ms = 1000000;
  kvsim_time_ns at = s->time;
  if (!c->ser)
    return KVSIM_OK;
  if (c->every_row)
    at = (s->time + ms / 2) / ms * ms;
  else if (c->tick <= 0 || s->time % c->tick != 0)
    return KVSIM_OK; /* only the periodic rows, not the extra rows at preemptions */
  if (at != c->cur) {
    int rc = flush_tick(c);
    if (rc < 0)
      return rc;
    c->cur = at;
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
  const double client = c->client_s + c->client_per_token_s * (double)r->num_prompt;
  return kvsim_fidelity_lat_add(c->lat, kvsim_time_to_s(r->arrival), kvsim_time_to_s(r->first_scheduled),
                                kvsim_time_to_s(r->first_token) + client, kvsim_time_to_s(r->finish) + client,
                                r->num_prompt, r->num_output);
}

static int simulate(const kvsim_scenario_t *sc, double client_s, double client_per_token_s, bool every_row,
                    kvsim_fid_lat_t *lat, kvsim_fid_series_t *ser, kvsim_run_stats_t *st, kvsim_err *err) {
  collect_t c;
  memset(&c, 0, sizeof c);
  c.every_row = every_row;
  c.lat = lat;
  c.client_s = client_s;
  c.client_per_token_s = client_per_token_s;
  c.ser = ser;
  c.nrep = sc->replicas > 0 ? sc->replicas : 1;
  c.tick = kvsim_time_from_s(sc->sample_interval_s);
  c.cur = -1;
  c.running = kvsim__calloc((size_t)c.nrep, sizeof *c.running);
  c.waiting = kvsim__calloc((size_t)c.nrep, sizeof *c.waiting);
  c.kv = kvsim__calloc((size_t)c.nrep, sizeof *c.kv);
  c.seen = kvsim__calloc((size_t)c.nrep, sizeof *c.seen);
  kvsim_run_stats_t local;
  int rc;
  if (!c.running || !c.waiting || !c.kv || !c.seen) {
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    goto out;
  }
  lat->has_queue = true; /* the simulator knows when each request was first scheduled */
  if (ser)
    ser->has_kv = true;
  kvsim_sink_t sink = {&c, on_sample, on_request, NULL, NULL};
  kvsim_run_opts_t opts = {.check_invariants = false};
  rc = kvsim_run(sc, &opts, &sink, st ? st : &local, err);
  if (rc == KVSIM_OK && ser)
    rc = flush_tick(&c);
  if (rc < 0 && !err->msg[0])
    kvsim_err_set(err, rc, "%s", kvsim_strerror(rc));
out:
  kvsim__free(c.running);
  kvsim__free(c.waiting);
  kvsim__free(c.kv);
  kvsim__free(c.seen);
  return rc;
}

int kvsim_fidelity_simulate(const kvsim_scenario_t *sc, kvsim_fid_lat_t *lat, kvsim_fid_series_t *ser,
                            kvsim_run_stats_t *st, kvsim_err *err) {
  return kvsim__fid_simulate(sc, false, false, lat, ser, st, err);
}

int kvsim_fidelity_simulate_client(const kvsim_scenario_t *sc, kvsim_fid_lat_t *lat,
                                   kvsim_fid_series_t *ser, kvsim_run_stats_t *st, kvsim_err *err) {
  return kvsim__fid_simulate(sc, true, false, lat, ser, st, err);
}

int kvsim__fid_simulate(const kvsim_scenario_t *sc, bool client, bool every_row, kvsim_fid_lat_t *lat,
                        kvsim_fid_series_t *ser, kvsim_run_stats_t *st, kvsim_err *err) {
  if (!client)
    return simulate(sc, 0, 0, every_row, lat, ser, st, err);
  /* The client's latency is a modelled part of the TTFT as the prefill
   * is: a run at a band edge (perf.prefill_time_scale) scales both, or
   * the TTFT's range could not reach a measured TTFT below the fitted
   * client latency. */
  const double step = sc->step_time_scale > 0 ? sc->step_time_scale : 1;
  const double f = sc->prefill_time_scale > 0 ? sc->prefill_time_scale : step;
  return simulate(sc, f * sc->gpu.perf.frontend_us * 1e-6, f * sc->gpu.perf.frontend_per_token_us * 1e-6, every_row,
                  lat, ser, st, err);
}
