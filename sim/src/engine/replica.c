#include "engine/replica.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"

int kvsim__replica_init(kvsim__replica_t *rep, int32_t index, const kvsim_scenario_t *sc,
                        const kvsim_resolved_t *res, kvsim_err *err) {
  memset(rep, 0, sizeof *rep);
  rep->index = index;
  rep->where = sc->path[0] ? sc->path : sc->name;
  const kvsim_plan_t *pl = &res->plan;
  int rc = kvsim_kvcache_init(&rep->kv, pl, res->pool_blocks, res->sched.enable_prefix_caching, err);
  if (rc < 0)
    return rc;
  /* The first checked step runs the full check too (kvsim__replica_check_due). */
  rep->check_work = kvsim_pool_usable(&rep->kv.pool);
  /* The CPU tier: V0 swap space is per GPU (num_cpu_blocks = swap_space //
   * block bytes); the V1 offloading connector's size is the total over TP
   * ranks (CPUOffloadingSpec: bytes // (block bytes x world size)). Each
   * rank moves its share over its own host link. */
  bool offload = sc->offload.cpu_gib > 0;
  int64_t cpu_blocks = offload ? pl->offload_blocks : pl->swap_blocks;
  rc = kvsim_cpu_tier_init(&rep->cpu, cpu_blocks, pl->block_bytes, sc->gpu.host_link_GBps,
                           sc->gpu.host_link_latency_us, offload, err);
  if (rc < 0)
    return rc;
  rc = kvsim_sched_new(sc->sched_ops, &res->sched, &rep->kv, &rep->sched, err);
  if (rc < 0) /* a pool the profile cannot use: name the scenario */
    return rc == KVSIM_ENOFIT ? kvsim_err_prefix(err, "%s", rep->where) : rc;
  rep->sched->cpu = &rep->cpu;
  if (res->sched.max_loras > 0 && sc->sched_ops->defaults.lora_adapters) {
    /* Each rank copies its own slot over its own host link. */
    rc = kvsim_lora_cache_init(&rep->lora, res->sched.max_loras, res->sched.max_cpu_loras,
                               res->sched.lora_slot_bytes, res->sched.lora_file_bytes,
                               sc->gpu.host_link_GBps, sc->gpu.host_link_latency_us, err);
    if (rc < 0)
      return rc;
    rep->sched->lora = &rep->lora;
    rep->lora_perf = res->lora;
  }
  if (res->sched.num_spec_tokens > 0)
    rep->kv.spec_backoff = res->sched.num_spec_tokens + 1;
  /* SpeculativeConfig.use_eagle(): the drafters that read the target's
   * hidden states (the KVCacheManager's use_eagle). */
  const kvsim_spec_method sm = res->plan.p.spec.method;
  rep->kv.drop_last_hit = res->plan.p.engine == KVSIM_PLAN_V1 &&
                         (sm == KVSIM_SPEC_EAGLE || sm == KVSIM_SPEC_EAGLE3 || sm == KVSIM_SPEC_MTP);
  rep->overlap_transfers = sc->offload.overlap;
  rep->step_time_scale = sc->step_time_scale > 0 ? sc->step_time_scale : 1.0;
  rep->prefill_time_scale = sc->prefill_time_scale > 0 ? sc->prefill_time_scale : rep->step_time_scale;
  if (offload)
    rc = kvsim_kvcache_set_offload(&rep->kv, &rep->cpu, sc->offload.store_threshold, err);
  return rc;
}

void kvsim__replica_fini(kvsim__replica_t *rep) {
  kvsim_sched_free(rep->sched);
  kvsim_kvcache_fini(&rep->kv);
  kvsim_cpu_tier_fini(&rep->cpu);
  kvsim_lora_cache_fini(&rep->lora);
  kvsim_reqvec_fini(&rep->step.reqs);
  memset(rep, 0, sizeof *rep);
}

bool kvsim__replica_fits(const kvsim__replica_t *rep, const kvsim_plan_t *pl, int64_t tokens) {
  /* int8/int4 caches hold residual blocks beside the request's own; a
   * check without them admits requests that can never be scheduled. */
  return kvsim_plan_blocks_for_tokens(pl, tokens) + rep->kv.residual_blocks <=
         kvsim_pool_usable(&rep->kv.pool);
}

int kvsim__replica_add(kvsim__replica_t *rep, kvsim_request_t *r, kvsim_time_ns now, kvsim_err *err) {
  int rc = rep->sched->ops->add(rep->sched, r, now);
  if (rc < 0)
    return kvsim_err_set(err, rc, "replica %d: request %llu: out of memory for the waiting queue",
                         rep->index, (unsigned long long)r->spec.id);
  return KVSIM_OK;
}

