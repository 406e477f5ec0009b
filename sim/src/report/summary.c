/* summary.json printed from the typed summary. The key order and the
 * numbers are part of the output contract (goldens compare bytes). */
#include "kvsim/summary.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/report.h"

const kvsim_latency_t *kvsim_summary_latency(const kvsim_summary_t *s, kvsim_metric m) {
  switch (m) {
  case KVSIM_METRIC_TPOT:
    return &s->tpot;
  case KVSIM_METRIC_E2E:
    return &s->e2e;
  case KVSIM_METRIC_QUEUE:
    return &s->queue;
  default:
    return &s->ttft;
  }
}

double kvsim_latency_stat(const kvsim_latency_t *l, kvsim_stat st) {
  switch (st) {
  case KVSIM_STAT_P50:
    return l->p50;
  case KVSIM_STAT_P90:
    return l->p90;
  case KVSIM_STAT_P99:
    return l->p99;
  default:
    return l->mean;
  }
}

int kvsim_metric_parse(const char *name, kvsim_metric *out) {
  static const char *const names[] = {"ttft", "tpot", "e2e", "queue"};
  for (int i = 0; i < 4; i++)
    if (!strcmp(name, names[i])) {
      *out = (kvsim_metric)i;
      return KVSIM_OK;
    }
  return KVSIM_EINVAL;
}

int kvsim_stat_parse(const char *name, kvsim_stat *out) {
  static const char *const names[] = {"mean", "p50", "p90", "p99"};
  for (int i = 0; i < 4; i++)
    if (!strcmp(name, names[i])) {
      *out = (kvsim_stat)i;
      return KVSIM_OK;
    }
  return KVSIM_EINVAL;
}

/* As run_output.c rounds the summary's ratios. */
static double round6(double x) { return round(x / 1e-6) * 1e-6; }

void kvsim_summary_set_cluster(kvsim_summary_t *s, const kvsim_run_stats_t *st) {
  s->replicas = st->replicas;
  s->disaggregated = st->disaggregated;
  if (st->disaggregated) {
    s->disagg = st->disagg;
    s->prefill_kv_cache_tokens = st->disagg_prefill_plan.kv_cache_tokens;
    s->decode_kv_cache_tokens = st->plan.kv_cache_tokens;
    s->prefill_per_token_kv_bytes = st->disagg_prefill_plan.per_token_kv_bytes;
    s->prefill_tp = st->disagg_prefill_plan.p.tp;
    s->decode_tp = st->plan.p.tp;
  }
  if (st->replicas <= 1)
    return;
  snprintf(s->router, sizeof s->router, "%s", kvsim_router_name(st->router));
  s->router_affinity = st->router_affinity;
  s->router_fallbacks = st->router_fallbacks;
  s->router_no_identity = st->router_no_identity;
  int32_t n = st->replicas < KVSIM_SUMMARY_MAX_REPLICAS ? st->replicas : KVSIM_SUMMARY_MAX_REPLICAS;
  for (int32_t i = 0; i < n; i++) {
    const kvsim_replica_stats_t *r = &st->replica[i];
    kvsim_replica_summary_t *o = &s->per_replica[i];
    o->requests = r->requests;
    o->request_share =
        st->requests_arrived ? round6((double)r->requests / (double)st->requests_arrived) : 0;
    o->kv_usage_peak = round6(r->kv_usage_peak);
    o->prefix_queries = r->prefix_queries;
    o->prefix_hits = r->prefix_hits;
    o->prefix_hit_rate =
        r->prefix_queries ? round6((double)r->prefix_hits / (double)r->prefix_queries) : 0;
  }
  s->nreplica_rows = n;
}

/* A figure that may not exist: null when NAN (no sample), never 0, or
 * unbounded (inf: a band's half-width when an edge run finished nothing). */
static void add_known(cJSON *o, const char *key, double v) {
  if (!isfinite(v))
    cJSON_AddNullToObject(o, key);
  else
    cJSON_AddNumberToObject(o, key, v);
}

/* A finding's advice (only when it has some): each change, and once run
 * (kvsim_study_verify_advice) what it measured and the one-line verdict. */
