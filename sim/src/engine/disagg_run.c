/* The event loop of a disaggregated deployment (kvsim/disagg.h): prefill
 * instances and decode instances, each a replica of its side's scenario
 * with its own GPU, plan and step model, and the hand-off between them
 * (handoff.h). Events: a request arrives, an instance's step ends, a
 * transfer ends, a sampling tick, the stop time. Time-series rows number
 * the prefill instances 0..P-1 and the decode instances P..P+D-1.
 *
 * TTFT is what the client of the proxy sees: queue and prefill on the
 * prefill side, the wait for decode blocks and the transfer, and the
 * decode side's first step (vLLM recomputes the prompt's last token there:
 * scheduler.py _update_waiting_for_remote_kv sets num_computed_tokens to
 * the prompt length minus one when every block arrived; SGLang streams
 * the prefill side's token once its step in flight ends, and before the
 * prefill waits for its decode instance's poll: recv_gate_t,
 * sglang_first_token). TPOT is the decode side's alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

#include "engine/budget.h"
#include "engine/disagg.h"
#include "engine/disagg_state.h"
#include "engine/handoff.h"
#include "engine/lifecycle.h"
#include "engine/replica.h"
#include "engine/reqpool.h"
#include "engine/router.h"
#include "kvsim/engine.h"
#include "kvsim/events.h"


/* SGLang's decode side keeps this many tokens free per running and
 * incoming request (SGLANG_NUM_RESERVED_DECODE_TOKENS, default 512:
 * python/sglang/srt/disaggregation/decode.py DecodePreallocQueue). */
#define SGLANG_RESERVED_DECODE_TOKENS 512

/* SGLang's decode scheduler with --scheduler-recv-interval N > 1
 * (python/sglang/srt/managers/scheduler_recv_skipper.py,
 * SchedulerRecvSkipper.handle, which Scheduler.recv_requests asks at the
 * top of every event-loop iteration): it polls for new requests only once
 * the weights of its last batches reach N, a decode batch weighing 1
 * (SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DECODE) and any other, such as the
 * prebuilt batch of requests whose KV landed, 1000 (_WEIGHT_DEFAULT); an
 * idle loop (no batch, weight 1) spins without a forward, so an idle
 * instance takes a request at once. A request its decode instance has not
 * received cannot bootstrap: the prefill side's PrefillBootstrapQueue
 * holds it until the decode side's DecodePreallocQueue has pre-allocated
 * (python/sglang/srt/disaggregation/prefill.py pop_bootstrapped, decode.py
 * pop_preallocated). */
#define SGLANG_RECV_WEIGHT_DEFAULT 1000



static int emit(drun_t *r, kvsim_request_t *q) { return kvsim__emit_request(r->sink, q); }

static int pull(drun_t *r);

/* A request leaves (lifecycle.h; its prefill twin, if it never reached
 * the prefill engine, went back to the pool before). */
static int retire(drun_t *r, kvsim_request_t *q, kvsim_time_ns now) {
  int more = kvsim__request_leave(r->st, r->sink, r->src, &r->pool, &r->in_flight, q, now);
  if (more < 0)
    return more;
  return more > 0 || r->src_blocked ? pull(r) : KVSIM_OK;
}

/* Pulls one request: its decode object and its prefill twin (the prompt
 * with max_tokens=1, as vLLM's proxy sends it to the prefill instance:
 * tests/v1/kv_connector/nixl_integration/toy_proxy_server.py). */