void kvsim__replica_sync(kvsim__replica_t *rep) {
  if (rep->sched->ops->sync)
    rep->sched->ops->sync(rep->sched);
}

static int32_t held_of(const kvsim_sched_t *sc, kvsim_request_t *const **held) {
  *held = NULL;
  return sc->ops->held ? sc->ops->held(sc, held) : 0;
}

/* The progress guard: requests wait, nothing runs or is held, and the
 * scheduler found no step. Nothing can free blocks in this state, so the
 * head of the queue never runs; after KVSIM__STALL_LIMIT attempts in a
 * row the run stops and says why. */
static int guard(kvsim__replica_t *rep, bool progress, kvsim_err *err) {
  const kvsim_sched_t *sc = rep->sched;
  kvsim_request_t *const *held;
  if (progress || !sc->waiting.n || sc->running.n || held_of(sc, &held) > 0) {
    rep->stalled = 0;
    return KVSIM_OK;
  }
  if (++rep->stalled < KVSIM__STALL_LIMIT)
    return KVSIM_OK;
  const kvsim_request_t *r = kvsim_waitq_peek(&sc->waiting);
  const kvsim_kvcache_t *kv = &rep->kv;
  int64_t tokens = kvsim_request_total_tokens(r);
  /* The last token is sampled, never stored (the admission check's rule). */
  int64_t need = kvsim_kvcache_blocks_for(kv, tokens > 0 ? tokens - 1 : 0) - kv->residual_blocks;
  int64_t pool = kvsim_pool_usable(&kv->pool) - kv->residual_blocks;
  return kvsim_err_set(err, KVSIM_ETHRESH,
                       "%s: replica %d: request %llu: a %lld-token request needs %lld blocks, the "
                       "pool has %lld%s; no progress in %d attempts with %d waiting and nothing "
                       "running (profile %s)",
                       rep->where, rep->index, (unsigned long long)r->spec.id, (long long)tokens,
                       (long long)need, (long long)pool,
                       kv->residual_blocks ? " after the residual window" : "", rep->stalled,
                       sc->waiting.n, sc->ops->name);
}

/* The step's batch shape, as kvsim_batch_shape_add summed over its
 * requests would give it, but from integer sums (kvsim_step_sums_t):
 * every term of that sum is a whole number, so while the totals stay
 * below 2^53 the double sums are exact whatever their order and equal the
 * integer ones converted once. Each term is at most new x max(context +
 * new) (attention pairs) or max(context + new) (keys read), which bounds
 * the totals; beyond the bound (never at real context lengths) the double
 * sum itself runs. */
static void shape_of_sums(const kvsim_step_t *st, const kvsim_step_sums_t *s, int64_t window,
                          kvsim_batch_shape_t *shape) {
  memset(shape, 0, sizeof *shape);
  if (s->big || (double)s->maxcn * ((double)s->newt + (double)s->seqs) >= 0x1p52) {
    for (int32_t i = 0; i < st->reqs.n; i++) {
      const kvsim_request_t *r = st->reqs.v[i];
      kvsim_batch_shape_add(shape, r->num_computed, r->step_new, window);
    }
    return;
  }
  shape->num_seqs = (int64_t)s->seqs;
  shape->num_prefill_seqs = (int64_t)s->pseqs;
  shape->new_tokens = (int64_t)s->newt;
  shape->prefill_tokens = (int64_t)s->pft;
  shape->attn_full = (double)s->af;
  shape->attn_sliding = (double)s->as;
  shape->kv_read_full = (double)s->kf;
  shape->kv_read_sliding = (double)s->ks;
  shape->decode_keys_full = (double)s->df;
  shape->decode_keys_sliding = (double)s->ds;
}

/* The sums by a walk over the step's rows, for a profile that does not
 * keep them while scheduling. */
static void step_shape(const kvsim_step_t *st, int64_t window, kvsim_batch_shape_t *shape) {
  kvsim_step_sums_t s;
  memset(&s, 0, sizeof s);
  s.window = window;
  for (int32_t i = 0; i < st->reqs.n && !s.big; i++)
    kvsim_step_sums_row(&s, st->reqs.v[i]->num_computed, st->reqs.v[i]->step_new);
  shape_of_sums(st, &s, window, shape);
}

/* The drafter's share of a step (vllm/v1/spec_decode/eagle.py
 * EagleProposer.propose; the draft-model proposer alike): a first forward
 * over the step's tokens (`first`, the target's shape), then k - 1
 * forwards of one token for every request that sampled, each a position
 * further; SGLang's EAGLE (eagle_worker.py draft_forward) the same with
 * `width` (topk) rows per request at each depth. The drafter runs inside
 * the engine step, so the host time is the target step's alone. */