static void add_advice(cJSON *d, const kvsim_diagnosis_t *g) {
  if (!g->nadvice)
    return;
  cJSON *arr = cJSON_AddArrayToObject(d, "advice");
  for (int k = 0; k < g->nadvice; k++) {
    const kvsim_advice_t *a = &g->advice[k];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "label", a->label);
    cJSON_AddStringToObject(o, "set", a->change);
    if (a->tried) {
      cJSON_AddStringToObject(o, "verdict", a->verdict);
      if (a->rc == KVSIM_OK) {
        cJSON *m = cJSON_AddObjectToObject(o, "measured");
        add_known(m, "ttft_p99_s", a->ttft_p99_s);
        add_known(m, "tpot_p99_s", a->tpot_p99_s);
        cJSON_AddNumberToObject(m, "requests_per_s", a->requests_per_s);
        cJSON_AddNumberToObject(m, "preemptions", (double)a->preemptions);
        cJSON_AddNumberToObject(m, "rejected", (double)a->rejected);
        if (a->slo_given)
          cJSON_AddBoolToObject(m, "slo_met", a->slo_met);
        if (a->note[0])
          cJSON_AddStringToObject(o, "misses", a->note);
      } else {
        cJSON_AddStringToObject(o, "error", a->note);
      }
    }
    cJSON_AddItemToArray(arr, o);
  }
  if (g->verified[0])
    cJSON_AddStringToObject(d, "verified", g->verified);
}

/* "disaggregation": the flow, transfer unit and link, each side's pool,
 * and the hand-off: transfers, bytes, link time (all of it, and the last
 * send's, which TTFT waits for), the wait for decode blocks, and
 * the peaks of what was held and queued. */
static void add_disagg(cJSON *j, const kvsim_summary_t *s) {
  if (!s->disaggregated)
    return;
  const kvsim_disagg_stats_t *d = &s->disagg;
  cJSON *o = cJSON_AddObjectToObject(j, "disaggregation");
  cJSON_AddStringToObject(o, "flow", kvsim_disagg_flow_name(s->disagg_cfg.flow));
  cJSON_AddStringToObject(o, "transfer", kvsim_disagg_unit_name(d->unit));
  cJSON_AddStringToObject(o, "link", kvsim_xfer_link_name(s->disagg_cfg.link));
  cJSON_AddNumberToObject(o, "link_bandwidth_GBps", s->disagg_cfg.link_GBps);
  cJSON_AddNumberToObject(o, "link_latency_us", round6(s->disagg_cfg.link_latency_s * 1e6));
  const char *names[2] = {"prefill", "decode"};
  for (int k = 0; k < 2; k++) {
    cJSON *side = cJSON_AddObjectToObject(o, names[k]);
    cJSON_AddNumberToObject(side, "replicas", k ? d->decode_replicas : d->prefill_replicas);
    cJSON_AddNumberToObject(side, "tensor_parallel_size", k ? s->decode_tp : s->prefill_tp);
    cJSON_AddNumberToObject(side, "kv_blocks", (double)(k ? d->decode_pool_blocks : d->prefill_pool_blocks));
    cJSON_AddNumberToObject(side, "kv_cache_tokens",
                            (double)(k ? s->decode_kv_cache_tokens : s->prefill_kv_cache_tokens));
    cJSON_AddNumberToObject(side, "kv_usage_peak",
                            round6(k ? d->decode_kv_usage_peak : d->prefill_kv_usage_peak));
  }
  cJSON_AddNumberToObject(o, "kv_bytes_per_token", (double)(s->prefill_per_token_kv_bytes * s->prefill_tp));
  cJSON_AddNumberToObject(o, "transfers", (double)d->transfers);
  cJSON_AddNumberToObject(o, "kv_bytes_transferred", (double)d->bytes_transferred);
  cJSON_AddNumberToObject(o, "decode_prefix_hit_tokens", (double)d->decode_hit_tokens);
  cJSON_AddNumberToObject(o, "transfer_s_mean", d->transfers ? round6(d->transfer_s_sum / (double)d->transfers) : 0);
  cJSON_AddNumberToObject(o, "transfer_s_max", round6(d->transfer_s_max));
  cJSON_AddNumberToObject(o, "chunk_sends", (double)d->chunk_sends);
  cJSON_AddNumberToObject(o, "transfer_exposed_s_mean",
                          d->transfers ? round6(d->transfer_exposed_s_sum / (double)d->transfers)
                                       : 0);
  cJSON_AddNumberToObject(o, "decode_alloc_wait_s_mean",
                          d->transfers ? round6(d->handoff_wait_s_sum / (double)d->transfers) : 0);
  cJSON_AddNumberToObject(o, "decode_alloc_wait_s_max", round6(d->handoff_wait_s_max));
  cJSON_AddNumberToObject(o, "prefill_blocks_held_peak", (double)d->held_blocks_peak);
  cJSON_AddNumberToObject(o, "kv_transfer_bytes_in_flight_peak", (double)d->bytes_in_flight_peak);
  cJSON_AddNumberToObject(o, "transfer_queue_peak", (double)d->transfer_queue_peak);
  cJSON_AddNumberToObject(o, "decode_prealloc_queue_peak", (double)d->prealloc_queue_peak);
}