static int pull(drun_t *r) {
  kvsim_req_spec_t spec;
  int rc = kvsim__request_next(r->src, &spec, &r->src_end, &r->src_blocked, r->in_flight,
                               kvsim_eventq_now(&r->q), r->err);
  if (rc <= 0)
    return rc;
  /* A new chunk of request objects: within the memory budget beside both
   * sides' pools (budget.h), as run.c's pull_one checks. */
  if (r->pool.nfree < 2 &&
      (rc = kvsim__budget_check_requests(r->fixed_bytes, (int64_t)(r->pool.nchunks + 1) * KVSIM__REQ_CHUNK,
                                         r->err)) < 0)
    return rc;
  kvsim_request_t *dec = kvsim__reqpool_get(&r->pool), *pre = dec ? kvsim__reqpool_get(&r->pool) : NULL;
  if (!pre) {
    if (dec)
      kvsim__reqpool_put(&r->pool, dec);
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for requests in flight");
  }
  kvsim_time_ns now = kvsim_eventq_now(&r->q);
  kvsim__request_from_spec(dec, &spec, now);
  kvsim__request_from_spec(pre, &spec, now);
  pre->spec.output_tokens = 1;
  int32_t s = dec->slot;
  if (kvsim__vec_reserve(&r->pre_of, (int64_t)s + 1) < 0 ||
      kvsim__vec_reserve(&r->prefix_key, (int64_t)s + 1) < 0)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for request identity");
  if (s >= r->pre_of.n)
    r->pre_of.n = r->prefix_key.n = (int64_t)s + 1;
  r->pre_of.v[s] = pre->slot;
  r->prefix_key.v[s] = kvsim__router_prefix_key(spec.segments, spec.num_segments, spec.tenant);
  if (kvsim_kvcache_prepare(r->side[1].kvs[0], dec) < 0 || kvsim_kvcache_prepare(r->side[0].kvs[0], pre) < 0)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for request identity");
  dec->spec.segments = pre->spec.segments = NULL;
  dec->spec.num_segments = pre->spec.num_segments = 0;
  r->in_flight++;
  r->arrivals++;
  return kvsim_eventq_push(&r->q, dec->arrival, EV_ARRIVAL, s);
}

static int32_t route(drun_t *r, side_t *sd, int32_t slot) {
  if (kvsim__router_needs_load(&sd->router))
    for (int32_t i = 0; i < sd->n; i++) {
      const kvsim__replica_t *rep = &sd->reps[i];
      const kvsim_pool_t *p = &rep->kv.pool;
      sd->loads[i] = (kvsim__router_load_t){rep->sched->running.n + rep->sched->waiting.n,
                                            kvsim_pool_usable(p) - kvsim_pool_num_free(p),
                                            kvsim_pool_usable(p)};
    }
  return kvsim__router_pick(&sd->router, r->prefix_key.v[slot], sd->loads);
}

/* Starts instance g's next step unless one is in flight. */
static int start_step(drun_t *r, int32_t g, kvsim_time_ns now) {
  kvsim__replica_t *rep = rep_of(r, g);
  if (rep->busy)
    return KVSIM_OK;
  const int32_t np = r->side[0].n;
  side_t *sd = g < np ? &r->side[0] : &r->side[1];
  /* Blocks held for a hand-off (prefill) or coming in (decode) will be
   * freed or used when a transfer ends: waiting behind them is not the
   * stall the replica's progress guard looks for. */
  if (g < np ? r->ho.held[g] > 0 : r->ho.inbound[g - np] > 0)
    rep->stalled = 0;
  kvsim_time_ns dt;
  int rc = kvsim__replica_start_step(rep, &sd->perf, NULL, sd->sc.model.sliding_window, now, &dt, r->err);
  if (rc < 0 || dt < 0)
    return rc;
  if (dt > KVSIM_TIME_NEVER - 1 - now)
    return kvsim_err_set(r->err, KVSIM_EINVAL, "run: the simulated clock would overflow");
  r->pending++;
  r->step_end[g] = now + dt;
  return kvsim_eventq_push(&r->q, now + dt, EV_STEP, g);
}

static int start_transfers(drun_t *r, kvsim_time_ns now) {
  /* Until the queue has nothing more to start: layer transfers' last
   * sends hold no endpoint, so more than xcap may start at once. */
  int32_t n;
  do {
    n = kvsim__handoff_start(&r->ho, now, r->xs, r->xe, r->xcap);
    for (int32_t i = 0; i < n; i++) {
      int rc = kvsim_eventq_push(&r->q, r->xe[i], EV_XFER, r->xs[i]);
      if (rc < 0)
        return rc;
      r->pending++;
    }
  } while (n > 0 && n == r->xcap);
  return KVSIM_OK;
}

/* Decode instance d's blocks for the requests waiting for them; SGLang's
 * bootstrapped requests then enter their prefill instance. */