static double draft_seconds(const kvsim_perf_t *draft, int k, int width, const kvsim_step_t *st,
                            const kvsim_batch_shape_t *first) {
  kvsim_step_cost_t c;
  kvsim_perf_step_time(draft, first, &c);
  double s = c.total_s - c.host_s;
  for (int j = 1; j < k; j++) {
    kvsim_batch_shape_t b;
    memset(&b, 0, sizeof b);
    for (int32_t i = 0; i < st->reqs.n; i++) {
      const kvsim_request_t *r = st->reqs.v[i];
      /* SGLang's tree: topk rows per request, each reading the prefix
       * and its branch (a verify-like shape). */
      if (r->num_computed + r->step_new < r->num_tokens)
        continue;
      const int64_t at = r->num_computed + r->step_new + j - 1; /* the tree's depth j */
      if (width > 1)
        kvsim_batch_shape_add_verify(&b, at, width, 0);
      else
        kvsim_batch_shape_add(&b, at, 1, 0);
    }
    if (!b.num_seqs)
      break;
    kvsim_perf_step_time(draft, &b, &c);
    s += c.total_s - c.host_s;
  }
  return s;
}

/* Schedules the step. An empty step that preempted has changed what the
 * next schedule sees: vLLM V1's priority policy may preempt the very
 * request it is scheduling and stop there, before the running requests
 * behind it (scheduler.py schedule: "if preempted_req == request:
 * break"), and the engine's busy loop then schedules again at once
 * (EngineCore.step with nothing scheduled). Each such pass moves a
 * running request to the queue, so this ends within as many passes as
 * there were running requests. */
static int schedule_step(kvsim__replica_t *rep, int64_t window, kvsim_time_ns now) {
  kvsim_step_t *st = &rep->step;
  int32_t preempted = 0, passes = rep->sched->running.n + 1;
  int rc;
  do {
    preempted += st->num_preempted;
    st->num_preempted = 0;
    /* A profile that keeps the step's sums starts them (sums.on). */
    st->sums.on = false;
    st->sums.window = window;
    rc = rep->sched->ops->schedule(rep->sched, now, st);
  } while (rc >= 0 && st->reqs.n + st->implicit_rows == 0 && st->num_preempted > 0 && --passes > 0);
  st->num_preempted += preempted;
  return rc;
}

/* The step's batch shape. With speculative decoding, a request scheduled
 * past its known tokens verifies drafts (static batches schedule padding
 * rows past theirs): the shape of its rows is summed one by one; without,
 * in integers. */
static void batch_shape(const kvsim__replica_t *rep, int64_t window, kvsim_batch_shape_t *shape) {
  const kvsim_step_t *st = &rep->step;
  if (rep->sched->cfg.num_spec_tokens <= 0) {
    if (st->sums.on && !st->sums.big && st->sums.seqs == (uint64_t)st->reqs.n + (uint64_t)st->implicit_rows) {
      shape_of_sums(st, &st->sums, window, shape);
#ifndef NDEBUG
      /* Checked builds: the profile's sums are the walk's (implicit rows
       * are not listed: rows of one token after their context). */
      if (st->implicit_rows == 0) {
        kvsim_batch_shape_t walked;
        step_shape(st, window, &walked);
        assert(memcmp(&walked, shape, sizeof walked) == 0);
      }
#endif
    } else {
      /* A profile that advances rows implicitly keeps exact sums. */
      assert(st->implicit_rows == 0);
      step_shape(st, window, shape);
    }
    return;
  }
  memset(shape, 0, sizeof *shape);
  for (int32_t i = 0; i < st->reqs.n; i++) {
    const kvsim_request_t *r = st->reqs.v[i];
    if (r->num_computed + r->step_new > r->num_tokens)
      kvsim_batch_shape_add_verify(shape, r->num_computed, r->step_new, window);
    else
      kvsim_batch_shape_add(shape, r->num_computed, r->step_new, window);
  }
}

/* The step with LoRA: the adapters' loads come before the forward, which
 * then runs the punica kernels for the tokens of requests with an
 * adapter; the step's adapters are those the loads touched (used since
 * lora_clock). */
