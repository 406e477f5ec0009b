/* The aggregated event loop's state (kvsim_run) and what its files share:
 * run.c (the loop and the steps), run_arrival.c (arrivals, routing,
 * admission and deadlines), run_setup.c (setup and teardown) and
 * run_report.c (samples, requests left in flight and the run's totals).
 * The helpers every step calls are static inline, so that the split costs
 * no calls (retire too: every finished request takes it). Internal to the engine. */
#ifndef KVSIM_ENGINE_RUN_STATE_H
#define KVSIM_ENGINE_RUN_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/vec.h"
#include "engine/lifecycle.h"
#include "engine/replica.h"
#include "engine/reqpool.h"
#include "engine/router.h"
#include "kvsim/engine.h"
#include "kvsim/events.h"
#include "kvsim/perf.h"
#include <gsl/gsl_rng.h>

/* The loop's events: a request arrives (target: its slot), a replica's
 * step ends (its index, -1 for a lockstep group), a sampling tick, the
 * stop time, admission's next deadline. */
enum {
  KVSIM__EV_ARRIVAL = 1,
  KVSIM__EV_STEP = 2,
  KVSIM__EV_SAMPLE = 3,
  KVSIM__EV_STOP = 4,
  KVSIM__EV_DEADLINE = 5
};

/* Admission's max_wait_s: deadlines are arrival + a constant, so they come
 * due in arrival order and a FIFO holds them; one event is armed at the
 * head. The id guards against a slot reused by a later request. */
typedef struct kvsim__deadline {
  kvsim_time_ns time;
  int32_t slot;
  uint64_t id;
} kvsim__deadline_t;

/* One aggregated run (kvsim_run): its configuration, replicas, router,
 * event queue, requests in flight and the sums of its samples. */
typedef struct kvsim__run {
  const kvsim_scenario_t *sc;
  const kvsim_run_opts_t *opts;
  const kvsim_sink_t *sink;
  kvsim_run_stats_t *st;
  kvsim_err *err;
  kvsim_resolved_t res;  /* the configuration this run uses */
  kvsim_plan_t plan;
  kvsim_perf_t perf;
  kvsim_perf_memo_t perf_memo; /* perf's GEMM terms by step rows, for every replica */
  /* Speculative decoding: the drafter's step model (has_draft) and the
   * run's generator of accepted-token draws. */
  kvsim_perf_t draft_perf;
  bool has_draft;
  gsl_rng *spec_rng;
  int64_t window;
  int64_t pool_usable;
  kvsim__replica_t *reps;
  int32_t nrep;
  kvsim__router_t router;
  kvsim__router_load_t *loads; /* one row per replica, as of the last arrival */
  /* The replicas whose rows may be stale: each had an event since the
   * last arrival (only its own events change a replica's row). The router
   * tracks the rows in a tree, so an arrival refreshes these rows instead
   * of reading every replica's state (issue 29: with 256 replicas, that
   * read was 256 replicas' cold cache lines per request). */
  uint8_t *load_stale;
  int32_t *stale;
  int32_t nstale;
  kvsim__vec(uint64_t) prefix_key;  /* per request slot: the router's prefix key */
  kvsim_eventq_t q;
  kvsim_source_t *src;
  bool src_end;
  /* The source's last answer was KVSIM_SOURCE_BLOCKED: only a request
   * leaving can unblock it, so every one that leaves is followed by a pull. */
  bool src_blocked;
  kvsim__reqpool_t pool;
  int64_t fixed_bytes;   /* the replicas' share of the memory budget (budget.h) */
  int64_t in_flight;     /* pulled and not yet gone */
  int64_t pending_steps; /* replicas with a step in flight */
  /* Data-parallel ranks of an expert-parallel model step together: their
   * forwards meet in every MoE layer's collective, and a rank with nothing
   * to run executes a dummy batch (vllm/v1/engine/core.py
   * DPEngineCoreProc.run_busy_loop, execute_dummy_batch; tokens padded to
   * the largest rank's). A step lasts as long as the slowest rank's. */
  bool lockstep;
  bool group_busy;
  kvsim_reqvec_t finished;
  kvsim__vec(kvsim__deadline_t) dl; /* FIFO: dl.v[dl_head .. dl.n) are pending */
  int64_t dl_head;
  bool dl_armed;
  int64_t samples;
  double kv_usage_sum, running_sum, waiting_sum, token_frac_sum, unused_sum, frag_sum;
  int64_t kv_full_samples, seq_bound_samples, token_frac_samples;
  int64_t events;
} kvsim__run_t;

