#include "engine/replica.h"

#include <stdlib.h>
#include <string.h>

int kvsim__replica_init(kvsim__replica_t *rep, int32_t index, const kvsim_scenario_t *sc,
                        const kvsim_resolved_t *res, kvsim_err *err) {
  memset(rep, 0, sizeof *rep);
  rep->index = index;
  const kvsim_plan_t *pl = &res->plan;
  int rc = kvsim_kvcache_init(&rep->kv, pl, res->pool_blocks, res->sched.enable_prefix_caching, err);
  if (rc < 0)
    return rc;
  /* The CPU tier: V0 swap space is per GPU (num_cpu_blocks = swap_space //
   * block bytes); the V1 offloading connector's size is the total over TP
   * ranks (CPUOffloadingSpec: bytes // (block bytes x world size)). Each
   * rank moves its share over its own host link. */
  int64_t cpu_blocks = 0;
  bool offload = sc->offload.cpu_gib > 0;
  if (offload)
    cpu_blocks = (int64_t)(sc->offload.cpu_gib * KVSIM_GIB) / (pl->block_bytes * pl->p.tp * pl->p.pp);
  else if (sc->swap_space_gib > 0)
    cpu_blocks = (int64_t)(sc->swap_space_gib * KVSIM_GIB) / pl->block_bytes;
  rc = kvsim_cpu_tier_init(&rep->cpu, cpu_blocks, pl->block_bytes, sc->gpu.host_link_GBps,
                           sc->gpu.host_link_latency_us, offload, err);
  if (rc < 0)
    return rc;
  kvsim_sched_cfg_t cfg = res->sched;
  cfg.num_cpu_blocks = offload ? 0 : cpu_blocks;
  rc = kvsim_sched_new(sc->sched_ops, &cfg, &rep->kv, &rep->sched, err);
  if (rc < 0)
    return rc;
  rep->sched->cpu = &rep->cpu;
  rep->overlap_transfers = sc->offload.overlap;
  if (offload)
    rc = kvsim_kvcache_set_offload(&rep->kv, &rep->cpu, sc->offload.store_threshold, err);
  return rc;
}

void kvsim__replica_fini(kvsim__replica_t *rep) {
  kvsim_sched_free(rep->sched);
  kvsim_kvcache_fini(&rep->kv);
  kvsim_cpu_tier_fini(&rep->cpu);
  kvsim_reqvec_fini(&rep->step.reqs);
  memset(rep, 0, sizeof *rep);
}

kvsim_time_ns kvsim__replica_start_step(kvsim__replica_t *rep, const kvsim_perf_t *perf,
                                        int64_t window, kvsim_time_ns now) {
  kvsim_step_t *st = &rep->step;
  st->reqs.n = 0;
  st->num_preempted = 0;
  st->num_tokens = 0;
  st->extra_ns = 0;
  rep->sched->ops->schedule(rep->sched, now, st);
  if (st->reqs.n == 0) {
    rep->busy = false;
    return -1;
  }
  kvsim_batch_shape_t shape;
  memset(&shape, 0, sizeof shape);
  for (int32_t i = 0; i < st->reqs.n; i++) {
    const kvsim_request_t *r = st->reqs.v[i];
    kvsim_batch_shape_add(&shape, r->num_computed, r->step_new, window);
  }
  kvsim_time_ns dt = kvsim_perf_step_time(perf, &shape, NULL);
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
  rep->busy_s += (double)dt / 1e9;
  double u = kvsim_pool_usage(&rep->kv.pool);
  if (u > rep->kv_usage_peak)
    rep->kv_usage_peak = u;
  return dt;
}

void kvsim__replica_end_step(kvsim__replica_t *rep, kvsim_time_ns now, kvsim_reqvec_t *finished) {
  rep->sched->ops->update(rep->sched, now, &rep->step, finished);
  rep->busy = false;
}