static kvsim_time_ns with_lora(kvsim__replica_t *rep, const kvsim_perf_t *perf, uint64_t lora_clock,
                               kvsim_time_ns dt) {
  const kvsim_step_t *st = &rep->step;
  int64_t tokens = 0;
  for (int32_t i = 0; i < st->reqs.n; i++)
    if (st->reqs.v[i]->spec.lora > 0)
      tokens += st->reqs.v[i]->step_new;
  int32_t adapters = 0;
  for (int32_t i = 0; i < rep->lora.gpu_n; i++)
    adapters += rep->lora.gpu_use[i] > lora_clock;
  const double ks = kvsim_perf_lora_s(perf, &rep->lora_perf, tokens, adapters) * rep->step_time_scale;
  rep->lora_kernel_s += ks;
  double total = (double)dt + ks * 1e9 + (double)st->lora_ns;
  return total < (double)KVSIM_PERF_MAX_STEP_NS ? (kvsim_time_ns)total : KVSIM_PERF_MAX_STEP_NS;
}

int kvsim__replica_start_step(kvsim__replica_t *rep, const kvsim_perf_t *perf,
                              const kvsim_perf_t *draft, int64_t window, kvsim_time_ns now,
                              kvsim_time_ns *out_dt, kvsim_err *err) {
  kvsim_step_t *st = &rep->step;
  st->reqs.n = 0;
  st->implicit_rows = 0;
  st->num_preempted = 0;
  st->num_tokens = 0;
  st->extra_ns = 0;
  st->lora_ns = 0;
  *out_dt = -1;
  const uint64_t lora_clock = rep->lora.clock;
  int rc = schedule_step(rep, window, now);
  if (rc < 0) {
    /* Discard the partial step: its requests keep their places and KV,
     * and compute nothing until the next schedule. */
    for (int64_t i = 0; i < st->reqs.n; i++)
      st->reqs.v[i]->step_new = 0;
    st->reqs.n = 0;
    st->implicit_rows = 0;
    st->num_tokens = 0;
    rep->busy = false;
    return kvsim_err_set(err, rc, "replica %d: scheduling a step: %s", rep->index,
                         kvsim_strerror(rc));
  }
  if (st->reqs.n + st->implicit_rows == 0) {
    rep->busy = false;
    return guard(rep, false, err);
  }
  rep->stalled = 0;
  kvsim_batch_shape_t shape;
  batch_shape(rep, window, &shape);
  const bool scaled_run = rep->step_time_scale != 1.0 || rep->prefill_time_scale != 1.0;
  kvsim_step_cost_t cost;
  kvsim_time_ns dt =
      kvsim_perf_step_time_memo(perf, rep->step_memo, &shape, scaled_run ? &cost : NULL);
  if (draft && rep->sched->cfg.num_spec_tokens > 0) {
    const kvsim_sched_cfg_t *sc = &rep->sched->cfg;
    double total = (double)dt + draft_seconds(draft, sc->draft_steps, sc->draft_width, st, &shape) * 1e9;
    dt = total < (double)KVSIM_PERF_MAX_STEP_NS ? (kvsim_time_ns)total : KVSIM_PERF_MAX_STEP_NS;
  }
  if (scaled_run) {
    /* The prefill tokens' share of the step at its own scale (the band's
     * TTFT edge), the rest at the step's; never below the step's roofline
     * at the GPU's spec peaks (a fast edge cannot beat physics); held at
     * the model's longest step, as kvsim_perf_step_time is, so that a
     * scaled step cannot overflow the clock. */
    const double f = shape.new_tokens > 0 ? (double)shape.prefill_tokens / (double)shape.new_tokens : 0;
    double scaled = (double)dt * ((1 - f) * rep->step_time_scale + f * rep->prefill_time_scale);
    if (scaled < cost.roofline_s * 1e9)
      scaled = cost.roofline_s * 1e9;
    dt = scaled < (double)KVSIM_PERF_MAX_STEP_NS ? (kvsim_time_ns)scaled : KVSIM_PERF_MAX_STEP_NS;
  }
  if (rep->sched->lora)
    dt = with_lora(rep, perf, lora_clock, dt);
  if (st->extra_ns > 0) {
    kvsim_time_ns with = rep->overlap_transfers ? (st->extra_ns > dt ? st->extra_ns : dt) : dt + st->extra_ns;
    rep->transfer_wait_s += (double)(with - dt) / 1e9;
    dt = with;
  }
  if (dt < 1)
    dt = 1; /* time must move forward for the step to end after it began */
  rep->busy = true;
  rep->step_start = now;
  rep->steps++;
  rep->sequence_steps += st->reqs.n + st->implicit_rows;
  rep->busy_s += (double)dt / 1e9;
  double u = kvsim_pool_usage(&rep->kv.pool);
  if (u > rep->kv_usage_peak)
    rep->kv_usage_peak = u;
  *out_dt = dt;
  return KVSIM_OK;
}

int kvsim__replica_end_step(kvsim__replica_t *rep, kvsim_time_ns now, kvsim_reqvec_t *finished,
                            kvsim_err *err) {
  int rc = rep->sched->ops->update(rep->sched, now, &rep->step, finished);
  if (rc < 0)
    return kvsim_err_set(err, rc, "replica %d: ending a step: %s", rep->index, kvsim_strerror(rc));
  rep->busy = false;
  return KVSIM_OK;
}

