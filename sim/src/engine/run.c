/* The event loop. Events: a request arrives (pulled from the workload one
 * at a time), a replica's step ends, a sampling tick, the stop time.
 * Requests are materialised only when pulled, so memory is O(requests in
 * flight + blocks) whatever the trace length. The loop's state and the
 * files that share it: run_state.h. */
#include <string.h>

#include "engine/disagg.h"
#include "engine/run_state.h"

static void touch_all_loads(kvsim__run_t *r) {
  for (int32_t i = 0; i < r->nrep; i++)
    kvsim__run_touch_load(r, i);
}

/* Builds one replica's next step; returns its duration or -1 (idle). */
static int build_step(kvsim__run_t *r, kvsim__replica_t *rep, kvsim_time_ns now,
                      kvsim_time_ns *dt) {
  kvsim__run_touch_load(r, rep->index);
  int rc = kvsim__replica_start_step(rep, &r->perf, r->has_draft ? &r->draft_perf : NULL, r->window,
                                     now, dt, r->err);
  if (rc < 0)
    return rc;
  /* A time-series row at every preemption. */
  return rep->step.num_preempted ? kvsim__run_sample(r, rep, now, false) : KVSIM_OK;
}

/* The lockstep group's next step: every rank builds its own; the group
 * waits for the slowest. Target -1 marks the group's step event. */
static int start_group_step(kvsim__run_t *r, kvsim_time_ns now) {
  kvsim_time_ns longest = -1;
  for (int32_t i = 0; i < r->nrep; i++) {
    kvsim_time_ns dt;
    int rc = build_step(r, &r->reps[i], now, &dt);
    if (rc < 0)
      return rc;
    if (dt > longest)
      longest = dt;
  }
  r->group_busy = longest >= 0;
  if (!r->group_busy)
    return KVSIM_OK;
  kvsim_time_ns end = 0;
  int rc = kvsim__run_later(r, now, longest, &end);
  if (rc < 0)
    return rc;
  r->pending_steps++;
  return kvsim_eventq_push(&r->q, end, KVSIM__EV_STEP, -1);
}

int kvsim__run_start_step(kvsim__run_t *r, kvsim__replica_t *rep, kvsim_time_ns now) {
  if (r->lockstep)
    return r->group_busy ? KVSIM_OK : start_group_step(r, now);
  kvsim_time_ns dt;
  int rc = build_step(r, rep, now, &dt);
  kvsim_time_ns end = 0;
  if (rc < 0 || dt < 0)
    return rc;
  if ((rc = kvsim__run_later(r, now, dt, &end)) < 0)
    return rc;
  r->pending_steps++;
  return kvsim_eventq_push(&r->q, end, KVSIM__EV_STEP, rep->index);
}

/* A replica's step ended: account tokens, retire finished requests. */
static int end_replica_step(kvsim__run_t *r, kvsim__replica_t *rep, kvsim_time_ns now) {
  r->finished.n = 0;
  kvsim__run_touch_load(r, rep->index);
  int rc = kvsim__replica_end_step(rep, now, &r->finished, r->err);
  if (rc < 0)
    return rc;
  if (r->opts && r->opts->check_invariants) {
    /* What the step touched every step; the full O(pool) check every
     * check_period-th step, or (-1) when sampled due (replica.h). */
    int64_t period = r->opts->check_period;
    bool full =
        period < 0 ? kvsim__replica_check_due(rep) : period <= 1 || rep->steps % period == 0;
    if ((rc = kvsim__replica_check_step(rep, &r->finished, r->err)) < 0 ||
        (full && (rc = kvsim__replica_check(rep, r->err)) < 0))
      return rc;
  }
  for (int32_t i = 0; i < r->finished.n; i++) {
    rc = kvsim__run_retire(r, r->finished.v[i], now);
    if (rc < 0)
      return rc;
    if (rc > 0 && (rc = kvsim__run_pull(r)) < 0)
      return rc;
  }
  return KVSIM_OK;
}

static int on_step_end(kvsim__run_t *r, int32_t ri, kvsim_time_ns now) {
  r->pending_steps--;
  int rc;
  if (ri >= 0) {
    if ((rc = end_replica_step(r, &r->reps[ri], now)) < 0)
      return rc;
    return kvsim__run_start_step(r, &r->reps[ri], now);
  }
  for (int32_t i = 0; i < r->nrep; i++)
    if ((rc = end_replica_step(r, &r->reps[i], now)) < 0)
      return rc;
  r->group_busy = false;
  return start_group_step(r, now);
}

static bool active(const kvsim__run_t *r) { return r->in_flight > 0 || !r->src_end; }

/* Requests in flight and nothing in the queue but this sampling tick: no
 * arrival, step end or deadline will come, and only those start a step
 * (on_arrival, on_step_end), so the run would sample for ever. It stops
 * and names the first replica holding requests. No input reaches this
 * today (the progress guard of kvsim__replica_start_step and the
 * schedulers' re-scheduling after an empty preempting step come first);
 * it keeps a future hole from writing time series without end. */