static int alloc_decode(drun_t *r, int32_t d, kvsim_time_ns now) {
  const kvsim_sched_t *s = r->side[1].reps[d].sched;
  const bool sgl = r->sc->disagg.flow == KVSIM_DISAGG_FLOW_SGLANG;
  int32_t n = 0;
  int rc = kvsim__handoff_alloc(&r->ho, d, s->running.n, s->cfg.max_num_seqs,
                                sgl ? SGLANG_RESERVED_DECODE_TOKENS : 0, now, r->started,
                                r->started_cap, &n, r->err);
  if (rc < 0)
    return rc;
  for (int32_t i = 0; i < n; i++) {
    kvsim_request_t *pre = r->started[i];
    kvsim__handoff_entry_t *e = kvsim__handoff_of(&r->ho, pre);
    pre->status = KVSIM_REQ_WAITING;
    if ((rc = kvsim__replica_add(&r->side[0].reps[e->p], pre, now, r->err)) < 0 ||
        (rc = start_step(r, e->p, now)) < 0)
      return rc;
  }
  return start_transfers(r, now);
}

/* SGLang: decode instance d has received the request (dec's slot) and
 * pre-allocates its blocks before prefill instance p may run it. */
static int bootstrap(drun_t *r, int32_t slot, int32_t p, int32_t d, kvsim_time_ns now) {
  kvsim_request_t *dec = kvsim__reqpool_at(&r->pool, slot);
  kvsim_request_t *pre = kvsim__reqpool_at(&r->pool, r->pre_of.v[slot]);
  int rc = kvsim__handoff_add(&r->ho, pre, dec, p, d, KVSIM__HO_BOOTSTRAP, now, r->err);
  return rc < 0 ? rc : alloc_decode(r, d, now);
}

/* Decode instance d polls: every request waiting in its inbox, in order of
 * arrival, is received and bootstraps. */
static int receive(drun_t *r, int32_t d, kvsim_time_ns now) {
  r->gate.weight[d] = 0;
  for (int64_t i = 0; i < r->gate.inbox[d].n; i++) {
    inbox_entry_t e = r->gate.inbox[d].v[i];
    int rc = bootstrap(r, e.slot, e.p, d, now);
    if (rc < 0)
      return rc;
  }
  r->gate.inbox[d].n = 0;
  return KVSIM_OK;
}

static const char *admit(drun_t *r, const kvsim_request_t *q) {
  const kvsim_plan_t *pp = &r->side[0].res.plan, *dp = &r->side[1].res.plan;
  int64_t total = kvsim_request_total_tokens(q);
  if (total > dp->p.max_model_len || q->num_prompt + 1 > pp->p.max_model_len) {
    r->st->rejected_too_long++;
    return "prompt_tokens + output_tokens > max_model_len";
  }
  if (!kvsim__replica_fits(&r->side[0].reps[0], pp, q->num_prompt) ||
      !kvsim__replica_fits(&r->side[1].reps[0], dp, total - 1)) {
    r->st->rejected_no_fit++;
    return "needs more KV blocks than the pool holds";
  }
  /* Each side's engine refuses at arrival what it would never schedule. */
  for (int k = 0; k < 2; k++) {
    const kvsim_sched_t *s = r->side[k].reps[0].sched;
    const char *refused = s->ops->refuse ? s->ops->refuse(s, q) : NULL;
    if (refused) {
      r->st->rejected_admission++;
      return refused;
    }
  }
  const kvsim_admission_t *a = &r->sc->admission;
  if ((a->max_prompt_tokens && q->spec.prompt_tokens > a->max_prompt_tokens) ||
      (a->max_output_tokens && q->spec.output_tokens > a->max_output_tokens)) {
    r->st->rejected_admission++;
    return "admission: prompt or output tokens over the limit";
  }
  return NULL;
}