/* now + dt, or an error when the sum would pass int64 nanoseconds (9.2e9
 * s): an arrival near KVSIM_TIME_MAX_S plus a long wait or long steps.
 * No real run gets there; the input says so, and the run says where. */
static inline int kvsim__run_later(kvsim__run_t *r, kvsim_time_ns now, kvsim_time_ns dt,
                                   kvsim_time_ns *out) {
  if (dt > KVSIM_TIME_NEVER - 1 - now)
    return kvsim_err_set(
        r->err, KVSIM_EINVAL,
        "run: the simulated clock would pass %.3g s (int64 nanoseconds) at t = %.6g s; check the "
        "trace's timestamps, admission.max_wait_s and the perf scales",
        kvsim_time_to_s(KVSIM_TIME_NEVER), kvsim_time_to_s(now));
  *out = now + dt;
  return KVSIM_OK;
}

/* A replica's row for the router: requests queued or running, blocks in use. */
static inline kvsim__router_load_t kvsim__run_load_of(const kvsim__replica_t *rep) {
  const kvsim_pool_t *p = &rep->kv.pool;
  return (kvsim__router_load_t){rep->sched->running.n + rep->sched->waiting.n,
                                kvsim_pool_usable(p) - kvsim_pool_num_free(p),
                                kvsim_pool_usable(p)};
}

/* Replica i had an event: its load row may have changed. */
static inline void kvsim__run_touch_load(kvsim__run_t *r, int32_t i) {
  if (r->stale && !r->load_stale[i]) {
    r->load_stale[i] = 1;
    r->stale[r->nstale++] = i;
  }
}

/* A request leaves the system (lifecycle.h). Returns 1 when the workload
 * made a new request known, or waits for one to leave (pull it). */
static inline int kvsim__run_retire(kvsim__run_t *r, kvsim_request_t *q, kvsim_time_ns now) {
  int more = kvsim__request_leave(r->st, r->sink, r->src, &r->pool, &r->in_flight, q, now);
  if (more < 0)
    return more;
  return more > 0 || r->src_blocked ? 1 : KVSIM_OK;
}

/* run_arrival.c. Pulls one request from the workload and schedules its arrival. */
int kvsim__run_pull(kvsim__run_t *r);
/* A request arrives: routed, admitted or rejected, and a step started. */
int kvsim__run_on_arrival(kvsim__run_t *r, int32_t slot, kvsim_time_ns now);
/* Rejects requests that waited past max_wait_s without being scheduled. */
int kvsim__run_on_deadline(kvsim__run_t *r, kvsim_time_ns now);

/* run.c. Starts the replica's next step (its lockstep group's) if it has one. */
int kvsim__run_start_step(kvsim__run_t *r, kvsim__replica_t *rep, kvsim_time_ns now);

/* run_report.c. One replica's time-series row at `now` (a tick counts in
 * the means). */
int kvsim__run_sample(kvsim__run_t *r, kvsim__replica_t *rep, kvsim_time_ns now, bool tick);
/* The next sampling tick after the one at `now`. */
kvsim_time_ns kvsim__run_next_tick(kvsim__run_t *r, kvsim_time_ns now, kvsim_time_ns tick);
/* Reports the requests still in the system when the run stops. */
int kvsim__run_leftovers(kvsim__run_t *r);
/* Fills the run's statistics from its replicas and samples. */
void kvsim__run_totals(kvsim__run_t *r);

/* run_setup.c. given: the caller's resolved configuration (no plan
 * computed), or NULL. */
int kvsim__run_setup(kvsim__run_t *r, const kvsim_resolved_t *given);
void kvsim__run_teardown(kvsim__run_t *r);

#endif
