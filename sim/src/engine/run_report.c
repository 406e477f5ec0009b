/* What the aggregated loop reports (run_state.h): the time-series rows
 * and the means they add to, the sampling ticks of an idle stretch, the
 * requests still in the system at the end, and the run's totals summed
 * over the replicas. */
#include "engine/lifecycle.h"
#include "engine/run_state.h"

static int emit_request(kvsim__run_t *r, kvsim_request_t *q) {
  return kvsim__emit_request(r->sink, q);
}

/* Adds `times` identical ticks' rows to the run's means. */
static void account_sample(kvsim__run_t *r, const kvsim__replica_t *rep, const kvsim_sample_t *s,
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

int kvsim__run_sample(kvsim__run_t *r, kvsim__replica_t *rep, kvsim_time_ns now, bool tick) {
  kvsim_sample_t s;
  int rc = kvsim__replica_sample(rep, &r->plan, now, tick, &s, r->err);
  if (rc < 0)
    return rc;
  if (tick)
    account_sample(r, rep, &s, 1);
  return r->sink && r->sink->sample ? r->sink->sample(r->sink->ctx, &s) : KVSIM_OK;
}

/* The next sampling tick after the one at `now`. With no step in flight
 * nothing changes before the next event, so every tick until then would
 * write the row just written again. A stretch of more than
 * KVSIM_IDLE_TICKS_MAX such ticks (a trace with a long idle gap) writes its
 * first and last rows only; the ticks in between still count in the means. */
kvsim_time_ns kvsim__run_next_tick(kvsim__run_t *r, kvsim_time_ns now, kvsim_time_ns tick) {
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

/* Requests still inside the system when the run stops are reported as
 * such: running, waiting, and swapped out (a profile's held list). Static
 * batches' placeholders of finished members were already reported and
 * are skipped. A request pulled but not yet arrived is not part of the
 * run. */
int kvsim__run_leftovers(kvsim__run_t *r) {
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

/* The replicas' counters, summed, and the first replicas' own rows. */
static void sum_replicas(kvsim__run_t *r) {
  kvsim_run_stats_t *stats = r->st;
  for (int32_t i = 0; i < r->nrep; i++) {
    const kvsim__replica_t *rep = &r->reps[i];
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
      stats->replica[i] = (kvsim_replica_stats_t){r->router.routed[i], rep->kv_usage_peak,
                                                  rep->kv.queries, rep->kv.hits};
  }
}

void kvsim__run_totals(kvsim__run_t *r) {
  kvsim_run_stats_t *stats = r->st;
  sum_replicas(r);
  stats->replicas = r->nrep;
  stats->router = r->sc->router;
  stats->router_affinity = r->router.affinity_hits;
  stats->router_fallbacks = r->router.fallbacks;
  stats->router_no_identity = r->router.no_identity;
  if (r->samples) {
    stats->kv_usage_mean = r->kv_usage_sum / (double)r->samples;
    stats->running_mean = r->running_sum / (double)r->samples;
    stats->waiting_mean = r->waiting_sum / (double)r->samples;
    stats->frac_samples_kv_full = (double)r->kv_full_samples / (double)r->samples;
    stats->frac_samples_seq_bound = (double)r->seq_bound_samples / (double)r->samples;
  }
  if (r->token_frac_samples) {
    stats->kv_token_fraction_mean = r->token_frac_sum / (double)r->token_frac_samples;
    stats->kv_internal_frag_bytes_mean = r->frag_sum / (double)r->token_frac_samples;
    stats->kv_reserved_unused_bytes_mean = r->unused_sum / (double)r->token_frac_samples;
  }
  stats->skipped_rows = kvsim_source_skipped(r->src);
  kvsim_perf_mean_step(&r->perf, stats->steps, stats->prompt_tokens, stats->generation_tokens,
                       stats->requests_finished, stats->prefix_hits, &stats->mean_step);
}