static int on_arrival(drun_t *r, int32_t slot, kvsim_time_ns now) {
  kvsim_request_t *dec = kvsim__reqpool_at(&r->pool, slot);
  kvsim_request_t *pre = kvsim__reqpool_at(&r->pool, r->pre_of.v[slot]);
  r->st->requests_arrived++;
  r->arrivals--;
  if (r->st->first_arrival == KVSIM_TIME_NEVER || dec->arrival < r->st->first_arrival)
    r->st->first_arrival = dec->arrival;
  int rc = pull(r);
  if (rc < 0)
    return rc;
  const char *why = admit(r, dec);
  if (why) {
    kvsim__reqpool_put(&r->pool, pre);
    dec->status = KVSIM_REQ_REJECTED;
    dec->reject_reason = why;
    dec->finish = now;
    return retire(r, dec, now);
  }
  int32_t p = route(r, &r->side[0], slot);
  dec->status = KVSIM_REQ_WAITING;
  if (r->sc->disagg.flow == KVSIM_DISAGG_FLOW_SGLANG) {
    /* The load balancer picks both instances at once; the decode one
     * receives the request when its scheduler next polls (recv_gate_t). */
    int32_t d = route(r, &r->side[1], slot);
    dec->replica = r->side[0].n + d;
    if (r->gate.interval > 1 && r->side[1].reps[d].busy)
      return kvsim__vec_push(&r->gate.inbox[d], ((inbox_entry_t){slot, p})) < 0
                 ? kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for the decode inbox")
                 : KVSIM_OK;
    return bootstrap(r, slot, p, d, now);
  }
  dec->replica = p;
  if ((rc = kvsim__handoff_add(&r->ho, pre, dec, p, -1, KVSIM__HO_PREFILL, now, r->err)) < 0)
    return rc;
  pre->status = KVSIM_REQ_WAITING;
  if ((rc = kvsim__replica_add(&r->side[0].reps[p], pre, now, r->err)) < 0)
    return rc;
  return start_step(r, p, now);
}

/* A prefill instance's step ended: with chunk transfers its requests
 * still prefilling send the blocks this chunk completed; its finished
 * requests hold their blocks for the hand-off. */
static int prefill_end(drun_t *r, int32_t p, kvsim_time_ns now) {
  r->finished.n = 0;
  kvsim__replica_t *rep = &r->side[0].reps[p];
  const kvsim_time_ns step_start = rep->step_start;
  int rc = kvsim__replica_end_step(rep, now, &r->finished, r->err);
  if (rc < 0)
    return rc;
  for (int64_t i = 0; r->ho.chunked && i < rep->step.reqs.n; i++) {
    kvsim_request_t *pre = rep->step.reqs.v[i];
    kvsim__handoff_entry_t *e;
    if (pre->status == KVSIM_REQ_RUNNING && pre->num_computed < pre->num_prompt &&
        (e = kvsim__handoff_of(&r->ho, pre)))
      kvsim__handoff_chunk(&r->ho, e, pre->num_computed, now);
  }
  /* Layer transfers: every request of the step sent its layers during
   * it, the finished ones their last blocks too (before they are held). */
  for (int64_t i = 0; r->ho.layered && i < rep->step.reqs.n; i++) {
    kvsim_request_t *pre = rep->step.reqs.v[i];
    kvsim__handoff_entry_t *e = kvsim__handoff_of(&r->ho, pre);
    if (e && e->pre == pre)
      kvsim__handoff_layer(&r->ho, e, pre->num_computed, pre->num_computed >= pre->num_prompt,
                           step_start, now);
  }
  for (int64_t i = 0; i < r->finished.n; i++) {
    kvsim_request_t *pre = r->finished.v[i];
    kvsim__handoff_entry_t *e = kvsim__handoff_of(&r->ho, pre);
    e->dec->first_scheduled = pre->first_scheduled;
    e->dec->num_cached_tokens = pre->num_cached_tokens;
    /* The request's preemptions are both sides' (as the summary's total):
     * the decode object carries the prefill twin's into requests.csv and
     * requests_preempted. Schedulers read the count only as "ever
     * preempted" of a request they re-admit, which a decode object joining
     * the running batch is not. */
    e->dec->num_preemptions += pre->num_preemptions;
    /* vLLM: the proxy sends the request to a decode instance once the
     * prefill has answered; SGLang's was picked at arrival. */
    int32_t d = e->d >= 0 ? e->d : route(r, &r->side[1], e->dec->slot);
    e->dec->replica = r->side[0].n + d;
    if ((rc = kvsim__handoff_prefill_done(&r->ho, e, d, now, r->err)) < 0 ||
        (rc = alloc_decode(r, d, now)) < 0)
      return rc;
  }
  if ((rc = start_transfers(r, now)) < 0)
    return rc;
  return start_step(r, p, now);
}