/* Allocation waste (the vLLM paper's accounting): bytes allocated to
 * requests against bytes holding their tokens, split into reservation
 * beyond the blocks the tokens need and the unused tail of each last
 * block. A block of one group spans group_size layers; sliding groups
 * hold only their window's tokens. */
typedef struct waste {
  int64_t token_bytes, alloc_bytes, unused_bytes, frag_bytes;
} waste_t;

/* A request that reserved its tokens up front (TGI, static batches, HF). */
static void waste_reserved(const kvsim__replica_t *rep, const kvsim_plan_t *pl, const kvsim_request_t *r,
                           int64_t computed, waste_t *w) {
  const double per_tok = (double)pl->block_bytes / (double)pl->p.block_size;
  int64_t tokens = computed < r->reserved_tokens ? computed : r->reserved_tokens;
  w->alloc_bytes += (int64_t)((double)r->reserved_tokens * per_tok);
  w->token_bytes += (int64_t)((double)tokens * per_tok);
  w->unused_bytes += (int64_t)((double)(r->reserved_tokens - tokens) * per_tok);
  /* An HF quantized row: its scales and zero points are overhead
   * beside its tokens' bits, and its residual window's blocks too. */
  if (pl->p.engine == KVSIM_PLAN_HF && pl->kv_scale_bytes_per_token > 0) {
    int64_t scales = tokens * pl->kv_scale_bytes_per_token;
    w->token_bytes -= scales;
    w->frag_bytes += scales;
  }
  if (pl->p.engine == KVSIM_PLAN_HF && rep->kv.residual_blocks) {
    int64_t rb = (int64_t)r->blocks[rep->kv.num_groups].len * pl->block_bytes;
    w->alloc_bytes += rb;
    w->frag_bytes += rb;
  }
}

/* A request of a paged pool: each group's live blocks, and the residual
 * window of an int8/int4 cache, which holds real tokens too. */
static void waste_paged(const kvsim__replica_t *rep, const kvsim_plan_t *pl, const kvsim_request_t *r,
                        int64_t computed, waste_t *w) {
  const int64_t bs = pl->p.block_size;
  const double per_tok = (double)pl->block_bytes / (double)bs;
  for (int g = 0; g < rep->kv.num_groups; g++) {
    const kvsim_blocks_t *t = &r->blocks[g];
    int64_t live = t->len - t->num_skipped;
    int64_t tokens = computed - (int64_t)t->num_skipped * bs;
    if (tokens > live * bs)
      tokens = live * bs;
    if (tokens < 0)
      tokens = 0;
    int64_t needed = (tokens + bs - 1) / bs;
    w->alloc_bytes += live * pl->block_bytes;
    w->token_bytes += (int64_t)((double)tokens * per_tok);
    w->unused_bytes += (live - needed) * pl->block_bytes;
    w->frag_bytes += (int64_t)((double)(needed * bs - tokens) * per_tok);
  }
  if (rep->kv.residual_blocks) {
    int64_t rb = (int64_t)r->blocks[rep->kv.num_groups].len * pl->block_bytes;
    int64_t rt = computed < pl->p.kv_residual_tokens ? computed : pl->p.kv_residual_tokens;
    int64_t used = pl->residual_bytes_per_request / (pl->p.kv_residual_tokens ? pl->p.kv_residual_tokens : 1) * rt;
    w->alloc_bytes += rb;
    w->token_bytes += used;
    w->frag_bytes += rb - used;
  }
}

/* The pool waste_simple sums: one full-attention group, no residual
 * window, power-of-two blocks, a whole number of bytes per token. */
static bool waste_simple_pool(const kvsim__replica_t *rep, const kvsim_plan_t *pl) {
  const int32_t sh = rep->kv.fast_shift;
  const int64_t bs = pl->p.block_size;
  return sh >= 0 && bs == ((int64_t)1 << sh) && pl->block_bytes % bs == 0;
}

/* The commonest pool's waste in one pass of integer sums: one
 * full-attention group, no residual window, paged requests, a whole
 * number of bytes per token. Each of waste_paged's double terms is then a
 * whole number of bytes (tokens x bytes per token, below 2^53), so the
 * sums times the bytes are its totals exactly. False, with *w untouched,
 * when the pool is not of that kind. `imp`: the scheduler's sums of the
 * requests it advances implicitly (kvsim_request_t.imp, whose counts are
 * behind) and the running requests outside them, read instead of
 * `running`; or NULL when every request's counts are up to date (synced). */