void kvsim__replica_sample(const kvsim__replica_t *rep, const kvsim_plan_t *pl, kvsim_time_ns now,
                           kvsim_sample_t *s) {
  const kvsim_pool_t *pool = &rep->kv.pool;
  const kvsim_sched_t *sc = rep->sched;
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
  /* Allocation waste (the vLLM paper's accounting): bytes allocated to
   * requests against bytes holding their tokens, split into reservation
   * beyond the blocks the tokens need and the unused tail of each last
   * block. A block of one group spans group_size layers; sliding groups
   * hold only their window's tokens. */
  int64_t bs = pl->p.block_size;
  int64_t token_bytes = 0, alloc_bytes = 0, unused_bytes = 0, frag_bytes = 0;
  double per_tok = (double)pl->block_bytes / (double)bs;
  /* Holders outside `running` (V0 swapped, static batch slots) count too. */
  kvsim_request_t *const *held = NULL;
  int32_t nheld = sc->ops->held ? sc->ops->held(sc, &held) : 0;
  for (int32_t i = 0; i < sc->running.n + nheld; i++) {
    const kvsim_request_t *r = i < sc->running.n ? sc->running.v[i] : held[i - sc->running.n];
    int64_t computed = r->num_computed + r->step_new;
    if (r->reserved_tokens > 0) {
      int64_t tokens = computed < r->reserved_tokens ? computed : r->reserved_tokens;
      alloc_bytes += (int64_t)((double)r->reserved_tokens * per_tok);
      token_bytes += (int64_t)((double)tokens * per_tok);
      unused_bytes += (int64_t)((double)(r->reserved_tokens - tokens) * per_tok);
      continue;
    }
    for (int g = 0; g < rep->kv.num_groups; g++) {
      const kvsim_blocks_t *t = &r->blocks[g];
      int64_t live = t->len - t->num_skipped;
      int64_t tokens = computed - (int64_t)t->num_skipped * bs;
      if (tokens > live * bs)
        tokens = live * bs;
      if (tokens < 0)
        tokens = 0;
      int64_t needed = (tokens + bs - 1) / bs;
      alloc_bytes += live * pl->block_bytes;
      token_bytes += (int64_t)((double)tokens * per_tok);
      unused_bytes += (live - needed) * pl->block_bytes;
      frag_bytes += (int64_t)((double)(needed * bs - tokens) * per_tok);
    }
    /* The residual window of an int8/int4 cache holds real tokens too. */
    if (rep->kv.residual_blocks) {
      int64_t rb = (int64_t)r->blocks[rep->kv.num_groups].len * pl->block_bytes;
      int64_t rt = computed < pl->p.kv_residual_tokens ? computed : pl->p.kv_residual_tokens;
      int64_t used = pl->residual_bytes_per_request / (pl->p.kv_residual_tokens ? pl->p.kv_residual_tokens : 1) * rt;
      alloc_bytes += rb;
      token_bytes += used;
      frag_bytes += rb - used;
    }
  }
  s->kv_reserved_unused_bytes = unused_bytes;
  s->kv_internal_frag_bytes = frag_bytes;
  s->kv_token_bytes = token_bytes;
  s->kv_allocated_bytes = alloc_bytes;
}

int kvsim__replica_check(const kvsim__replica_t *rep, kvsim_err *err) {
  const kvsim_pool_t *pool = &rep->kv.pool;
  int rc = kvsim_pool_check(pool, err);
  if (rc < 0 || (rc = kvsim_cpu_tier_check(&rep->cpu, err)) < 0)
    return kvsim_err_prefix(err, "replica %d", rep->index);
  int32_t *holders = calloc((size_t)pool->num_blocks, sizeof *holders);
  if (!holders)
    return kvsim_err_set(err, KVSIM_ENOMEM, "invariant check: out of memory");
  const kvsim_sched_t *sc = rep->sched;
  int tables = rep->kv.num_groups + (rep->kv.residual_blocks ? 1 : 0);
  kvsim_request_t *const *held = NULL;
  int32_t nheld = sc->ops->held ? sc->ops->held(sc, &held) : 0;
  int64_t swapped_blocks = 0;
  for (int32_t i = 0; i < sc->running.n + nheld; i++) {
    const kvsim_request_t *r = i < sc->running.n ? sc->running.v[i] : held[i - sc->running.n];
    for (int g = 0; g < tables; g++)
      for (int32_t k = 0; k < r->blocks[g].len; k++)
        holders[r->blocks[g].ids[k]]++;
    if (r->status == KVSIM_REQ_SWAPPED)
      swapped_blocks += r->swapped_blocks;
  }
  /* The CPU tier's swap blocks are exactly those of the swapped requests. */
  if (swapped_blocks != rep->cpu.swap_used) {
    free(holders);
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "replica %d: swapped requests own %lld CPU blocks, the tier %lld", rep->index,
                         (long long)swapped_blocks, (long long)rep->cpu.swap_used);
  }
  /* Waiting requests hold nothing (recompute preemption frees all). */
  for (int32_t i = 0; i < sc->waiting.n; i++) {
    const kvsim_request_t *r = kvsim_waitq_at(&sc->waiting, i);
    for (int g = 0; g < tables; g++)
      if (r->blocks[g].len) {
        free(holders);
        return kvsim_err_set(err, KVSIM_EINVAL, "replica %d: waiting request %llu holds %d blocks",
                             rep->index, (unsigned long long)r->spec.id, r->blocks[g].len);
      }
  }
  for (int32_t b = 1; b < pool->num_blocks; b++)
    if (holders[b] != pool->ref_cnt[b]) {
      int32_t h = holders[b], c = pool->ref_cnt[b];
      free(holders);
      return kvsim_err_set(err, KVSIM_EINVAL, "replica %d: block %d has ref_cnt %d but %d holders",
                           rep->index, b, c, h);
    }
  free(holders);
  return KVSIM_OK;
}