static int decode_end(drun_t *r, int32_t d, kvsim_time_ns now) {
  r->finished.n = 0;
  int rc = kvsim__replica_end_step(&r->side[1].reps[d], now, &r->finished, r->err);
  if (rc < 0)
    return rc;
  for (int64_t i = 0; i < r->finished.n; i++)
    if ((rc = retire(r, r->finished.v[i], now)) < 0)
      return rc;
  /* The next iteration's poll (recv_gate_t): this step's weight, 1 for a
   * decode batch, the default if requests landed (their prebuilt batch). */
  recv_gate_t *g = &r->gate;
  if (g->interval > 1) {
    g->weight[d] += g->landed[d] ? SGLANG_RECV_WEIGHT_DEFAULT : 1;
    g->landed[d] = false;
    if (g->weight[d] >= g->interval && (rc = receive(r, d, now)) < 0)
      return rc;
  }
  if ((rc = alloc_decode(r, d, now)) < 0 || (rc = start_step(r, r->side[0].n + d, now)) < 0)
    return rc;
  /* Nothing to run: the idle loop polls at once. */
  if (g->interval > 1 && g->inbox[d].n > 0 && !r->side[1].reps[d].busy)
    return receive(r, d, now);
  return KVSIM_OK;
}

/* SGLang: the first token, sampled by the prefill side, came with the
 * KV (the metadata buffers' output_ids); the decode side streams it from
 * its prebuilt batch at its next loop iteration, without a forward
 * (python/sglang/srt/disaggregation/decode.py get_new_prebuilt_batch,
 * then the event loop's stream_output), once its step in flight, if any,
 * has ended, and decodes from the second token on. Returns whether that
 * was the request's only token (then finished and its blocks freed). */
static bool sglang_first_token(drun_t *r, int32_t d, kvsim_request_t *dec, kvsim_time_ns now) {
  kvsim__replica_t *rep = &r->side[1].reps[d];
  const bool only = dec->spec.output_tokens <= 1;
  /* A lone token finishes on arrival: the request leaves now. */
  kvsim_time_ns at = rep->busy && !only ? r->step_end[r->side[0].n + d] : now;
  dec->num_computed = dec->num_prompt;
  if (!kvsim_sched_emit_token(rep->sched, dec, at))
    return false;
  kvsim_kvcache_free(&rep->kv, dec);
  return true;
}

/* A transfer ended: the prefill side frees, the decode side's request
 * joins its running batch with the prompt's KV in place. */
static int on_xfer(drun_t *r, int32_t slot, kvsim_time_ns now) {
  kvsim__handoff_entry_t *e = kvsim__handoff_done(&r->ho, slot, now);
  if (!e) /* a chunk: the link is free for the next send */
    return start_transfers(r, now);
  kvsim_request_t *dec = e->dec;
  int32_t p = e->p, d = e->d;
  kvsim__reqpool_put(&r->pool, e->pre);
  kvsim__handoff_landed(&r->ho, e);
  int rc;
  if (r->sc->disagg.flow != KVSIM_DISAGG_FLOW_SGLANG)
    /* vLLM: the decode side recomputes the prompt's last token, and that
     * step gives the first token. */
    dec->num_computed = dec->num_prompt > 0 ? dec->num_prompt - 1 : 0;
  else if (sglang_first_token(r, d, dec, now)) {
    if ((rc = retire(r, dec, now)) < 0 || (rc = alloc_decode(r, d, now)) < 0 ||
        (rc = start_transfers(r, now)) < 0)
      return rc;
    return start_step(r, p, now);
  }
  kvsim_sched_t *s = r->side[1].reps[d].sched;
  if (kvsim_reqvec_push(&s->running, dec) < 0)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for the decode batch");
  dec->status = KVSIM_REQ_RUNNING;
  if (r->gate.interval > 1)
    r->gate.landed[d] = true;
  if ((rc = start_transfers(r, now)) < 0 || (rc = start_step(r, p, now)) < 0)
    return rc;
  return start_step(r, r->side[0].n + d, now);
}

