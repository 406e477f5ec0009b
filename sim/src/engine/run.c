/* The event loop. Events: a request arrives (pulled from the workload one
 * at a time), a replica's step ends, a sampling tick, the stop time.
 * Requests are materialised only when pulled, so memory is O(requests in
 * flight + blocks) whatever the trace length. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/vec.h"
#include "engine/budget.h"
#include "engine/disagg.h"
#include "engine/lifecycle.h"
#include "engine/replica.h"
#include "engine/reqpool.h"
#include "engine/router.h"
#include "kvsim/engine.h"
#include "kvsim/events.h"
#include <gsl/gsl_rng.h>

#include "core/alloc.h"
#include "kvsim/perf.h"
#include "kvsim/spec.h"

enum { EV_ARRIVAL = 1, EV_STEP = 2, EV_SAMPLE = 3, EV_STOP = 4, EV_DEADLINE = 5 };

/* Admission's max_wait_s: deadlines are arrival + a constant, so they come
 * due in arrival order and a FIFO holds them; one event is armed at the
 * head. The id guards against a slot reused by a later request. */
typedef struct deadline {
  kvsim_time_ns time;
  int32_t slot;
  uint64_t id;
} deadline_t;

typedef struct run {
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
  kvsim__vec(deadline_t) dl; /* FIFO: dl.v[dl_head .. dl.n) are pending */
  int64_t dl_head;
  bool dl_armed;
  int64_t samples;
  double kv_usage_sum, running_sum, waiting_sum, token_frac_sum, unused_sum, frag_sum;
  int64_t kv_full_samples, seq_bound_samples, token_frac_samples;
  int64_t events;
} run_t;

static int emit_request(run_t *r, kvsim_request_t *q) { return kvsim__emit_request(r->sink, q); }

/* A request leaves the system (lifecycle.h). Returns 1 when the workload
 * made a new request known, or waits for one to leave (pull it). */
static int retire(run_t *r, kvsim_request_t *q, kvsim_time_ns now) {
  int more = kvsim__request_leave(r->st, r->sink, r->src, &r->pool, &r->in_flight, q, now);
  if (more < 0)
    return more;
  return more > 0 || r->src_blocked ? 1 : KVSIM_OK;
}

/* Pulls one request from the workload and schedules its arrival. */
static int pull_one(run_t *r) {
  kvsim_req_spec_t spec;
  int rc = kvsim__request_next(r->src, &spec, &r->src_end, &r->src_blocked, r->in_flight,
                               kvsim_eventq_now(&r->q), r->err);
  if (rc <= 0)
    return rc;
  /* A new chunk of requests: within the budget (budget.h)? */
  if (r->pool.nfree == 0 &&
      (rc = kvsim__budget_check_requests(r->fixed_bytes,
                                         (int64_t)(r->pool.nchunks + 1) * KVSIM__REQ_CHUNK, r->err)) < 0)
    return rc;
  kvsim_request_t *q = kvsim__reqpool_get(&r->pool);
  if (!q)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for requests in flight");
  kvsim__request_from_spec(q, &spec, kvsim_eventq_now(&r->q));
  /* The router's key, while the source's segments are still valid. */
  if (kvsim__vec_reserve(&r->prefix_key, (int64_t)q->slot + 1) < 0)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for request identity");
  if (q->slot >= r->prefix_key.n)
    r->prefix_key.n = (int64_t)q->slot + 1;
  r->prefix_key.v[q->slot] = kvsim__router_prefix_key(spec.segments, spec.num_segments, spec.tenant);
  if (kvsim_kvcache_prepare(&r->reps[0].kv, q) < 0)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for request identity");
  q->spec.segments = NULL;
  q->spec.num_segments = 0;
  r->in_flight++;
  return kvsim_eventq_push(&r->q, q->arrival, EV_ARRIVAL, q->slot);
}

static int start_step(run_t *r, kvsim__replica_t *rep, kvsim_time_ns now);
static int add_deadline(run_t *r, const kvsim_request_t *q, kvsim_time_ns now);