static int stuck(kvsim__run_t *r) {
  for (int32_t i = 0; i < r->nrep; i++) {
    kvsim_sched_t *s = r->reps[i].sched;
    kvsim__replica_sync(&r->reps[i]);
    kvsim_request_t *const *held = NULL;
    const long long held_n = s->ops->held ? s->ops->held(s, &held) : 0;
    if (s->running.n || s->waiting.n || held_n)
      return kvsim_err_set(
          r->err, KVSIM_ETHRESH,
          "%s: replica %d: %lld requests waiting, %lld running and %lld held, but no "
          "step, arrival or deadline is pending: the run cannot make progress "
          "(profile %s)",
          r->reps[i].where, (int)i, (long long)s->waiting.n, (long long)s->running.n, held_n,
          s->ops->name);
  }
  return kvsim_err_set(
      r->err, KVSIM_ETHRESH,
      "%s: %lld requests in flight in no replica's queues and nothing pending: the "
      "run cannot make progress",
      r->sc->path[0] ? r->sc->path : r->sc->name, (long long)r->in_flight);
}

static int run(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
               const kvsim_run_opts_t *opts, const kvsim_sink_t *sink, kvsim_run_stats_t *stats,
               kvsim_err *err);

int kvsim_run(const kvsim_scenario_t *sc, const kvsim_run_opts_t *opts, const kvsim_sink_t *sink,
              kvsim_run_stats_t *stats, kvsim_err *err) {
  return run(sc, NULL, opts, sink, stats, err);
}

int kvsim_run_resolved(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                       const kvsim_run_opts_t *opts, const kvsim_sink_t *sink,
                       kvsim_run_stats_t *stats, kvsim_err *err) {
  return run(sc, res, opts, sink, stats, err);
}

/* A sampling tick: every replica's row, then the next tick. A sample
 * syncs each scheduler: no count changes, but no row is assumed
 * unchanged where it costs only a refresh per tick. */
static int on_sample(kvsim__run_t *r, kvsim_time_ns now, kvsim_time_ns tick) {
  int rc = KVSIM_OK;
  touch_all_loads(r);
  for (int32_t i = 0; i < r->nrep && rc >= 0; i++)
    rc = kvsim__run_sample(r, &r->reps[i], now, true);
  if (rc >= 0 && active(r))
    rc = kvsim_eventq_len(&r->q) == 0
             ? stuck(r)
             : kvsim_eventq_push(&r->q, kvsim__run_next_tick(r, now, tick), KVSIM__EV_SAMPLE, -1);
  return rc;
}

/* The events in time order until the stop time or the end of the work.
 * Returns the last handler's code (negative on an error). */
static int run_events(kvsim__run_t *r) {
  const kvsim_scenario_t *sc = r->sc;
  const kvsim_sink_t *sink = r->sink;
  kvsim_time_ns tick = kvsim_time_from_s(sc->sample_interval_s);
  int rc;
  if ((rc = kvsim__run_pull(r)) < 0 || (rc = kvsim_eventq_push(&r->q, 0, KVSIM__EV_SAMPLE, -1)) < 0)
    return rc;
  if (sc->max_time_s > 0 &&
      (rc = kvsim_eventq_push(&r->q, kvsim_time_from_s(sc->max_time_s), KVSIM__EV_STOP, -1)) < 0)
    return rc;
  kvsim_event_t ev;
  bool stopped = false;
  while (!stopped && kvsim_eventq_pop(&r->q, &ev)) {
    kvsim_time_ns now = ev.time;
    r->events++;
    switch (ev.kind) {
    case KVSIM__EV_ARRIVAL:
      rc = kvsim__run_on_arrival(r, ev.target, now);
      break;
    case KVSIM__EV_STEP:
      rc = on_step_end(r, ev.target, now);
      break;
    case KVSIM__EV_SAMPLE:
      rc = on_sample(r, now, tick);
      break;
    case KVSIM__EV_STOP:
      stopped = true;
      break;
    case KVSIM__EV_DEADLINE:
      rc = kvsim__run_on_deadline(r, now);
      break;
    }
    if (rc < 0)
      return rc;
    if (sink && sink->progress && (r->events & 0x3fff) == 0)
      sink->progress(sink->ctx, now, r->st->requests_finished + r->st->requests_rejected,
                     r->in_flight);
    /* Nothing left but the sampling tick: the run is over. */
    if (!active(r) && r->pending_steps == 0)
      break;
  }
  return rc;
}

static int run(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
               const kvsim_run_opts_t *opts, const kvsim_sink_t *sink, kvsim_run_stats_t *stats,
               kvsim_err *err) {
  kvsim__run_t r;
  memset(&r, 0, sizeof r);
  memset(stats, 0, sizeof *stats);
  stats->first_arrival = KVSIM_TIME_NEVER;
  r.sc = sc;
  r.opts = opts;
  r.sink = sink;
  r.st = stats;
  r.err = err;
  if (sc->disagg.enabled)
    return kvsim__disagg_run(sc, opts, sink, stats, err);
  kvsim_eventq_init(&r.q);
  int rc = kvsim__run_setup(&r, res);
  if (rc < 0 || (rc = run_events(&r)) < 0)
    goto out;
  stats->end_time = kvsim_eventq_now(&r.q);
  /* A closing row so that the series ends at the end of the run. */
  for (int32_t i = 0; i < r.nrep && rc >= 0; i++)
    rc = kvsim__run_sample(&r, &r.reps[i], stats->end_time, false);
  if (rc < 0 || (rc = kvsim__run_leftovers(&r)) < 0)
    goto out;
  stats->requests_in_flight = r.in_flight;
  kvsim__run_totals(&r);
  rc = KVSIM_OK;
out:
  kvsim__run_teardown(&r);
  return rc;
}