static int on_sample(drun_t *r, kvsim_time_ns now) {
  kvsim_disagg_sample_t ds;
  memset(&ds, 0, sizeof ds);
  ds.time_ns = now;
  int32_t g = 0;
  for (int k = 0; k < 2; k++) {
    side_t *sd = &r->side[k];
    double sum = 0;
    for (int32_t i = 0; i < sd->n; i++, g++) {
      kvsim_sample_t s;
      int rc = kvsim__replica_sample(&sd->reps[i], &sd->res.plan, now, false, &s, r->err);
      if (rc < 0)
        return rc;
      s.replica = g;
      sum += s.kv_cache_usage;
      if (s.kv_cache_usage > sd->usage_peak)
        sd->usage_peak = s.kv_cache_usage;
      r->usage_sum += s.kv_cache_usage;
      r->running_sum += (double)s.num_requests_running;
      r->waiting_sum += (double)s.num_requests_waiting;
      r->samples++;
      r->kv_full += s.kv_cache_usage >= 0.99 && s.num_requests_waiting > 0;
      r->seq_bound += s.num_requests_running >= sd->reps[i].sched->cfg.max_num_seqs;
      if (s.kv_allocated_bytes > 0) {
        r->frac_sum += (double)s.kv_token_bytes / (double)s.kv_allocated_bytes;
        r->frag_sum += (double)s.kv_internal_frag_bytes;
        r->unused_sum += (double)s.kv_reserved_unused_bytes;
        r->frac_samples++;
      }
      if (r->sink && r->sink->sample && (rc = r->sink->sample(r->sink->ctx, &s)) < 0)
        return rc;
    }
    *(k ? &ds.decode_kv_usage : &ds.prefill_kv_usage) = sum / sd->n;
  }
  kvsim__handoff_sample(&r->ho, &ds);
  return r->sink && r->sink->disagg_sample ? r->sink->disagg_sample(r->sink->ctx, &ds) : KVSIM_OK;
}

static int setup_side(drun_t *r, int k) {
  side_t *sd = &r->side[k];
  int rc = kvsim_scenario_disagg_side(r->sc, (kvsim_disagg_side)k, &sd->sc, r->err);
  if (rc < 0 || (rc = kvsim_scenario_resolve(&sd->sc, &sd->res, r->err)) < 0 ||
      (rc = kvsim_perf_init(&sd->perf, &sd->sc.model, &sd->sc.gpu, &sd->res.plan, r->err)) < 0)
    return rc;
  /* Each side's pools within the run's memory budget (budget.h). */
  if ((rc = kvsim__budget_check_replicas(&sd->sc, &sd->res, r->err)) < 0)
    return rc;
  r->fixed_bytes += kvsim__budget_replicas_bytes(&sd->sc, &sd->res);
  sd->n = sd->sc.replicas;
  sd->reps = kvsim__calloc((size_t)sd->n, sizeof *sd->reps);
  sd->loads = kvsim__calloc((size_t)sd->n, sizeof *sd->loads);
  sd->kvs = kvsim__calloc((size_t)sd->n, sizeof *sd->kvs);
  if (!sd->reps || !sd->loads || !sd->kvs)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for %d instances", sd->n);
  if ((rc = kvsim__router_init(&sd->router, sd->sc.router, sd->n, sd->sc.router_imbalance, r->err)) < 0)
    return rc;
  for (int32_t i = 0; i < sd->n; i++) {
    if ((rc = kvsim__replica_init(&sd->reps[i], i, &sd->sc, &sd->res, r->err)) < 0)
      return rc;
    sd->kvs[i] = &sd->reps[i].kv;
  }
  return KVSIM_OK;
}

