/* The aggregated loop's way in (run_state.h): requests pulled from the
 * workload, routed to a replica over the loads as they stand, admitted or
 * rejected like the OpenAI server and the profile's refuse hook, and
 * admission's max_wait_s deadlines. */
#include <assert.h>
#include <string.h>

#include "engine/budget.h"
#include "engine/lifecycle.h"
#include "engine/run_state.h"

/* Pulls one request from the workload and schedules its arrival. */
int kvsim__run_pull(kvsim__run_t *r) {
  kvsim_req_spec_t spec;
  int rc = kvsim__request_next(r->src, &spec, &r->src_end, &r->src_blocked, r->in_flight,
                               kvsim_eventq_now(&r->q), r->err);
  if (rc <= 0)
    return rc;
  /* A new chunk of requests: within the budget (budget.h)? */
  if (r->pool.nfree == 0 &&
      (rc = kvsim__budget_check_requests(
           r->fixed_bytes, (int64_t)(r->pool.nchunks + 1) * KVSIM__REQ_CHUNK, r->err)) < 0)
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
  r->prefix_key.v[q->slot] =
      kvsim__router_prefix_key(spec.segments, spec.num_segments, spec.tenant);
  if (kvsim_kvcache_prepare(&r->reps[0].kv, q) < 0)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for request identity");
  q->spec.segments = NULL;
  q->spec.num_segments = 0;
  r->in_flight++;
  return kvsim_eventq_push(&r->q, q->arrival, KVSIM__EV_ARRIVAL, q->slot);
}

static int add_deadline(kvsim__run_t *r, const kvsim_request_t *q, kvsim_time_ns now);

static const char *admit(kvsim__run_t *r, kvsim__replica_t *rep, kvsim_request_t *q) {
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

/* The replica for request `q`: the router's pick over the replicas' loads
 * as they stand at its arrival (router.h). */
static int32_t route(kvsim__run_t *r, const kvsim_request_t *q) {
  if (r->stale) {
    for (int32_t k = 0; k < r->nstale; k++) {
      int32_t i = r->stale[k];
      r->load_stale[i] = 0;
      kvsim__router_load_t old = r->loads[i];
      r->loads[i] = kvsim__run_load_of(&r->reps[i]);
      kvsim__router_update(&r->router, i, &old);
    }
    r->nstale = 0;
#ifndef NDEBUG
    for (int32_t i = 0; i < r->nrep; i++) {
      kvsim__router_load_t l = kvsim__run_load_of(&r->reps[i]);
      assert(l.requests == r->loads[i].requests && l.used_blocks == r->loads[i].used_blocks &&
             l.usable_blocks == r->loads[i].usable_blocks);
    }
#endif
  } else if (kvsim__router_needs_load(&r->router)) {
    for (int32_t i = 0; i < r->nrep; i++)
      r->loads[i] = kvsim__run_load_of(&r->reps[i]);
  }
  return kvsim__router_pick(&r->router, r->prefix_key.v[q->slot], r->loads);
}

int kvsim__run_on_arrival(kvsim__run_t *r, int32_t slot, kvsim_time_ns now) {
  kvsim_request_t *q = kvsim__reqpool_at(&r->pool, slot);
  r->st->requests_arrived++;
  r->st->lora_requests += q->spec.lora > 0;
  if (r->st->first_arrival == KVSIM_TIME_NEVER || q->arrival < r->st->first_arrival)
    r->st->first_arrival = q->arrival;
  int32_t ri = route(r, q);
  kvsim__run_touch_load(r, ri);
  kvsim__replica_t *rep = &r->reps[ri];
  q->replica = ri;
  const char *why = admit(r, rep, q);
  int rc;
  /* Pull the next request: one pull per processed arrival. */
  if ((rc = kvsim__run_pull(r)) < 0)
    return rc;
  if (why) {
    q->status = KVSIM_REQ_REJECTED;
    q->reject_reason = why;
    q->finish = now;
    rc = kvsim__run_retire(r, q, now);
    if (rc < 0)
      return rc;
    return rc > 0 ? kvsim__run_pull(r) : KVSIM_OK;
  }
  q->status = KVSIM_REQ_WAITING;
  if ((rc = kvsim__replica_add(rep, q, now, r->err)) < 0)
    return rc;
  if (r->sc->admission.max_wait_s > 0 && (rc = add_deadline(r, q, now)) < 0)
    return rc;
  return rep->busy && !r->lockstep ? KVSIM_OK : kvsim__run_start_step(r, rep, now);
}

static int add_deadline(kvsim__run_t *r, const kvsim_request_t *q, kvsim_time_ns now) {
  /* Reuse the consumed front instead of growing forever. */
  if (r->dl_head == r->dl.n) {
    r->dl.n = r->dl_head = 0;
  } else if (r->dl_head >= 1024 && r->dl_head * 2 >= r->dl.n) {
    memmove(r->dl.v, r->dl.v + r->dl_head, (size_t)(r->dl.n - r->dl_head) * sizeof *r->dl.v);
    r->dl.n -= r->dl_head;
    r->dl_head = 0;
  }
  kvsim__deadline_t d = {0, q->slot, q->spec.id};
  int rc = kvsim__run_later(r, now, kvsim_time_from_s(r->sc->admission.max_wait_s), &d.time);
  if (rc < 0)
    return rc;
  if (kvsim__vec_push(&r->dl, d) < 0)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for deadlines");
  if (!r->dl_armed) {
    r->dl_armed = true;
    return kvsim_eventq_push(&r->q, d.time, KVSIM__EV_DEADLINE, -1);
  }
  return KVSIM_OK;
}

/* Rejects requests that waited past max_wait_s without being scheduled. */
int kvsim__run_on_deadline(kvsim__run_t *r, kvsim_time_ns now) {
  r->dl_armed = false;
  while (r->dl_head < r->dl.n) {
    kvsim__deadline_t d = r->dl.v[r->dl_head];
    if (d.time > now) {
      r->dl_armed = true;
      return kvsim_eventq_push(&r->q, d.time, KVSIM__EV_DEADLINE, -1);
    }
    r->dl_head++;
    kvsim_request_t *q = kvsim__reqpool_at(&r->pool, d.slot);
    if (q->spec.id != d.id || q->status != KVSIM_REQ_WAITING ||
        q->first_scheduled != KVSIM_TIME_NEVER)
      continue;
    kvsim_sched_t *s = r->reps[q->replica].sched;
    kvsim__run_touch_load(r, q->replica);
    if (!kvsim_waitq_remove(&s->waiting, q))
      continue;
    q->status = KVSIM_REQ_REJECTED;
    q->reject_reason = "admission: waited longer than max_wait_s";
    q->finish = now;
    r->st->rejected_admission++;
    int rc = kvsim__run_retire(r, q, now);
    if (rc < 0 || (rc > 0 && (rc = kvsim__run_pull(r)) < 0))
      return rc;
  }
  return KVSIM_OK;
}