/* Adds `times` identical ticks' rows to the run's means. */
static void account_sample(run_t *r, const kvsim__replica_t *rep, const kvsim_sample_t *s,
                           int64_t times) {
  double m = (double)times;
  r->samples += times;
  r->kv_usage_sum += m * s->kv_cache_usage;
  r->running_sum += m * (double)s->num_requests_running;
  r->waiting_sum += m * (double)s->num_requests_waiting;
  if (s->kv_cache_usage >= 0.99 && s->num_requests_waiting > 0)
    r->kv_full_samples += times;
  if (s->num_requests_running >= rep->sched->cfg.max_num_seqs)
    r->seq_bound_samples += times;
  if (s->kv_allocated_bytes > 0) {
    r->token_frac_sum += m * ((double)s->kv_token_bytes / (double)s->kv_allocated_bytes);
    r->frag_sum += m * (double)s->kv_internal_frag_bytes;
    r->unused_sum += m * (double)s->kv_reserved_unused_bytes;
    r->token_frac_samples += times;
  }
}

static int sample_replica(run_t *r, kvsim__replica_t *rep, kvsim_time_ns now, bool tick) {
  kvsim_sample_t s;
  int rc = kvsim__replica_sample(rep, &r->plan, now, tick, &s, r->err);
  if (rc < 0)
    return rc;
  if (tick)
    account_sample(r, rep, &s, 1);
  return r->sink && r->sink->sample ? r->sink->sample(r->sink->ctx, &s) : KVSIM_OK;
}

/* now + dt, or an error when the sum would pass int64 nanoseconds (9.2e9
 * s): an arrival near KVSIM_TIME_MAX_S plus a long wait or long steps.
 * No real run gets there; the input says so, and the run says where. */
static int later(run_t *r, kvsim_time_ns now, kvsim_time_ns dt, kvsim_time_ns *out) {
  if (dt > KVSIM_TIME_NEVER - 1 - now)
    return kvsim_err_set(
        r->err, KVSIM_EINVAL,
        "run: the simulated clock would pass %.3g s (int64 nanoseconds) at t = %.6g s; check the "
        "trace's timestamps, admission.max_wait_s and the perf scales",
        kvsim_time_to_s(KVSIM_TIME_NEVER), kvsim_time_to_s(now));
  *out = now + dt;
  return KVSIM_OK;
}

/* The next sampling tick after the one at `now`. With no step in flight
 * nothing changes before the next event, so every tick until then would
 * write the row just written again. A stretch of more than
 * KVSIM_IDLE_TICKS_MAX such ticks (a trace with a long idle gap) writes its
 * first and last rows only; the ticks in between still count in the means. */
static kvsim_time_ns next_tick(run_t *r, kvsim_time_ns now, kvsim_time_ns tick) {
  kvsim_time_ns t = kvsim_eventq_peek_time(&r->q);
  /* Ticks now + tick ... now + k tick come strictly before t: the last of
   * them is the stretch's closing row. */
  int64_t k = t == KVSIM_TIME_NEVER || t <= now ? 0 : (t - now - 1) / tick;
  if (r->pending_steps > 0 || k <= KVSIM_IDLE_TICKS_MAX)
    return now + tick;
  for (int32_t i = 0; i < r->nrep; i++) {
    kvsim_sample_t s;
    /* Not a tick (tick = false): it only repeats the row for the means, and
     * cannot fail. */
    (void)kvsim__replica_sample(&r->reps[i], &r->plan, now, false, &s, r->err);
    account_sample(r, &r->reps[i], &s, k - 1);
  }
  return now + k * tick;
}