/* "cluster": the router and each replica's share of the run. */
static void add_cluster(cJSON *j, const kvsim_summary_t *s) {
  if (s->replicas <= 1)
    return;
  cJSON *c = cJSON_AddObjectToObject(j, "cluster");
  cJSON_AddNumberToObject(c, "replicas", s->replicas);
  cJSON_AddStringToObject(c, "router", s->router);
  if (!strcmp(s->router, "prefix_affinity")) {
    cJSON_AddNumberToObject(c, "routed_by_prefix", (double)s->router_affinity);
    cJSON_AddNumberToObject(c, "routed_least_loaded_imbalance", (double)s->router_fallbacks);
    cJSON_AddNumberToObject(c, "routed_least_loaded_no_prefix", (double)s->router_no_identity);
  }
  cJSON *rows = cJSON_AddArrayToObject(c, "per_replica");
  for (int32_t i = 0; i < s->nreplica_rows; i++) {
    const kvsim_replica_summary_t *r = &s->per_replica[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "replica", i);
    cJSON_AddNumberToObject(e, "requests", (double)r->requests);
    cJSON_AddNumberToObject(e, "request_share", r->request_share);
    cJSON_AddNumberToObject(e, "kv_usage_peak", r->kv_usage_peak);
    cJSON_AddNumberToObject(e, "prefix_queries_tokens", (double)r->prefix_queries);
    cJSON_AddNumberToObject(e, "prefix_hits_tokens", (double)r->prefix_hits);
    cJSON_AddNumberToObject(e, "prefix_hit_rate", r->prefix_hit_rate);
    cJSON_AddItemToArray(rows, e);
  }
  if (s->nreplica_rows < s->replicas)
    cJSON_AddNumberToObject(c, "replicas_not_listed", s->replicas - s->nreplica_rows);
}

/* ---- JSON ---- */

/* "<key>_range": [lo, hi], beside the figure it bounds. */
static void add_range(cJSON *o, const char *key, const kvsim_range_t *r) {
  char name[64];
  snprintf(name, sizeof name, "%s_range", key);
  cJSON *a = cJSON_AddArrayToObject(o, name);
  /* null: an empty range (NAN), or an end no run bounds (inf: a run at an
   * edge finished nothing; summary_band.c). */
  cJSON_AddItemToArray(a, isfinite(r->lo) ? cJSON_CreateNumber(r->lo) : cJSON_CreateNull());
  cJSON_AddItemToArray(a, isfinite(r->hi) ? cJSON_CreateNumber(r->hi) : cJSON_CreateNull());
}

static void add_num(cJSON *o, const char *key, double v, const kvsim_range_t *r) {
  cJSON_AddNumberToObject(o, key, v);
  if (r)
    add_range(o, key, r);
}

/* r NULL: no ranges. With no sample the statistics are null (the keys
 * kept): a percentile of nothing is not 0 s. */
