#include "report/diagnosis.h"

#include <stdio.h>

static void add(kvsim_summary_t *out, const char *code, const char *severity, const char *msg) {
  if (out->ndiagnosis == KVSIM_SUMMARY_MAX_DIAGNOSES)
    return;
  kvsim_diagnosis_t *d = &out->diagnosis[out->ndiagnosis++];
  snprintf(d->code, sizeof d->code, "%s", code);
  snprintf(d->severity, sizeof d->severity, "%s", severity);
  snprintf(d->message, sizeof d->message, "%s", msg);
}

void kvsim__diagnose(const kvsim_sched_cfg_t *sched, const kvsim_run_stats_t *st, double ttft_p50,
                     double ttft_p99, kvsim_summary_t *out) {
  char msg[512];
  int64_t served = st->requests_finished + st->requests_rejected;
  /* Frequent preemption: the pool is too small for the concurrency the
   * scheduler admits (vLLM warns the same way). Threshold: more than one
   * preemption per 20 requests. */
  if (served > 0 && st->preemptions * 20 > served) {
    snprintf(msg, sizeof msg,
             "%lld preemptions for %lld requests (%lld requests preempted): the KV pool (%lld blocks "
             "per replica) is too small for the batch. Raise gpu_memory_utilization, use "
             "kv_cache_dtype fp8, lower max_num_seqs, or add GPUs (tensor_parallel_size).",
             (long long)st->preemptions, (long long)served, (long long)st->requests_preempted,
             (long long)st->pool_blocks);
    add(out, "frequent_preemption", "warning", msg);
  }
  if (st->frac_samples_kv_full > 0.2) {
    snprintf(msg, sizeof msg,
             "KV cache full with requests waiting in %.0f%% of samples: memory, not compute, limits "
             "throughput. FP8 KV doubles the pool; prefix caching, a larger GPU or more replicas help.",
             100 * st->frac_samples_kv_full);
    add(out, "kv_bound", "warning", msg);
  }
  if (st->frac_samples_seq_bound > 0.2 && st->waiting_mean > 1) {
    snprintf(msg, sizeof msg,
             "max_num_seqs (%lld) reached in %.0f%% of samples with %.1f requests waiting on average: "
             "raise max_num_seqs if the KV cache has room (usage mean %.0f%%).",
             (long long)sched->max_num_seqs, 100 * st->frac_samples_seq_bound, st->waiting_mean,
             100 * st->kv_usage_mean);
    add(out, "max_num_seqs_bound", "info", msg);
  }
  if (ttft_p50 > 0 && ttft_p99 > 10 * ttft_p50 && ttft_p99 > 1.0) {
    snprintf(msg, sizeof msg,
             "long tail: p99 TTFT %.2f s is %.0fx the median %.2f s; requests queue behind a full "
             "batch. Fewer concurrent sequences per replica, more replicas, or admission control cut "
             "the tail.",
             ttft_p99, ttft_p99 / ttft_p50, ttft_p50);
    add(out, "long_tail_latency", "warning", msg);
  }
  if (sched->enable_prefix_caching && st->prefix_queries > 0 &&
      st->prefix_hits * 20 < st->prefix_queries) {
    snprintf(msg, sizeof msg,
             "prefix cache hit rate %.1f%%: this traffic shares little prefix (or the cache evicts it "
             "before reuse); caching costs nothing here but buys little.",
             100.0 * (double)st->prefix_hits / (double)st->prefix_queries);
    add(out, "low_prefix_hit_rate", "info", msg);
  }
  if (st->requests_rejected > 0) {
    snprintf(msg, sizeof msg, "%lld requests rejected (%lld too long for max_model_len %lld, %lld by admission control, %lld larger than the KV pool).",
             (long long)st->requests_rejected, (long long)st->rejected_too_long,
             (long long)sched->max_model_len, (long long)st->rejected_admission,
             (long long)st->rejected_no_fit);
    add(out, "rejected_requests", "warning", msg);
  }
}

void kvsim__diagnose_calibration(const kvsim_calibration_t *cal, kvsim_summary_t *out) {
  if (cal->status == KVSIM_CAL_FITTED)
    return;
  char msg[512], from[96] = "";
  if (cal->borrowed_from[0])
    snprintf(from, sizeof from, " (those of %s)", cal->borrowed_from);
  snprintf(msg, sizeof msg,
           "%s has no step-time fit of its own: its coefficients are %s%s, so its band is "
           "+/-%.0f%% TTFT and +/-%.0f%% TPOT on step time, wider than a fitted GPU's; fit this "
           "GPU on measured runs (kvsim calibrate) to narrow it.",
           cal->gpu, kvsim_cal_status_name(cal->status), from, 100 * cal->band_ttft_rel,
           100 * cal->band_tpot_rel);
  add(out, "uncalibrated_gpu", cal->status == KVSIM_CAL_SPEC_ONLY ? "warning" : "info", msg);
}