static const char *admit(run_t *r, kvsim__replica_t *rep, kvsim_request_t *q) {
  const kvsim_scenario_t *sc = r->sc;
  int64_t total = kvsim_request_total_tokens(q);
  /* The OpenAI server refuses prompt + max_tokens > max_model_len (HTTP 400). */
  if (total > r->plan.p.max_model_len) {
    r->st->rejected_too_long++;
    return "prompt_tokens + output_tokens > max_model_len";
  }
  if (!kvsim__replica_fits(rep, &r->plan, total - 1)) {
    r->st->rejected_no_fit++;
    return "needs more KV blocks than the pool holds";
  }
  const char *refused = rep->sched->ops->refuse ? rep->sched->ops->refuse(rep->sched, q) : NULL;
  if (refused) {
    r->st->rejected_admission++;
    return refused;
  }
  /* A trace row naming an adapter the engine does not serve: vLLM's
   * OpenAI server answers 404 (the model does not exist). */
  if (q->spec.lora > 0 && !rep->sched->lora) {
    r->st->rejected_admission++;
    return "LoRA adapter not served (engine.enable_lora off, or a profile without adapters)";
  }
  const kvsim_admission_t *a = &sc->admission;
  if (a->max_prompt_tokens && q->spec.prompt_tokens > a->max_prompt_tokens) {
    r->st->rejected_admission++;
    return "admission: prompt_tokens > max_prompt_tokens";
  }
  if (a->max_output_tokens && q->spec.output_tokens > a->max_output_tokens) {
    r->st->rejected_admission++;
    return "admission: output_tokens > max_output_tokens";
  }
  if (a->max_queue_length && rep->sched->waiting.n >= a->max_queue_length) {
    r->st->rejected_admission++;
    return "admission: waiting queue full";
  }
  return NULL;
}

static kvsim__router_load_t load_of(const kvsim__replica_t *rep) {
  const kvsim_pool_t *p = &rep->kv.pool;
  return (kvsim__router_load_t){rep->sched->running.n + rep->sched->waiting.n,
                                kvsim_pool_usable(p) - kvsim_pool_num_free(p),
                                kvsim_pool_usable(p)};
}

/* Replica i had an event: its load row may have changed. */
static void touch_load(run_t *r, int32_t i) {
  if (r->stale && !r->load_stale[i]) {
    r->load_stale[i] = 1;
    r->stale[r->nstale++] = i;
  }
}

static void touch_all_loads(run_t *r) {
  for (int32_t i = 0; i < r->nrep; i++)
    touch_load(r, i);
}

/* The replica for request `q`: the router's pick over the replicas' loads
 * as they stand at its arrival (router.h). */
static int32_t route(run_t *r, const kvsim_request_t *q) {
  if (r->stale) {
    for (int32_t k = 0; k < r->nstale; k++) {
      int32_t i = r->stale[k];
      r->load_stale[i] = 0;
      kvsim__router_load_t old = r->loads[i];
      r->loads[i] = load_of(&r->reps[i]);
      kvsim__router_update(&r->router, i, &old);
    }
    r->nstale = 0;
#ifndef NDEBUG
    for (int32_t i = 0; i < r->nrep; i++) {
      kvsim__router_load_t l = load_of(&r->reps[i]);
      assert(l.requests == r->loads[i].requests && l.used_blocks == r->loads[i].used_blocks &&
             l.usable_blocks == r->loads[i].usable_blocks);
    }
#endif
  } else if (kvsim__router_needs_load(&r->router)) {
    for (int32_t i = 0; i < r->nrep; i++)
      r->loads[i] = load_of(&r->reps[i]);
  }
  return kvsim__router_pick(&r->router, r->prefix_key.v[q->slot], r->loads);
}