static cJSON *latency_json(const kvsim_latency_t *l, const kvsim_latency_range_t *r) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "count", (double)l->count);
  const char *keys[] = {"mean", "p50", "p90", "p99", "max"};
  const double v[] = {l->mean, l->p50, l->p90, l->p99, l->max};
  const kvsim_range_t *rv[] = {r ? &r->mean : NULL, r ? &r->p50 : NULL, r ? &r->p90 : NULL,
                               r ? &r->p99 : NULL, r ? &r->max : NULL};
  for (int k = 0; k < 5; k++) {
    add_known(j, keys[k], l->count ? v[k] : NAN);
    if (rv[k])
      add_range(j, keys[k], rv[k]);
  }
  return j;
}

static void add_calibration(cJSON *lat, const kvsim_summary_t *s) {
  const kvsim_calibration_t *c = &s->calibration;
  cJSON *o = cJSON_AddObjectToObject(lat, "calibration");
  cJSON_AddStringToObject(o, "gpu", c->gpu);
  cJSON_AddStringToObject(o, "status", kvsim_cal_status_name(c->status));
  cJSON_AddStringToObject(o, "kernels", c->kernels);
  cJSON_AddStringToObject(o, "source", c->source);
  if (c->borrowed_from[0])
    cJSON_AddStringToObject(o, "borrowed_from", c->borrowed_from);
  cJSON_AddNumberToObject(o, "band_ttft_rel", round6(c->band_ttft_rel));
  cJSON_AddNumberToObject(o, "band_tpot_rel", round6(c->band_tpot_rel));
  if (!s->has_ranges)
    return;
  cJSON *b = cJSON_AddObjectToObject(lat, "band");
  cJSON *a = cJSON_AddArrayToObject(b, "step_time_scales");
  cJSON_AddItemToArray(a, cJSON_CreateNumber(round6(s->band_scale_lo)));
  cJSON_AddItemToArray(a, cJSON_CreateNumber(round6(s->band_scale_hi)));
  a = cJSON_AddArrayToObject(b, "prefill_time_scales");
  cJSON_AddItemToArray(a, cJSON_CreateNumber(round6(s->band_prefill_scale_lo)));
  cJSON_AddItemToArray(a, cJSON_CreateNumber(round6(s->band_prefill_scale_hi)));
  cJSON_AddStringToObject(b, "ranges",
                          "[min, max] over the nominal run and the runs at both scales "
                          "(queueing is not monotone in the step time); the TTFT, TPOT and E2E "
                          "tops at least the held-out band above the nominal figure");
}

static void add_slo(cJSON *slo, const char *key, const kvsim_slo_result_t *r) {
  if (!r->given)
    return;
  cJSON *t = cJSON_AddObjectToObject(slo, key);
  cJSON_AddNumberToObject(t, "target", r->target);
  add_known(t, "actual", r->actual); /* null: no sample (reason says why) */
  cJSON_AddBoolToObject(t, "met", r->met);
  if (r->reason[0]) /* only when there is one: the keys above stay as they were */
    cJSON_AddStringToObject(t, "reason", r->reason);
}

static void add_requests(cJSON *j, const kvsim_summary_t *s) {
  cJSON *rq = cJSON_AddObjectToObject(j, "requests");
  cJSON_AddNumberToObject(rq, "total", (double)s->requests_total);
  cJSON_AddNumberToObject(rq, "finished", (double)s->requests_finished);
  add_num(rq, "rejected", (double)s->requests_rejected, s->has_ranges ? &s->rejected_range : NULL);
  cJSON_AddNumberToObject(rq, "running_at_end", (double)s->running_at_end);
  cJSON_AddNumberToObject(rq, "waiting_at_end", (double)s->waiting_at_end);
  cJSON_AddNumberToObject(rq, "skipped_rows", (double)s->skipped_rows);
  cJSON *why = cJSON_AddObjectToObject(rq, "rejected_reasons");
  for (int i = 0; i < s->nreasons; i++)
    cJSON_AddNumberToObject(why, s->rejected_reasons[i].why, (double)s->rejected_reasons[i].n);
}

/* latency.steady_state: the rule, what it dropped, and whether the window
 * is long enough (kvsim/steady.h); latency.untrimmed: every finished
 * request's p99s, to see what the trim moved. */
