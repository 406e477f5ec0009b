/* A disaggregated run's end-of-run totals and its checks: what cannot
 * make progress, and the hand-off's accounting of every pool
 * (disagg_state.h). */
#include <stdio.h>

#include "core/alloc.h"
#include "engine/disagg_state.h"

/* The run's totals, both sides summed; generated tokens and TPOT are the
 * decode side's (the prefill side's one token per request is dropped by
 * the proxy), prompt tokens the prefill side's. */
void kvsim__drun_totals(drun_t *r) {
  kvsim_run_stats_t *st = r->st;
  for (int k = 0; k < 2; k++)
    for (int32_t i = 0; i < r->side[k].n; i++) {
      const kvsim__replica_t *rep = &r->side[k].reps[i];
      st->preemptions += rep->sched->num_preemptions;
      st->prefix_queries += rep->kv.queries;
      st->prefix_hits += rep->kv.hits;
      if (k == 0)
        st->prompt_tokens += rep->sched->prompt_tokens_total;
      else
        st->generation_tokens += rep->sched->generation_tokens_total;
      st->steps += rep->steps;
      st->sequence_steps += rep->sequence_steps;
      st->busy_s += rep->busy_s;
      if (rep->kv_usage_peak > st->kv_usage_peak)
        st->kv_usage_peak = rep->kv_usage_peak;
      int32_t g = k ? r->side[0].n + i : i;
      if (g < KVSIM_RUN_MAX_REPLICA_STATS)
        st->replica[g] = (kvsim_replica_stats_t){r->side[k].router.routed[i], rep->kv_usage_peak,
                                                 rep->kv.queries, rep->kv.hits};
    }
  st->replicas = r->side[0].n + r->side[1].n;
  st->router = r->side[0].sc.router;
  if (r->samples) {
    double n = (double)r->samples;
    st->kv_usage_mean = r->usage_sum / n;
    st->running_mean = r->running_sum / n;
    st->waiting_mean = r->waiting_sum / n;
    st->frac_samples_kv_full = (double)r->kv_full / n;
    st->frac_samples_seq_bound = (double)r->seq_bound / n;
  }
  if (r->frac_samples) {
    double n = (double)r->frac_samples;
    st->kv_token_fraction_mean = r->frac_sum / n;
    st->kv_internal_frag_bytes_mean = r->frag_sum / n;
    st->kv_reserved_unused_bytes_mean = r->unused_sum / n;
  }
  st->disaggregated = true;
  st->disagg = r->ho.st;
  st->disagg.prefill_pool_blocks = r->side[0].res.pool_usable;
  st->disagg.decode_pool_blocks = r->side[1].res.pool_usable;
  st->disagg.prefill_kv_usage_peak = r->side[0].usage_peak;
  st->disagg.decode_kv_usage_peak = r->side[1].usage_peak;
  for (int k = 0; k < 2; k++)
    for (int32_t i = 0; i < r->side[k].n; i++)
      *(k ? &st->disagg.decode_busy_s : &st->disagg.prefill_busy_s) += r->side[k].reps[i].busy_s;
  st->disagg_prefill_plan = r->side[0].res.plan;
}

/* Requests in flight and nothing pending but the sampling tick: no
 * arrival, step end or transfer end will come, and only those start a
 * step, an allocation or a transfer, so the run would sample for ever (as
 * run.c's stuck()). Names the first instance holding requests, prefill
 * side first, with its queues and the hand-off's share of them. No input
 * reaches this today: admission lets in only prompts each side's empty
 * pool holds and each profile would schedule alone (refuse), a decode
 * instance with nothing running or inbound takes the head of its queue,
 * held prefill blocks and inbound decode ones free or land when a
 * transfer ends, transfers start whenever their endpoints are idle, and
 * the replica's own progress guard stops an instance that cannot run
 * what it holds; the guard keeps a future hole to one error line. */
int kvsim__drun_stuck(drun_t *r) {
  const int32_t np = r->side[0].n;
  for (int32_t g = 0; g < np + r->side[1].n; g++) {
    kvsim__replica_t *rep = rep_of(r, g);
    const kvsim_sched_t *s = rep->sched;
    kvsim__replica_sync(rep);
    kvsim_request_t *const *held = NULL;
    const long long held_n = s->ops->held ? s->ops->held(s, &held) : 0;
    const bool pre = g < np;
    const int32_t i = pre ? g : g - np;
    /* The hand-off's: blocks held for hand-offs (prefill), requests
     * allocated and not yet landed, or waiting for blocks (decode). */
    const long long ho = pre ? r->ho.held[i] : r->ho.inbound[i];
    const long long waitq = pre ? 0 : r->ho.waitq[i].n - r->ho.waitq_head[i];
    if (!s->running.n && !s->waiting.n && !held_n && !ho && !waitq)
      continue;
    char extra[96];
    if (pre)
      snprintf(extra, sizeof extra, "%lld blocks held for hand-offs", ho);
    else
      snprintf(extra, sizeof extra, "%lld inbound and %lld waiting for its blocks", ho, waitq);
    return kvsim_err_set(
        r->err, KVSIM_ETHRESH,
        "%s: %s instance %d: %lld requests waiting, %lld running and %lld held, %s, but no "
        "step, arrival or transfer is pending: the run cannot make progress (profile %s)",
        rep->where, pre ? "prefill" : "decode", (int)i, (long long)s->waiting.n,
        (long long)s->running.n, held_n, extra, s->ops->name);
  }
  return kvsim_err_set(
      r->err, KVSIM_ETHRESH,
      "%s: disaggregation: %lld requests in flight in no instance's queues and nothing "
      "pending: the run cannot make progress",
      r->sc->path[0] ? r->sc->path : r->sc->name, (long long)r->in_flight);
}

/* --check-invariants: after every event, each pool's references are its
 * scheduler's requests' plus the hand-off's (kvsim__handoff_check), and
 * the blocks of every scheduled request are live (the replica's own
 * step check). O(pools) per event: for goldens and tests. */
int kvsim__drun_check_all(drun_t *r) {
  int32_t n = r->side[0].n + r->side[1].n, g = 0;
  int64_t *blocks = kvsim__calloc((size_t)n, sizeof *blocks);
  if (!blocks)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "invariant check: out of memory");
  for (int k = 0; k < 2; k++)
    for (int32_t i = 0; i < r->side[k].n; i++, g++) {
      const kvsim_sched_t *s = r->side[k].reps[i].sched;
      for (int64_t j = 0; j < s->running.n; j++)
        blocks[g] += kvsim_kvcache_held(&r->side[k].reps[i].kv, s->running.v[j]);
    }
  int rc = kvsim__handoff_check(&r->ho, blocks, r->err);
  kvsim__free(blocks);
  return rc;
}