static int on_arrival(run_t *r, int32_t slot, kvsim_time_ns now) {
  kvsim_request_t *q = kvsim__reqpool_at(&r->pool, slot);
  r->st->requests_arrived++;
  r->st->lora_requests += q->spec.lora > 0;
  if (r->st->first_arrival == KVSIM_TIME_NEVER || q->arrival < r->st->first_arrival)
    r->st->first_arrival = q->arrival;
  int32_t ri = route(r, q);
  touch_load(r, ri);
  kvsim__replica_t *rep = &r->reps[ri];
  q->replica = ri;
  const char *why = admit(r, rep, q);
  int rc;
  /* Pull the next request: one pull per processed arrival. */
  if ((rc = pull_one(r)) < 0)
    return rc;
  if (why) {
    q->status = KVSIM_REQ_REJECTED;
    q->reject_reason = why;
    q->finish = now;
    rc = retire(r, q, now);
    if (rc < 0)
      return rc;
    return rc > 0 ? pull_one(r) : KVSIM_OK;
  }
  q->status = KVSIM_REQ_WAITING;
  if ((rc = kvsim__replica_add(rep, q, now, r->err)) < 0)
    return rc;
  if (r->sc->admission.max_wait_s > 0 && (rc = add_deadline(r, q, now)) < 0)
    return rc;
  return rep->busy && !r->lockstep ? KVSIM_OK : start_step(r, rep, now);
}

static int add_deadline(run_t *r, const kvsim_request_t *q, kvsim_time_ns now) {
  /* Reuse the consumed front instead of growing forever. */
  if (r->dl_head == r->dl.n) {
    r->dl.n = r->dl_head = 0;
  } else if (r->dl_head >= 1024 && r->dl_head * 2 >= r->dl.n) {
    memmove(r->dl.v, r->dl.v + r->dl_head, (size_t)(r->dl.n - r->dl_head) * sizeof *r->dl.v);
    r->dl.n -= r->dl_head;
    r->dl_head = 0;
  }
  deadline_t d = {0, q->slot, q->spec.id};
  int rc = later(r, now, kvsim_time_from_s(r->sc->admission.max_wait_s), &d.time);
  if (rc < 0)
    return rc;
  if (kvsim__vec_push(&r->dl, d) < 0)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for deadlines");
  if (!r->dl_armed) {
    r->dl_armed = true;
    return kvsim_eventq_push(&r->q, d.time, EV_DEADLINE, -1);
  }
  return KVSIM_OK;
}

/* Rejects requests that waited past max_wait_s without being scheduled. */
static int on_deadline(run_t *r, kvsim_time_ns now) {
  r->dl_armed = false;
  while (r->dl_head < r->dl.n) {
    deadline_t d = r->dl.v[r->dl_head];
    if (d.time > now) {
      r->dl_armed = true;
      return kvsim_eventq_push(&r->q, d.time, EV_DEADLINE, -1);
    }
    r->dl_head++;
    kvsim_request_t *q = kvsim__reqpool_at(&r->pool, d.slot);
    if (q->spec.id != d.id || q->status != KVSIM_REQ_WAITING ||
        q->first_scheduled != KVSIM_TIME_NEVER)
      continue;
    kvsim_sched_t *s = r->reps[q->replica].sched;
    touch_load(r, q->replica);
    if (!kvsim_waitq_remove(&s->waiting, q))
      continue;
    q->status = KVSIM_REQ_REJECTED;
    q->reject_reason = "admission: waited longer than max_wait_s";
    q->finish = now;
    r->st->rejected_admission++;
    int rc = retire(r, q, now);
    if (rc < 0 || (rc > 0 && (rc = pull_one(r)) < 0))
      return rc;
  }
  return KVSIM_OK;
}

/* Builds one replica's next step; returns its duration or -1 (idle). */
static int build_step(run_t *r, kvsim__replica_t *rep, kvsim_time_ns now, kvsim_time_ns *dt) {
  touch_load(r, rep->index);
  int rc = kvsim__replica_start_step(rep, &r->perf, r->has_draft ? &r->draft_perf : NULL, r->window,
                                     now, dt, r->err);
  if (rc < 0)
    return rc;
  /* A time-series row at every preemption. */
  return rep->step.num_preempted ? sample_replica(r, rep, now, false) : KVSIM_OK;
}

/* The lockstep group's next step: every rank builds its own; the group
 * waits for the slowest. Target -1 marks the group's step event. */
static int start_group_step(run_t *r, kvsim_time_ns now) {
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
  int rc = later(r, now, longest, &end);
  if (rc < 0)
    return rc;
  r->pending_steps++;
  return kvsim_eventq_push(&r->q, end, EV_STEP, -1);
}