static void add_steady(cJSON *lat, const kvsim_summary_t *s) {
  const kvsim_steady_t *w = &s->steady;
  cJSON *o = cJSON_AddObjectToObject(lat, "steady_state");
  cJSON_AddStringToObject(o, "rule", KVSIM_STEADY_RULE);
  cJSON_AddNumberToObject(o, "warmup_requests_dropped", (double)w->warmup);
  cJSON_AddNumberToObject(o, "drain_requests_dropped", (double)w->drain);
  cJSON_AddNumberToObject(o, "window_start_s", w->arrivals ? round(w->start_ns / 1e3) / 1e6 : 0);
  cJSON_AddNumberToObject(o, "window_end_s", w->arrivals ? round(w->end_ns / 1e3) / 1e6 : 0);
  cJSON_AddNumberToObject(o, "finished_in_window", (double)w->finished);
  cJSON_AddBoolToObject(o, "reached", w->reached);
  if (!w->reached)
    cJSON_AddStringToObject(o, "warning", w->why);
  cJSON *u = cJSON_AddObjectToObject(lat, "untrimmed");
  add_known(u, "ttft_p99_s", s->all_ttft.count ? s->all_ttft.p99 : NAN);
  add_known(u, "tpot_p99_s", s->all_tpot.count ? s->all_tpot.p99 : NAN);
  add_known(u, "e2e_p99_s", s->all_e2e.count ? s->all_e2e.p99 : NAN);
}

static void add_latency(cJSON *j, const kvsim_summary_t *s) {
  cJSON *lat = cJSON_AddObjectToObject(j, "latency");
  const bool r = s->has_ranges;
  cJSON_AddItemToObject(lat, "ttft_s", latency_json(&s->ttft, r ? &s->ttft_range : NULL));
  cJSON_AddItemToObject(lat, "tpot_s", latency_json(&s->tpot, r ? &s->tpot_range : NULL));
  cJSON_AddItemToObject(lat, "e2e_s", latency_json(&s->e2e, r ? &s->e2e_range : NULL));
  cJSON_AddItemToObject(lat, "queue_s", latency_json(&s->queue, r ? &s->queue_range : NULL));
  if (s->npriorities > 1) {
    cJSON *by = cJSON_AddArrayToObject(lat, "by_priority");
    for (int k = 0; k < s->npriorities; k++) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddNumberToObject(e, "priority", s->by_priority[k].priority);
      cJSON_AddItemToObject(e, "ttft_s", latency_json(&s->by_priority[k].ttft, NULL));
      cJSON_AddItemToObject(e, "e2e_s", latency_json(&s->by_priority[k].e2e, NULL));
      cJSON_AddItemToArray(by, e);
    }
  }
  cJSON_AddStringToObject(lat, "percentiles",
                          s->percentiles_exact ? "exact" : "histogram (0.1% resolution)");
  add_steady(lat, s);
  add_calibration(lat, s);
  if (s->has_uncertainty) {
    cJSON *band = cJSON_AddObjectToObject(lat, "uncertainty");
    add_known(band, "ttft_p99_s", s->uncertainty_ttft_p99_s);
    add_known(band, "tpot_p99_s", s->uncertainty_tpot_p99_s);
    add_known(band, "e2e_p99_s", s->uncertainty_e2e_p99_s);
    cJSON_AddStringToObject(band, "source", s->uncertainty_source);
  }
}