static int setup(drun_t *r) {
  int rc;
  for (int k = 0; k < 2; k++)
    if ((rc = setup_side(r, k)) < 0)
      return rc;
  kvsim__handoff_side_t hs[2];
  for (int k = 0; k < 2; k++) {
    const kvsim_plan_t *pl = &r->side[k].res.plan;
    hs[k] = (kvsim__handoff_side_t){r->side[k].n, r->side[k].kvs, pl->p.tp,
                                    pl->block_bytes * pl->p.tp * (pl->p.pp > 0 ? pl->p.pp : 1),
                                    r->side[k].sc.model.num_layers};
  }
  /* What one transfer moves: the scenario's, else the prefill profile's
   * rule, which needs the decode blocks before the prefill (kvsim/disagg.h). */
  kvsim_disagg_unit unit =
      kvsim_disagg_unit_of(&r->sc->disagg, r->side[0].sc.sched_ops->defaults.kv_send_chunks);
  if ((rc = kvsim__handoff_init(&r->ho, &r->sc->disagg, unit, &hs[0], &hs[1], r->err)) < 0)
    return rc;
  if (r->sc->disagg.flow == KVSIM_DISAGG_FLOW_SGLANG) {
    const int32_t nd = r->side[1].n;
    r->gate.interval = r->side[1].res.plan.p.sglang.scheduler_recv_interval;
    r->gate.weight = kvsim__calloc((size_t)nd, sizeof *r->gate.weight);
    r->gate.landed = kvsim__calloc((size_t)nd, sizeof *r->gate.landed);
    r->gate.inbox = kvsim__calloc((size_t)nd, sizeof *r->gate.inbox);
    if (!r->gate.weight || !r->gate.landed || !r->gate.inbox)
      return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for the decode inboxes");
  }
  r->step_end = kvsim__calloc((size_t)(r->side[0].n + r->side[1].n), sizeof *r->step_end);
  if (!r->step_end)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for the instances' steps");
  r->xcap = r->side[0].n < r->side[1].n ? r->side[0].n : r->side[1].n;
  r->started_cap = 64;
  r->xs = kvsim__calloc((size_t)r->xcap, sizeof *r->xs);
  r->xe = kvsim__calloc((size_t)r->xcap, sizeof *r->xe);
  r->started = kvsim__calloc((size_t)r->started_cap, sizeof *r->started);
  if (!r->xs || !r->xe || !r->started)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for the hand-off");
  /* The summary's configuration is the decode side's (its pool serves
   * every token after the first); the prefill side's is in disagg. */
  r->st->resolved = r->side[1].res;
  r->st->plan = r->side[1].res.plan;
  r->st->pool_blocks = r->side[1].res.pool_usable;
  return kvsim_source_open(r->sc->workload, r->sc->seed, &r->src, r->err);
}

static void teardown(drun_t *r) {
  for (int k = 0; k < 2; k++) {
    side_t *sd = &r->side[k];
    for (int32_t i = 0; sd->reps && i < sd->n; i++)
      kvsim__replica_fini(&sd->reps[i]);
    kvsim__free(sd->reps);
    kvsim__free(sd->loads);
    kvsim__free(sd->kvs);
    kvsim__router_fini(&sd->router);
    kvsim_scenario_fini(&sd->sc);
  }
  kvsim__handoff_fini(&r->ho);
  for (int32_t i = 0; r->gate.inbox && i < r->side[1].n; i++)
    kvsim__vec_free(&r->gate.inbox[i]);
  kvsim__free(r->gate.inbox);
  kvsim__free(r->gate.weight);
  kvsim__free(r->gate.landed);
  kvsim__free(r->step_end);
  kvsim__free(r->xs);
  kvsim__free(r->xe);
  kvsim__free(r->started);
  kvsim__vec_free(&r->pre_of);
  kvsim__vec_free(&r->prefix_key);
  if (r->src)
    kvsim_source_close(r->src);
  kvsim__reqpool_fini(&r->pool);
  kvsim_eventq_fini(&r->q);
  kvsim_reqvec_fini(&r->finished);
}


/* Requests still in the system at a max_time_s stop: the decode objects
 * of those in an engine or a hand-off (one still in prefill with its
 * twin's preemptions so far, as prefill_end would add them). */