static int start_step(run_t *r, kvsim__replica_t *rep, kvsim_time_ns now) {
  if (r->lockstep)
    return r->group_busy ? KVSIM_OK : start_group_step(r, now);
  kvsim_time_ns dt;
  int rc = build_step(r, rep, now, &dt);
  kvsim_time_ns end = 0;
  if (rc < 0 || dt < 0)
    return rc;
  if ((rc = later(r, now, dt, &end)) < 0)
    return rc;
  r->pending_steps++;
  return kvsim_eventq_push(&r->q, end, EV_STEP, rep->index);
}

/* A replica's step ended: account tokens, retire finished requests. */
static int end_replica_step(run_t *r, kvsim__replica_t *rep, kvsim_time_ns now) {
  r->finished.n = 0;
  touch_load(r, rep->index);
  int rc = kvsim__replica_end_step(rep, now, &r->finished, r->err);
  if (rc < 0)
    return rc;
  if (r->opts && r->opts->check_invariants) {
    /* What the step touched every step; the full O(pool) check every
     * check_period-th step, or (-1) when sampled due (replica.h). */
    int64_t period = r->opts->check_period;
    bool full = period < 0 ? kvsim__replica_check_due(rep) : period <= 1 || rep->steps % period == 0;
    if ((rc = kvsim__replica_check_step(rep, &r->finished, r->err)) < 0 ||
        (full && (rc = kvsim__replica_check(rep, r->err)) < 0))
      return rc;
  }
  for (int32_t i = 0; i < r->finished.n; i++) {
    rc = retire(r, r->finished.v[i], now);
    if (rc < 0)
      return rc;
    if (rc > 0 && (rc = pull_one(r)) < 0)
      return rc;
  }
  return KVSIM_OK;
}

static int on_step_end(run_t *r, int32_t ri, kvsim_time_ns now) {
  r->pending_steps--;
  int rc;
  if (ri >= 0) {
    if ((rc = end_replica_step(r, &r->reps[ri], now)) < 0)
      return rc;
    return start_step(r, &r->reps[ri], now);
  }
  for (int32_t i = 0; i < r->nrep; i++)
    if ((rc = end_replica_step(r, &r->reps[i], now)) < 0)
      return rc;
  r->group_busy = false;
  return start_group_step(r, now);
}

static bool active(const run_t *r) { return r->in_flight > 0 || !r->src_end; }

/* Speculative decoding: the drafter's step model on its own config (an
 * EAGLE head: its decoder layer and lm_head; MTP: the target's layer kind;
 * a draft model: all of it) at the target's TP, unquantized
 * (SpeculativeConfig.quantization defaults to None); and one generator for
 * the accepted-token draws, seeded from the scenario's seed. It is a
 * stream of its own rather than the workload's, so that a scenario draws
 * the same requests with and without speculation. */
static int setup_spec(run_t *r) {
  const kvsim_scenario_t *sc = r->sc;
  if (r->res.sched.num_spec_tokens <= 0)
    return KVSIM_OK;
  r->spec_rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!r->spec_rng)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for the speculative-decoding generator");
  /* A fixed offset keeps it apart from the workload's mt19937 on the same seed. */
  gsl_rng_set(r->spec_rng, (unsigned long)(sc->seed ^ UINT64_C(0x5bd1e995)));
  for (int32_t i = 0; i < r->nrep; i++)
    r->reps[i].sched->spec_rng = r->spec_rng;
  kvsim_model_t draft;
  kvsim_err scratch;
  if (kvsim_spec_draft_model(&sc->model, &r->plan.p.spec, &draft, &scratch) < 0)
    return KVSIM_OK; /* ngram: no drafter on the GPU */
  /* An EAGLE-3 head's lm_head is its own, over draft_vocab_size tokens
   * (llama_eagle3.py: ParallelLMHead(draft_vocab_size, hidden)). */
  if (r->plan.p.spec.method == KVSIM_SPEC_EAGLE3 && draft.draft_vocab_size > 0)
    draft.vocab_size = draft.draft_vocab_size;
  kvsim_plan_t dpl = r->plan;
  dpl.p.quantization[0] = 0;
  int rc = kvsim_perf_init(&r->draft_perf, &draft, &sc->gpu, &dpl, r->err);
  if (rc < 0)
    return kvsim_err_prefix(r->err, "the drafter's step model");
  r->has_draft = true;
  return KVSIM_OK;
}