static void add_cache(cJSON *j, const kvsim_summary_t *s) {
  cJSON *kv = cJSON_AddObjectToObject(j, "kv_cache");
  add_num(kv, "usage_peak", s->kv_usage_peak, s->has_ranges ? &s->kv_usage_peak_range : NULL);
  cJSON_AddNumberToObject(kv, "usage_mean", s->kv_usage_mean);
  cJSON_AddNumberToObject(kv, "running_mean", s->running_mean);
  cJSON_AddNumberToObject(kv, "waiting_mean", s->waiting_mean);
  cJSON_AddNumberToObject(kv, "evictions", (double)s->evictions);
  cJSON_AddNumberToObject(kv, "kv_allocated_token_fraction", s->kv_allocated_token_fraction);
  cJSON_AddNumberToObject(kv, "kv_reserved_unused_bytes_mean", s->kv_reserved_unused_bytes_mean);
  cJSON_AddNumberToObject(kv, "kv_internal_fragmentation_bytes_mean", s->kv_internal_frag_bytes_mean);

  cJSON *pre = cJSON_AddObjectToObject(j, "preemptions");
  const bool r = s->has_ranges;
  add_num(pre, "total", (double)s->preemptions, r ? &s->preemptions_range : NULL);
  add_num(pre, "requests_preempted", (double)s->requests_preempted,
          r ? &s->requests_preempted_range : NULL);
  if (s->preemptions_are_retractions) {
    cJSON_AddStringToObject(pre, "kind", "retraction");
    cJSON *ret = cJSON_AddObjectToObject(j, "retractions");
    add_num(ret, "num_retractions", (double)s->preemptions, r ? &s->preemptions_range : NULL);
    add_num(ret, "requests_retracted", (double)s->requests_preempted, r ? &s->requests_preempted_range : NULL);
  }

  if (s->spec_method[0]) { /* only then: other runs' summaries are unchanged */
    cJSON *sp = cJSON_AddObjectToObject(j, "speculative");
    cJSON_AddStringToObject(sp, "method", s->spec_method);
    cJSON_AddNumberToObject(sp, "num_speculative_tokens", s->spec_tokens);
    cJSON_AddNumberToObject(sp, "num_draft_tokens", (double)s->spec_drafts);
    cJSON_AddNumberToObject(sp, "num_accepted_tokens", (double)s->spec_accepted);
    cJSON_AddNumberToObject(sp, "draft_acceptance_rate",
                            s->spec_drafts ? (double)s->spec_accepted / (double)s->spec_drafts : 0);
  }

  if (s->lora_max_loras > 0) { /* only then: other runs' summaries are unchanged */
    cJSON *lo = cJSON_AddObjectToObject(j, "lora");
    cJSON_AddNumberToObject(lo, "max_loras", s->lora_max_loras);
    cJSON_AddNumberToObject(lo, "max_cpu_loras", s->lora_max_cpu_loras);
    cJSON_AddNumberToObject(lo, "max_lora_rank", s->lora_rank);
    cJSON_AddNumberToObject(lo, "num_lora_requests", (double)s->lora_requests);
    /* LRUCacheLoRAModelManager.activate_adapter copies, and
     * LRUCacheWorkerLoRAManager._load_adapter reads from disk. */
    cJSON_AddNumberToObject(lo, "num_adapter_loads", (double)s->lora_loads);
    cJSON_AddNumberToObject(lo, "num_cpu_cache_misses", (double)s->lora_cpu_misses);
    /* Scheduler.schedule's "Scheduling would exceed max_loras, skip",
     * counted once per step a request was skipped in. */
    cJSON_AddNumberToObject(lo, "num_max_loras_skips", (double)s->lora_skips);
    cJSON_AddNumberToObject(lo, "adapter_load_s", s->lora_load_s);
    cJSON_AddNumberToObject(lo, "lora_kernel_s", s->lora_kernel_s);
  }

  cJSON *pc = cJSON_AddObjectToObject(j, "prefix_cache");
  cJSON_AddBoolToObject(pc, "enabled", s->prefix_caching);
  cJSON_AddNumberToObject(pc, "queries_tokens", (double)s->prefix_queries);
  cJSON_AddNumberToObject(pc, "hits_tokens", (double)s->prefix_hits);
  cJSON_AddNumberToObject(pc, "hit_rate", s->prefix_hit_rate);
  cJSON_AddNumberToObject(pc, "prompt_tokens_cached", (double)s->prompt_tokens_cached);
  cJSON_AddNumberToObject(pc, "prompt_tokens_cached_fraction", s->prompt_tokens_cached_fraction);
  cJSON_AddNumberToObject(pc, "hits_lost_to_tenant_isolation_tokens", (double)s->prefix_isolation_lost);
  cJSON_AddNumberToObject(pc, "hit_rate_without_isolation", s->prefix_hit_rate_without_isolation);
  cJSON_AddNumberToObject(pc, "preempted_queries_tokens", (double)s->prefix_preempted_queries);
  cJSON_AddNumberToObject(pc, "preempted_hits_tokens", (double)s->prefix_preempted_hits);

  if (s->has_cpu_tier) {
    cJSON *cpu = cJSON_AddObjectToObject(j, "cpu_tier");
    cJSON_AddStringToObject(cpu, "use", s->cpu_offload ? "offload" : "swap");
    cJSON_AddNumberToObject(cpu, "bytes_to_cpu", (double)s->cpu_bytes_to_cpu);
    cJSON_AddNumberToObject(cpu, "bytes_to_gpu", (double)s->cpu_bytes_to_gpu);
    cJSON_AddNumberToObject(cpu, "blocks_stored", (double)s->cpu_blocks_stored);
    cJSON_AddNumberToObject(cpu, "evictions", (double)s->cpu_evictions);
    cJSON_AddNumberToObject(cpu, "external_prefix_queries_tokens", (double)s->ext_prefix_queries);
    cJSON_AddNumberToObject(cpu, "external_prefix_hits_tokens", (double)s->ext_prefix_hits);
    cJSON_AddNumberToObject(cpu, "transfer_s", s->cpu_transfer_s);
    cJSON_AddNumberToObject(cpu, "step_wait_on_transfers_s", s->transfer_wait_s);
    cJSON_AddBoolToObject(cpu, "transfers_overlap_compute", s->transfers_overlap);
  }
}