static int leftovers(drun_t *r) {
  for (int64_t s = 0; s < r->ho.e.n; s++)
    if (r->ho.e.v[s].state != KVSIM__HO_FREE) {
      kvsim__handoff_entry_t *e = &r->ho.e.v[s];
      if (e->state == KVSIM__HO_PREFILL && e->pre)
        e->dec->num_preemptions += e->pre->num_preemptions;
      int rc = emit(r, e->dec);
      if (rc < 0)
        return rc;
    }
  for (int32_t i = 0; r->gate.inbox && i < r->side[1].n; i++)
    for (int64_t k = 0; k < r->gate.inbox[i].n; k++) {
      int rc = emit(r, kvsim__reqpool_at(&r->pool, r->gate.inbox[i].v[k].slot));
      if (rc < 0)
        return rc;
    }
  for (int32_t i = 0; i < r->side[1].n; i++) {
    const kvsim_sched_t *s = r->side[1].reps[i].sched;
    for (int64_t k = 0; k < s->running.n; k++) {
      int rc = emit(r, s->running.v[k]);
      if (rc < 0)
        return rc;
    }
    for (int32_t k = 0; k < s->waiting.n; k++) {
      int rc = emit(r, kvsim_waitq_at(&s->waiting, k));
      if (rc < 0)
        return rc;
    }
  }
  return KVSIM_OK;
}



int kvsim__disagg_run(const kvsim_scenario_t *sc, const kvsim_run_opts_t *opts, const kvsim_sink_t *sink,
                      kvsim_run_stats_t *stats, kvsim_err *err) {
  drun_t r;
  memset(&r, 0, sizeof r);
  r.sc = sc;
  r.sink = sink;
  r.st = stats;
  r.err = err;
  kvsim_eventq_init(&r.q);
  int rc = setup(&r);
  if (rc < 0)
    goto out;
  kvsim_time_ns tick = kvsim_time_from_s(sc->sample_interval_s);
  if ((rc = pull(&r)) < 0 || (rc = kvsim_eventq_push(&r.q, 0, EV_SAMPLE, -1)) < 0)
    goto out;
  if (sc->max_time_s > 0 &&
      (rc = kvsim_eventq_push(&r.q, kvsim_time_from_s(sc->max_time_s), EV_STOP, -1)) < 0)
    goto out;
  kvsim_event_t ev;
  bool stopped = false;
  const int32_t np = r.side[0].n;
  while (!stopped && kvsim_eventq_pop(&r.q, &ev)) {
    kvsim_time_ns now = ev.time;
    switch (ev.kind) {
    case EV_ARRIVAL:
      rc = on_arrival(&r, ev.target, now);
      break;
    case EV_STEP:
      r.pending--;
      rc = ev.target < np ? prefill_end(&r, ev.target, now) : decode_end(&r, ev.target - np, now);
      break;
    case EV_XFER:
      r.pending--;
      rc = on_xfer(&r, ev.target, now);
      break;
    case EV_SAMPLE:
      rc = on_sample(&r, now);
      if (rc >= 0 && (r.in_flight > 0 || !r.src_end))
        rc = kvsim_eventq_push(&r.q, now + tick, EV_SAMPLE, -1);
      break;
    case EV_STOP:
      stopped = true;
      break;
    }
    if (rc < 0 || (opts && opts->check_invariants && (rc = kvsim__drun_check_all(&r)) < 0))
      goto out;
    if (r.in_flight == 0 && r.src_end && r.pending == 0)
      break;
    /* Requests in flight with nothing scheduled: nothing can move them. */
    if (r.pending == 0 && r.arrivals == 0 && r.in_flight > 0) {
      rc = kvsim__drun_stuck(&r);
      goto out;
    }
  }
  stats->end_time = kvsim_eventq_now(&r.q);
  if ((rc = on_sample(&r, stats->end_time)) < 0 || (rc = leftovers(&r)) < 0)
    goto out;
  stats->requests_in_flight = r.in_flight;
  kvsim__drun_totals(&r);
  stats->skipped_rows = kvsim_source_skipped(r.src);
  rc = KVSIM_OK;
out:
  teardown(&r);
  return rc;
}