/* The load rows the router tracks (route), for routers that read them. */
static int setup_loads(run_t *r) {
  if (!kvsim__router_needs_load(&r->router))
    return KVSIM_OK;
  for (int32_t i = 0; i < r->nrep; i++)
    r->loads[i] = load_of(&r->reps[i]);
  r->load_stale = kvsim__calloc((size_t)r->nrep, sizeof *r->load_stale);
  r->stale = kvsim__malloc((size_t)r->nrep * sizeof *r->stale);
  if (!r->load_stale || !r->stale)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for %d replicas' loads", r->nrep);
  return kvsim__router_track(&r->router, r->loads, r->err);
}

/* given: the caller's resolved configuration (no plan computed), or NULL. */
static int setup(run_t *r, const kvsim_resolved_t *given) {
  const kvsim_scenario_t *sc = r->sc;
  kvsim_err *err = r->err;
  int rc = KVSIM_OK;
  if (given)
    r->res = *given;
  else if ((rc = kvsim_scenario_resolve(sc, &r->res, err)) < 0)
    return rc;
  r->plan = r->res.plan;
  r->st->resolved = r->res;
  r->st->plan = r->plan;
  r->pool_usable = r->res.pool_usable;
  r->st->pool_blocks = r->pool_usable;
  if ((rc = kvsim_perf_init(&r->perf, &sc->model, &sc->gpu, &r->plan, err)) < 0)
    return rc;
  if (sc->quant_step_factor != 1.0)
    r->perf.quant_step_factor = sc->quant_step_factor;
  r->window = sc->model.sliding_window;
  r->nrep = sc->replicas;
  if ((rc = kvsim__budget_check_replicas(sc, &r->res, err)) < 0)
    return rc;
  r->fixed_bytes = kvsim__budget_replicas_bytes(sc, &r->res);
  r->lockstep = r->plan.p.ep > 1 && r->nrep > 1;
  r->reps = kvsim__calloc((size_t)r->nrep, sizeof *r->reps);
  r->loads = kvsim__calloc((size_t)r->nrep, sizeof *r->loads);
  if (!r->reps || !r->loads)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for %d replicas", r->nrep);
  if ((rc = kvsim__router_init(&r->router, sc->router, r->nrep, sc->router_imbalance, err)) < 0)
    return rc;
  for (int32_t i = 0; i < r->nrep; i++) {
    if ((rc = kvsim__replica_init(&r->reps[i], i, sc, &r->res, err)) < 0)
      return rc;
    /* This loop syncs each scheduler before it reads running requests'
     * counts (sampling, leftovers): implicit decode may run. */
    r->reps[i].sched->implicit_ok = true;
    r->reps[i].step_memo = &r->perf_memo;
  }
  if ((rc = setup_loads(r)) < 0 || (rc = setup_spec(r)) < 0)
    return rc;
  return kvsim_source_open(sc->workload, sc->seed, &r->src, err);
}

static void teardown(run_t *r) {
  for (int32_t i = 0; r->reps && i < r->nrep; i++)
    kvsim__replica_fini(&r->reps[i]);
  free(r->reps);
  kvsim__free(r->loads);
  kvsim__free(r->load_stale);
  kvsim__free(r->stale);
  kvsim__router_fini(&r->router);
  kvsim__vec_free(&r->prefix_key);
  if (r->src)
    kvsim_source_close(r->src);
  kvsim__reqpool_fini(&r->pool);
  kvsim_eventq_fini(&r->q);
  kvsim_reqvec_fini(&r->finished);
  kvsim__vec_free(&r->dl);
  if (r->spec_rng)
    gsl_rng_free(r->spec_rng);
}