static bool waste_simple(const kvsim__replica_t *rep, const kvsim_plan_t *pl,
                         kvsim_request_t *const *running, int32_t nrun, kvsim_request_t *const *held,
                         int32_t nheld, const kvsim_sched_isums_t *imp, waste_t *w) {
  const int32_t sh = rep->kv.fast_shift;
  const int64_t bs = pl->p.block_size;
  if (!waste_simple_pool(rep, pl))
    return false;
  const int64_t per_tok = pl->block_bytes / bs;
  int64_t live = 0, tokens = 0, needed = 0;
  if (imp) {
    live = imp->blocks;
    tokens = imp->tokens;
    needed = imp->needed;
    running = imp->rest;
    nrun = imp->nrest;
  }
  for (int32_t i = 0; i < nrun + nheld; i++) {
    const kvsim_request_t *r = i < nrun ? running[i] : held[i - nrun];
    assert(!imp || !r->imp);
    if (r->reserved_tokens > 0)
      return false;
    const kvsim_blocks_t *t = &r->blocks[0];
    const int64_t l = t->len - t->num_skipped;
    int64_t n = r->num_computed + r->step_new - ((int64_t)t->num_skipped << sh);
    n = n > (l << sh) ? l << sh : n;
    n = n < 0 ? 0 : n;
    live += l;
    tokens += n;
    needed += (n + bs - 1) >> sh;
  }
  /* Past these bounds a double term could round: the general loop. */
  if ((double)live * (double)pl->block_bytes >= 0x1p53)
    return false;
  w->alloc_bytes = live * pl->block_bytes;
  w->token_bytes = tokens * per_tok;
  w->unused_bytes = (live - needed) * pl->block_bytes;
  w->frag_bytes = (needed * bs - tokens) * per_tok;
  return true;
}

int kvsim__replica_sample(kvsim__replica_t *rep, const kvsim_plan_t *pl, kvsim_time_ns now, bool tick,
                          kvsim_sample_t *s, kvsim_err *err) {
  const kvsim_pool_t *pool = &rep->kv.pool;
  const kvsim_sched_t *sc = rep->sched;
  /* Requests the scheduler advances implicitly come as its sums (no
   * sync, no visit) where the waste is summed in integers; otherwise
   * every running request is brought up to date and read. */
  kvsim_sched_isums_t imp;
  const bool sums = sc->ops->implicit_sums && waste_simple_pool(rep, pl) &&
                    sc->ops->implicit_sums(sc, &imp);
  if (!sums)
    kvsim__replica_sync(rep);
  memset(s, 0, sizeof *s);
  s->time = now;
  s->replica = rep->index;
  s->kv_cache_usage = kvsim_pool_usage(pool);
  s->kv_blocks_free = pool->num_free - pool->num_cached_free;
  s->kv_blocks_cached = pool->num_cached_free;
  s->kv_blocks_used = kvsim_pool_usable(pool) - pool->num_free;
  s->num_requests_running = sc->running.n;
  s->num_requests_waiting = sc->waiting.n;
  s->num_requests_swapped = sc->num_swapped;
  s->num_preemptions_total = sc->num_preemptions;
  s->prefix_cache_queries_total = rep->kv.queries;
  s->prefix_cache_hits_total = rep->kv.hits;
  s->prompt_tokens_total = sc->prompt_tokens_total;
  s->generation_tokens_total = sc->generation_tokens_total;
  s->cpu_kv_cache_usage = kvsim_cpu_tier_usage(&rep->cpu);
  /* Holders outside `running` (V0 swapped, static batch slots) count too. */
  kvsim_request_t *const *held = NULL;
  int32_t nheld = sc->ops->held ? sc->ops->held(sc, &held) : 0;
  waste_t w = {0, 0, 0, 0};
  bool simple = waste_simple(rep, pl, sc->running.v, sc->running.n, held, nheld, sums ? &imp : NULL, &w);
  if (!simple && sums) {
    kvsim__replica_sync(rep); /* a request the sums cannot take: the loop below */
    w = (waste_t){0, 0, 0, 0};
  }
  for (int32_t i = 0; !simple && i < sc->running.n + nheld; i++) {
    const kvsim_request_t *r = i < sc->running.n ? sc->running.v[i] : held[i - sc->running.n];
    int64_t computed = r->num_computed + r->step_new;
    if (r->reserved_tokens > 0)
      waste_reserved(rep, pl, r, computed, &w);
    else
      waste_paged(rep, pl, r, computed, &w);
  }
  s->kv_reserved_unused_bytes = w.unused_bytes;
  s->kv_internal_frag_bytes = w.frag_bytes;
  s->kv_token_bytes = w.token_bytes;
  s->kv_allocated_bytes = w.alloc_bytes;
  /* A tick of an idle replica with requests waiting is one more attempt
   * without progress (a busy replica has a step in flight). */
  return tick && !rep->busy ? guard(rep, false, err) : KVSIM_OK;
}