cJSON *kvsim_summary_json(const kvsim_summary_t *s, const kvsim_scenario_t *sc) {
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  cJSON_AddStringToObject(j, "name", s->name);
  cJSON_AddNumberToObject(j, "seed", (double)s->seed);
  cJSON_AddStringToObject(j, "kvsim_version", KVSIM_VERSION);
  cJSON_AddItemToObject(j, "config", kvsim_scenario_config_json(sc));
  cJSON_AddItemToObject(j, "workload_resolved", kvsim_workload_cfg_json(sc->workload));
  cJSON *plan = cJSON_AddObjectToObject(j, "memory_plan");
  kvsim_report_plan_json(&s->plan, &sc->model, &sc->gpu, plan);
  cJSON_AddNumberToObject(plan, "pool_usable_blocks", (double)s->pool_usable_blocks);
  add_requests(j, s);

  cJSON_AddNumberToObject(j, "simulated_time_s", s->simulated_time_s);
  cJSON_AddNumberToObject(j, "makespan_s", s->makespan_s);
  cJSON *tp = cJSON_AddObjectToObject(j, "throughput");
  const bool r = s->has_ranges;
  add_num(tp, "requests_per_s", s->requests_per_s, r ? &s->requests_per_s_range : NULL);
  add_num(tp, "output_tokens_per_s", s->output_tokens_per_s,
          r ? &s->output_tokens_per_s_range : NULL);
  add_num(tp, "prompt_tokens_per_s", s->prompt_tokens_per_s,
          r ? &s->prompt_tokens_per_s_range : NULL);
  add_num(tp, "total_tokens_per_s", s->total_tokens_per_s, r ? &s->total_tokens_per_s_range : NULL);
  add_latency(j, s);
  add_cache(j, s);

  cJSON *slo = cJSON_AddObjectToObject(j, "slo");
  add_slo(slo, "ttft_p99_s", &s->slo_ttft_p99);
  add_slo(slo, "tpot_p99_s", &s->slo_tpot_p99);
  add_slo(slo, "e2e_p99_s", &s->slo_e2e_p99);
  add_num(slo, "attainment", s->slo_attainment, r ? &s->slo_attainment_range : NULL);

  cJSON *eng = cJSON_AddObjectToObject(j, "engine");
  cJSON_AddNumberToObject(eng, "steps", (double)s->steps);
  cJSON_AddNumberToObject(eng, "busy_s", s->busy_s);
  add_cluster(j, s);
  add_disagg(j, s);

  cJSON *diag = cJSON_AddArrayToObject(j, "diagnosis");
  for (int i = 0; i < s->ndiagnosis; i++) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "code", s->diagnosis[i].code);
    cJSON_AddStringToObject(d, "severity", s->diagnosis[i].severity);
    cJSON_AddStringToObject(d, "message", s->diagnosis[i].message);
    add_advice(d, &s->diagnosis[i]);
    cJSON_AddItemToArray(diag, d);
  }
  return j;
}