/* Requests in flight and nothing in the queue but this sampling tick: no
 * arrival, step end or deadline will come, and only those start a step
 * (on_arrival, on_step_end), so the run would sample for ever. It stops
 * and names the first replica holding requests. No input reaches this
 * today (the progress guard of kvsim__replica_start_step and the
 * schedulers' re-scheduling after an empty preempting step come first);
 * it keeps a future hole from writing time series without end. */
static int stuck(run_t *r) {
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

/* Requests still inside the system when the run stops are reported as
 * such: running, waiting, and swapped out (a profile's held list). Static
 * batches' placeholders of finished members were already reported and
 * are skipped. A request pulled but not yet arrived is not part of the
 * run. */
static int report_leftovers(run_t *r) {
  for (int32_t i = 0; i < r->nrep; i++) {
    kvsim_sched_t *s = r->reps[i].sched;
    int rc;
    kvsim__replica_sync(&r->reps[i]);
    for (int32_t k = 0; k < s->running.n; k++)
      if ((rc = emit_request(r, s->running.v[k])) < 0)
        return rc;
    for (int32_t k = 0; k < s->waiting.n; k++)
      if ((rc = emit_request(r, kvsim_waitq_at(&s->waiting, k))) < 0)
        return rc;
    kvsim_request_t *const *held = NULL;
    int32_t n = s->ops->held ? s->ops->held(s, &held) : 0;
    for (int32_t k = 0; k < n; k++)
      if (held[k]->status == KVSIM_REQ_SWAPPED && (rc = emit_request(r, held[k])) < 0)
        return rc;
  }
  return KVSIM_OK;
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

static int run(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
               const kvsim_run_opts_t *opts, const kvsim_sink_t *sink, kvsim_run_stats_t *stats,
               kvsim_err *err) {
  run_t r;
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
  int rc = setup(&r, res);
  if (rc < 0)
    goto out;
  kvsim_time_ns tick = kvsim_time_from_s(sc->sample_interval_s);
  if ((rc = pull_one(&r)) < 0 || (rc = kvsim_eventq_push(&r.q, 0, EV_SAMPLE, -1)) < 0)
    goto out;
  if (sc->max_time_s > 0 &&
      (rc = kvsim_eventq_push(&r.q, kvsim_time_from_s(sc->max_time_s), EV_STOP, -1)) < 0)
    goto out;
  kvsim_event_t ev;
  bool stopped = false;
  while (!stopped && kvsim_eventq_pop(&r.q, &ev)) {
    kvsim_time_ns now = ev.time;
    r.events++;
    switch (ev.kind) {
    case EV_ARRIVAL:
      rc = on_arrival(&r, ev.target, now);
      break;
    case EV_STEP:
      rc = on_step_end(&r, ev.target, now);
      break;
    case EV_SAMPLE:
      /* A sample syncs each scheduler: no count changes, but no row is
       * assumed unchanged where it costs only a refresh per tick. */
      touch_all_loads(&r);
      for (int32_t i = 0; i < r.nrep && rc >= 0; i++)
        rc = sample_replica(&r, &r.reps[i], now, true);
      if (rc >= 0 && active(&r))
        rc = kvsim_eventq_len(&r.q) == 0 ? stuck(&r) : kvsim_eventq_push(&r.q, next_tick(&r, now, tick), EV_SAMPLE, -1);
      break;
    case EV_STOP:
      stopped = true;
      break;
    case EV_DEADLINE:
      rc = on_deadline(&r, now);
      break;
    }
    if (rc < 0)
      goto out;
    if (sink && sink->progress && (r.events & 0x3fff) == 0)
      sink->progress(sink->ctx, now, stats->requests_finished + stats->requests_rejected, r.in_flight);
    /* Nothing left but the sampling tick: the run is over. */
    if (!active(&r) && r.pending_steps == 0)
      break;
  }
  stats->end_time = kvsim_eventq_now(&r.q);
  /* A closing row so that the series ends at the end of the run. */
  for (int32_t i = 0; i < r.nrep && rc >= 0; i++)
    rc = sample_replica(&r, &r.reps[i], stats->end_time, false);
  if (rc < 0 || (rc = report_leftovers(&r)) < 0)
    goto out;
  stats->requests_in_flight = r.in_flight;
  for (int32_t i = 0; i < r.nrep; i++) {
    const kvsim__replica_t *rep = &r.reps[i];
    stats->preemptions += rep->sched->num_preemptions;
    stats->spec_drafts += rep->sched->spec_drafts_total;
    stats->spec_accepted += rep->sched->spec_accepted_total;
    stats->lora_loads += rep->lora.loads;
    stats->lora_cpu_misses += rep->lora.cpu_misses;
    stats->lora_skips += rep->sched->lora_skips;
    stats->lora_load_s += rep->lora.load_s;
    stats->lora_kernel_s += rep->lora_kernel_s;
    stats->prefix_queries += rep->kv.queries;
    stats->prefix_hits += rep->kv.hits;
    stats->prefix_preempted_queries += rep->kv.preempted_queries;
    stats->prefix_preempted_hits += rep->kv.preempted_hits;
    stats->prefix_isolation_lost += rep->kv.isolation_lost;
    stats->prompt_tokens += rep->sched->prompt_tokens_total;
    stats->generation_tokens += rep->sched->generation_tokens_total;
    stats->steps += rep->steps;
    stats->sequence_steps += rep->sequence_steps;
    stats->busy_s += rep->busy_s;
    stats->evictions += rep->kv.pool.evictions;
    stats->cpu_bytes_to_cpu += rep->cpu.bytes_to_cpu;
    stats->cpu_bytes_to_gpu += rep->cpu.bytes_to_gpu;
    stats->cpu_stores += rep->cpu.stores;
    stats->cpu_evictions += rep->cpu.evictions;
    stats->cpu_transfer_s += rep->cpu.transfer_s;
    stats->ext_prefix_queries += rep->kv.ext_queries;
    stats->ext_prefix_hits += rep->kv.ext_hits;
    stats->transfer_wait_s += rep->transfer_wait_s;
    if (rep->kv_usage_peak > stats->kv_usage_peak)
      stats->kv_usage_peak = rep->kv_usage_peak;
    if (i < KVSIM_RUN_MAX_REPLICA_STATS)
      stats->replica[i] = (kvsim_replica_stats_t){r.router.routed[i], rep->kv_usage_peak,
                                                  rep->kv.queries, rep->kv.hits};
  }
  stats->replicas = r.nrep;
  stats->router = sc->router;
  stats->router_affinity = r.router.affinity_hits;
  stats->router_fallbacks = r.router.fallbacks;
  stats->router_no_identity = r.router.no_identity;
  if (r.samples) {
    stats->kv_usage_mean = r.kv_usage_sum / (double)r.samples;
    stats->running_mean = r.running_sum / (double)r.samples;
    stats->waiting_mean = r.waiting_sum / (double)r.samples;
    stats->frac_samples_kv_full = (double)r.kv_full_samples / (double)r.samples;
    stats->frac_samples_seq_bound = (double)r.seq_bound_samples / (double)r.samples;
  }
  if (r.token_frac_samples) {
    stats->kv_token_fraction_mean = r.token_frac_sum / (double)r.token_frac_samples;
    stats->kv_internal_frag_bytes_mean = r.frag_sum / (double)r.token_frac_samples;
    stats->kv_reserved_unused_bytes_mean = r.unused_sum / (double)r.token_frac_samples;
  }
  stats->skipped_rows = kvsim_source_skipped(r.src);
  kvsim_perf_mean_step(&r.perf, stats->steps, stats->prompt_tokens, stats->generation_tokens,
                       stats->requests_finished, stats->prefix_hits, &stats->mean_step);
  rc = KVSIM_OK;
out:
  teardown(&r);
  return rc;
}