int kvsim__replica_check(const kvsim__replica_t *rep, kvsim_err *err) {
  const kvsim_pool_t *pool = &rep->kv.pool;
  int rc = kvsim_pool_check(pool, err);
  if (rc < 0 || (rc = kvsim_cpu_tier_check(&rep->cpu, err)) < 0)
    return kvsim_err_prefix(err, "replica %d", rep->index);
  /* A counted pool has no ids: its holders' tables add up to its refs. */
  int32_t *holders =
      pool->counted ? NULL : kvsim__calloc((size_t)pool->num_blocks, sizeof *holders);
  if (!holders && !pool->counted)
    return kvsim_err_set(err, KVSIM_ENOMEM, "invariant check: out of memory");
  int64_t counted_held = 0;
  const kvsim_sched_t *sc = rep->sched;
  int tables = rep->kv.num_groups + (rep->kv.residual_blocks ? 1 : 0);
  kvsim_request_t *const *held = NULL;
  int32_t nheld = sc->ops->held ? sc->ops->held(sc, &held) : 0;
  int64_t swapped_blocks = 0;
  for (int32_t i = 0; i < sc->running.n + nheld; i++) {
    const kvsim_request_t *r = i < sc->running.n ? sc->running.v[i] : held[i - sc->running.n];
    for (int g = 0; g < tables; g++) {
      counted_held += r->blocks[g].len;
      for (int32_t k = 0; holders && k < r->blocks[g].len; k++)
        holders[r->blocks[g].ids[k]]++;
    }
    if (r->status == KVSIM_REQ_SWAPPED)
      swapped_blocks += r->swapped_blocks;
  }
  /* The CPU tier's swap blocks are exactly those of the swapped requests. */
  if (swapped_blocks != rep->cpu.swap_used) {
    kvsim__free(holders);
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "replica %d: swapped requests own %lld CPU blocks, the tier %lld", rep->index,
                         (long long)swapped_blocks, (long long)rep->cpu.swap_used);
  }
  /* Waiting requests hold nothing (recompute preemption frees all). */
  for (int32_t i = 0; i < sc->waiting.n; i++) {
    const kvsim_request_t *r = kvsim_waitq_at(&sc->waiting, i);
    for (int g = 0; g < tables; g++)
      if (r->blocks[g].len) {
        kvsim__free(holders);
        return kvsim_err_set(err, KVSIM_EINVAL, "replica %d: waiting request %llu holds %d blocks",
                             rep->index, (unsigned long long)r->spec.id, r->blocks[g].len);
      }
  }
  if (pool->counted && counted_held != kvsim_pool_refs(pool))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "replica %d: requests hold %lld blocks, the counted pool %lld", rep->index,
                         (long long)counted_held, (long long)kvsim_pool_refs(pool));
  for (int32_t b = 1; holders && b < pool->num_blocks; b++)
    if (holders[b] != kvsim_pool_ref(pool, b)) {
      int32_t h = holders[b], c = kvsim_pool_ref(pool, b);
      kvsim__free(holders);
      return kvsim_err_set(err, KVSIM_EINVAL, "replica %d: block %d has ref_cnt %d but %d holders",
                           rep->index, b, c, h);
    }
  kvsim__free(holders);
  return KVSIM_OK;
}

/* A block a request holds: in range, referenced, off the free queue. */
static int check_held_block(const kvsim__replica_t *rep, const kvsim_request_t *r, int g, int32_t k,
                            kvsim_err *err) {
  const kvsim_pool_t *p = &rep->kv.pool;
  kvsim_block_id b = r->blocks[g].ids[k];
  if (b == KVSIM_NULL_BLOCK)
    return k < r->blocks[g].num_skipped || rep->kv.sliding[g]
               ? KVSIM_OK
               : kvsim_err_set(err, KVSIM_EINVAL,
                               "replica %d: request %llu holds the null block at %d of table %d",
                               rep->index, (unsigned long long)r->spec.id, k, g);
  if (b < 0 || b >= p->num_blocks || p->blocks[b].ref_cnt < 1 || kvsim_pool_prev(p, b) != -1 ||
      kvsim_pool_next(p, b) != -1 || p->head == b)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "replica %d: request %llu holds block %d (table %d, entry %d) that is free "
                         "or unreferenced",
                         rep->index, (unsigned long long)r->spec.id, b, g, k);
  return KVSIM_OK;
}

/* A walked pool's free queue: its ends and counters agree. */
static bool queue_ends_ok(const kvsim_pool_t *p) {
  return (p->head < 0) == (p->num_free == 0) && (p->tail < 0) == (p->num_free == 0) &&
         p->num_free >= 0 && p->num_free <= kvsim_pool_usable(p) && p->num_cached_free >= 0 &&
         p->num_cached_free <= p->num_free &&
         (p->head < 0 || (kvsim_pool_prev(p, p->head) == -1 && p->blocks[p->head].ref_cnt == 0)) &&
         (p->tail < 0 || (kvsim_pool_next(p, p->tail) == -1 && p->blocks[p->tail].ref_cnt == 0));
}

int kvsim__replica_check_step(kvsim__replica_t *rep, const kvsim_reqvec_t *finished, kvsim_err *err) {
  const kvsim_kvcache_t *kv = &rep->kv;
  const kvsim_pool_t *p = &kv->pool;
  const kvsim_sched_t *sc = rep->sched;
  int tables = kv->num_groups + (kv->residual_blocks ? 1 : 0);
  int rc;
  int64_t work = 1;
  /* The free queue's ends and counters (a counted pool: its counters). */
  if (p->counted && (rc = kvsim_pool_check(p, err)) < 0)
    return kvsim_err_prefix(err, "replica %d", rep->index);
  if (!p->counted && !queue_ends_ok(p))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "replica %d: pool: free queue ends %d..%d disagree with %d free (%d cached)",
                         rep->index, p->head, p->tail, p->num_free, p->num_cached_free);
  /* The step's requests: those still holding KV hold live blocks at the
   * tail of each table (where the step wrote); finished ones hold none. */
  for (int64_t i = 0; i < rep->step.reqs.n; i++) {
    const kvsim_request_t *r = rep->step.reqs.v[i];
    if (r->status != KVSIM_REQ_RUNNING)
      continue; /* finished (below), or a profile's placeholder */
    for (int g = 0; g < tables; g++) {
      const kvsim_blocks_t *t = &r->blocks[g];
      if (t->len < 0 || (t->len > t->cap && !p->counted) || t->num_skipped > t->len)
        return kvsim_err_set(err, KVSIM_EINVAL, "replica %d: request %llu: table %d of %d blocks is broken",
                             rep->index, (unsigned long long)r->spec.id, g, t->len);
      /* The blocks holding this step's last tokens, and the table's tail
       * (the rest of a table was checked in the step that wrote it). */
      if (t->len == t->num_skipped || p->counted) /* a count has no ids to probe */
        continue;
      int32_t at = (int32_t)((r->num_computed > 0 ? r->num_computed - 1 : 0) / kv->block_size);
      int32_t probe[3] = {at, at + 1, t->len - 1};
      for (int j = 0; j < 3; j++, work++)
        if (probe[j] >= t->num_skipped && probe[j] < t->len && (j < 2 || probe[j] > at + 1) &&
            (rc = check_held_block(rep, r, g, probe[j], err)) < 0)
          return rc;
    }
  }
  for (int64_t i = 0; i < finished->n; i++, work++) {
    const kvsim_request_t *r = finished->v[i];
    if (kvsim_kvcache_held(kv, r) != 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "replica %d: finished request %llu still holds %lld blocks",
                           rep->index, (unsigned long long)r->spec.id,
                           (long long)kvsim_kvcache_held(kv, r));
  }
  /* The CPU tier: its counters, and the swapped requests' blocks. */
  const kvsim_cpu_tier_t *cpu = &rep->cpu;
  if (cpu->swap_used < 0 || cpu->cached < 0 || cpu->swap_used + cpu->cached > cpu->num_blocks)
    return kvsim_err_set(err, KVSIM_EINVAL, "replica %d: CPU tier: swap %lld + cached %lld exceed %lld blocks",
                         rep->index, (long long)cpu->swap_used, (long long)cpu->cached,
                         (long long)cpu->num_blocks);
  kvsim_request_t *const *held;
  int32_t nheld = held_of(sc, &held);
  int64_t swapped = 0;
  for (int32_t i = 0; i < nheld; i++, work++)
    if (held[i]->status == KVSIM_REQ_SWAPPED)
      swapped += held[i]->swapped_blocks;
  if (swapped != cpu->swap_used)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "replica %d: swapped requests own %lld CPU blocks, the tier %lld", rep->index,
                         (long long)swapped, (long long)cpu->swap_used);
  rep->check_work += work;
  return KVSIM_OK;
}

bool kvsim__replica_check_due(kvsim__replica_t *rep) {
  if (rep->check_work < kvsim_pool_usable(&rep->kv.pool))
    return false;
  rep->check_work = 0;
  return true;
}
