/* The diagnosis rules. Each reads the run's figures, says what limited it
 * and lists the changes that should help as typed overrides, which the
 * study room re-runs to measure (study/advice.c): a rule's advice is a
 * hypothesis until then. */
#include "report/diagnosis.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/catalog.h"
#include "kvsim/params.h"

/* An advice's change names the scenario key as the registry spells it. */
static const char *key_of(int id) { return kvsim_param_get(id)->key; }

kvsim_diagnosis_t *kvsim__diag_add(kvsim_summary_t *s, const char *code, const char *severity,
                                   const char *fmt, ...) {
  if (s->ndiagnosis == KVSIM_SUMMARY_MAX_DIAGNOSES)
    return NULL;
  kvsim_diagnosis_t *d = &s->diagnosis[s->ndiagnosis++];
  *d = (kvsim_diagnosis_t){0};
  snprintf(d->code, sizeof d->code, "%s", code);
  snprintf(d->severity, sizeof d->severity, "%s", severity);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->message, sizeof d->message, fmt, ap);
  va_end(ap);
  return d;
}

kvsim_advice_t *kvsim__diag_advise(kvsim_diagnosis_t *d, kvsim_advice_kind kind, double value) {
  if (!d || d->nadvice == KVSIM_DIAGNOSIS_MAX_ADVICE)
    return NULL;
  kvsim_advice_t *a = &d->advice[d->nadvice++];
  *a = (kvsim_advice_t){.kind = kind, .value = value};
  return a;
}

/* FP8 KV halves a 16-bit cache (vLLM --kv-cache-dtype fp8: one byte per
 * element); nothing to advise when the cache is already 8-bit or less. */
void kvsim__diag_advise_fp8(kvsim_diagnosis_t *d, const kvsim_summary_t *s) {
  if (s->plan.kv_bytes_per_element <= 1)
    return;
  kvsim_advice_t *a = kvsim__diag_advise(d, KVSIM_ADVICE_KV_FP8, 0);
  if (a) {
    snprintf(a->label, sizeof a->label, "FP8 KV");
    snprintf(a->change, sizeof a->change, "%s=fp8", key_of(KVSIM_PARAM_KV_CACHE_DTYPE));
  }
}

static int gpus_per_replica(const kvsim_summary_t *s) {
  int tp = s->plan.p.tp > 0 ? s->plan.p.tp : 1, pp = s->plan.p.pp > 0 ? s->plan.p.pp : 1;
  return tp * pp;
}

static void advise_replicas(kvsim_diagnosis_t *d, const kvsim_summary_t *s, int to) {
  int n = s->replicas > 0 ? s->replicas : 1, g = gpus_per_replica(s);
  if (to <= n || to > KVSIM_MAX_REPLICAS)
    return;
  kvsim_advice_t *a = kvsim__diag_advise(d, KVSIM_ADVICE_REPLICAS, to);
  if (!a)
    return;
  if (to == n + 1)
    snprintf(a->label, sizeof a->label, "one more replica (%d -> %d GPUs)", n * g, to * g);
  else
    snprintf(a->label, sizeof a->label, "%d replicas (%d -> %d GPUs)", to, n * g, to * g);
  snprintf(a->change, sizeof a->change, "%s=%d", key_of(KVSIM_PARAM_REPLICAS), to);
}

static void advise_replica(kvsim_diagnosis_t *d, const kvsim_summary_t *s) {
  advise_replicas(d, s, (s->replicas > 0 ? s->replicas : 1) + 1);
}

/* Replicas for the offered rate: the cluster served `served` with n
 * replicas at saturation, so n x offered / served at the same per-replica
 * rate, plus 15% so that no replica runs saturated (queueing delay grows
 * without bound as utilisation nears 1); at least one more. */
static void advise_replicas_for(kvsim_diagnosis_t *d, const kvsim_summary_t *s, double offered) {
  int n = s->replicas > 0 ? s->replicas : 1;
  double need = s->requests_per_s > 0 ? ceil(1.15 * n * offered / s->requests_per_s - 1e-9) : n + 1;
  advise_replicas(d, s, need > n + 1 ? (int)fmin(need, KVSIM_MAX_REPLICAS) : n + 1);
}

/* Twice the tensor parallelism, within one 8-GPU node (NVLink). */
/* TP doubled, or halved where the all-reduce already sets the step (more
 * ranks would add communication faster than they remove compute). */
static void advise_tp(kvsim_diagnosis_t *d, const kvsim_summary_t *s, bool halve) {
  int tp = s->plan.p.tp > 0 ? s->plan.p.tp : 1;
  int to = halve ? tp / 2 : tp * 2;
  if (to < 1 || to == tp || to > 8)
    return;
  int gpus = gpus_per_replica(s) * (s->replicas > 0 ? s->replicas : 1);
  kvsim_advice_t *a = kvsim__diag_advise(d, KVSIM_ADVICE_TP, to);
  if (a) {
    snprintf(a->label, sizeof a->label, "TP %d -> %d (%d -> %d GPUs)", tp, to, gpus, gpus / tp * to);
    snprintf(a->change, sizeof a->change, "%s=%d", key_of(KVSIM_PARAM_TENSOR_PARALLEL_SIZE), to);
  }
}

/* 0.05 more of the GPU for the pool, up to 0.95 (vLLM's default is 0.9;
 * beyond 0.95 other processes on the GPU tend to run out), in the engine's
 * own key (kvsim/sched.h kvsim_sched_fraction_key): SGLang's resolved
 * mem_fraction_static, TGI's cuda_memory_fraction; HF Transformers has
 * none, and the others ignore vLLM's. */
static void advise_util(kvsim_diagnosis_t *d, const kvsim_summary_t *s) {
  int id = KVSIM_PARAM_GPU_MEMORY_UTILIZATION;
  double u = s->plan.p.gpu_memory_utilization;
  if (s->plan.p.engine == KVSIM_PLAN_HF)
    return;
  if (s->plan.p.engine == KVSIM_PLAN_SGLANG) {
    id = KVSIM_PARAM_MEM_FRACTION_STATIC;
    u = s->plan.sglang.mem_fraction_static;
  } else if (s->plan.p.engine == KVSIM_PLAN_TGI) {
    id = KVSIM_PARAM_CUDA_MEMORY_FRACTION;
    u = s->plan.p.tgi.cuda_memory_fraction;
  }
  const char *key = kvsim_param_leaf(kvsim_param_get(id));
  if (!(u > 0) || u >= 0.95 - 1e-9)
    return;
  double nu = fmin(0.95, round((u + 0.05) * 100) / 100);
  kvsim_advice_t *a = kvsim__diag_advise(d, KVSIM_ADVICE_UTILIZATION, nu);
  if (a) {
    snprintf(a->label, sizeof a->label, "%s %g -> %g", key, u, nu);
    snprintf(a->change, sizeof a->change, "%s=%g", key_of(id), nu);
  }
}

static void advise_seqs(kvsim_diagnosis_t *d, const kvsim_summary_t *s, int64_t n) {
  int64_t cur = s->plan.p.max_num_seqs;
  if (n < 1 || n == cur)
    return;
  kvsim_advice_t *a = kvsim__diag_advise(d, KVSIM_ADVICE_MAX_NUM_SEQS, (double)n);
  if (a) {
    snprintf(a->label, sizeof a->label, "max_num_seqs %lld -> %lld", (long long)cur, (long long)n);
    snprintf(a->change, sizeof a->change, "%s=%lld", key_of(KVSIM_PARAM_MAX_NUM_SEQS),
             (long long)n);
  }
}

/* A lower cap on the batch: half the sequences the run kept running. */
static void advise_fewer_seqs(kvsim_diagnosis_t *d, const kvsim_summary_t *s) {
  int64_t n = (int64_t)floor(s->running_mean / 2);
  if (n >= 1 && n < s->plan.p.max_num_seqs)
    advise_seqs(d, s, n);
}

/* The next faster GPU of the catalog: same vendor, more dense BF16 FLOPs
 * and more HBM bandwidth (prefill is FLOP-bound, decode bandwidth-bound),
 * at least 95% of the memory (the plan must still fit); of those the
 * smallest step up in FLOPs (ties: bandwidth, then name). */
static bool faster_gpu(const kvsim_gpu_t *cur, char *out, size_t cap) {
  kvsim_gpu_t best = {0}, g;
  bool found = false;
  for (const kvsim__catalog_entry *e = kvsim__catalog; e->kind; e++) {
    kvsim_err err = {0};
    if (e->kind != KVSIM_CATALOG_GPU || kvsim_gpu_load(e->name, &g, &err) < 0)
      continue;
    if (strcmp(g.vendor, cur->vendor) || g.bf16_tflops <= cur->bf16_tflops ||
        g.hbm_bandwidth_GBps <= cur->hbm_bandwidth_GBps ||
        (double)g.memory_total_bytes < 0.95 * (double)cur->memory_total_bytes)
      continue;
    bool better = !found || g.bf16_tflops < best.bf16_tflops ||
                  (g.bf16_tflops == best.bf16_tflops &&
                   (g.hbm_bandwidth_GBps < best.hbm_bandwidth_GBps ||
                    (g.hbm_bandwidth_GBps == best.hbm_bandwidth_GBps && strcmp(g.name, best.name) < 0)));
    if (better) {
      best = g;
      found = true;
    }
  }
  if (found)
    snprintf(out, cap, "%s", best.name);
  return found;
}

static void advise_gpu(kvsim_diagnosis_t *d, const kvsim__diag_input_t *in) {
  char name[64];
  if (!in->gpu || !faster_gpu(in->gpu, name, sizeof name))
    return;
  kvsim_advice_t *a = kvsim__diag_advise(d, KVSIM_ADVICE_GPU, 0);
  if (a) {
    snprintf(a->gpu, sizeof a->gpu, "%s", name);
    snprintf(a->label, sizeof a->label, "faster GPU (%s -> %s)", in->gpu->name, name);
    snprintf(a->change, sizeof a->change, "%s=%s", key_of(KVSIM_PARAM_GPU), name);
  }
}

/* Mean step time over the weight-read floor: a decode step streams the
 * rank's weights at least once, so a step near the floor is dominated by
 * the weights (a bigger batch rides along almost free: more KV would buy
 * throughput), and a step many times the floor is dominated by the
 * batch's own work (prefill FLOPs, attention, KV reads: a bigger batch
 * makes steps proportionally longer). 0 when unknown. */
static double step_floor_ratio(const kvsim__diag_input_t *in, const kvsim_summary_t *s) {
  if (s->steps <= 0 || in->hbm_GBps <= 0 || s->plan.weights_bytes <= 0)
    return 0;
  double step = s->busy_s / (double)s->steps;
  double floor_s = (double)s->plan.weights_bytes / (in->hbm_GBps * 1e9);
  return step / floor_s;
}

/* Served below offered with a queue that grows: the replicas do not keep
 * up. Compute-bound when the pool is not the limit: not full, or full
 * only because batch work dominates every step (a larger pool would make a
 * larger batch with longer steps, not a higher rate). */
static bool overloaded(const kvsim__diag_input_t *in, const kvsim_summary_t *s) {
  return in->offered_rate > 0 && s->requests_per_s < KVSIM__DIAG_OVERLOAD_SERVED * in->offered_rate &&
         s->queue.p99 > KVSIM__DIAG_OVERLOAD_QUEUE_S && s->waiting_mean >= 1;
}

/* Not when max_num_seqs caps the batch (max_num_seqs_bound says so): the
 * GPU would take more sequences. */
static bool compute_bound(const kvsim__diag_input_t *in, const kvsim_summary_t *s) {
  return overloaded(in, s) && in->frac_seq_bound <= 0.2 &&
         (in->frac_kv_full <= KVSIM__DIAG_KV_FULL_FRAC ||
          step_floor_ratio(in, s) >= KVSIM__DIAG_STEP_FLOOR_RATIO);
}

static bool frequent_preemption(const kvsim_summary_t *s) {
  int64_t served = s->requests_finished + s->requests_rejected;
  /* More than one preemption per 20 requests. vLLM logs each preemption
   * as a warning (V0: vllm/core/scheduler.py, Scheduler._preempt, "not
   * enough KV cache space"), and its Optimization and Tuning guide
   * ("Preemption") advises the changes this rule tries: a higher
   * gpu_memory_utilization, a lower max_num_seqs, more GPUs. */
  return served > 0 && s->preemptions * 20 > served;
}

/* Overloaded with the TP all-reduce taking a third or more of a mean
 * step: the link, not the GPU's arithmetic, sets the step, and each
 * doubling of TP adds communication while halving the compute. The share
 * comes from the GPU's measured all-reduce at this TP size (its kernel
 * tables), which on a PCIe machine falls far below the link's spec as the
 * ranks grow. */
static bool comm_bound(const kvsim__diag_input_t *in, const kvsim_summary_t *s) {
  return overloaded(in, s) && s->plan.p.tp > 1 && in->comm_share >= KVSIM__DIAG_COMM_SHARE;
}

static void rule_tp_communication(const kvsim__diag_input_t *in, kvsim_summary_t *s) {
  if (!comm_bound(in, s))
    return;
  kvsim_diagnosis_t *d =
      kvsim__diag_add(s, "tp_communication", "warning",
          "tensor-parallel communication bound: the all-reduce takes %.0f%% of a mean step at TP %d "
          "on this GPU's interconnect (served %.2f of %.2f offered req/s). Serve with fewer ranks "
          "per replica and more replicas, or use a GPU with a faster link; more tensor parallelism "
          "would lengthen the steps.",
          100 * in->comm_share, s->plan.p.tp, s->requests_per_s, in->offered_rate);
  advise_tp(d, s, true);
  advise_replicas_for(d, s, in->offered_rate);
}

static void rule_compute_bound(const kvsim__diag_input_t *in, kvsim_summary_t *s) {
  if (!compute_bound(in, s))
    return;
  double r = step_floor_ratio(in, s);
  char step[160] = "";
  if (r > 0)
    snprintf(step, sizeof step, " (mean step %.0f ms, %.0fx the %.0f ms weight-read floor)",
             1e3 * s->busy_s / (double)s->steps, r,
             1e3 * (double)s->plan.weights_bytes / (in->hbm_GBps * 1e9));
  const bool comm = comm_bound(in, s);
  kvsim_diagnosis_t *d =
      kvsim__diag_add(s, "compute_bound", "warning",
          "compute-bound overload: served %.2f of %.2f offered req/s with %.0f requests waiting on "
          "average (p99 queueing %.1f s) while the KV cache was full in %.0f%% of samples: the GPUs "
          "cannot keep up%s. Add replicas%s, or use a faster GPU; more KV memory would not raise the "
          "rate.",
          s->requests_per_s, in->offered_rate, s->waiting_mean, s->queue.p99, 100 * in->frac_kv_full,
          step, comm ? "" : " or tensor parallelism");
  advise_replicas_for(d, s, in->offered_rate);
  if (!comm) /* tp_communication advises fewer ranks instead */
    advise_tp(d, s, false);
  advise_gpu(d, in);
  /* The pool was full too: FP8 KV is the change a KV-bound reading would
   * advise, tried so the run shows what it buys here. */
  if (in->frac_kv_full > KVSIM__DIAG_KV_FULL_FRAC)
    kvsim__diag_advise_fp8(d, s);
}

static void rule_preemption(kvsim_summary_t *s) {
  if (!frequent_preemption(s))
    return;
  kvsim_diagnosis_t *d = kvsim__diag_add(
      s, "frequent_preemption", "warning",
      "%lld preemptions for %lld requests (%lld requests preempted): the KV pool (%lld blocks "
      "per replica) is too small for the batch. Raise gpu_memory_utilization, use "
      "kv_cache_dtype fp8, lower max_num_seqs, or add GPUs (tensor_parallel_size).",
      (long long)s->preemptions, (long long)(s->requests_finished + s->requests_rejected),
      (long long)s->requests_preempted, (long long)s->pool_usable_blocks);
  kvsim__diag_advise_fp8(d, s);
  advise_util(d, s);
  advise_fewer_seqs(d, s);
}

/* KV-bound only when the pool is full and that is what limits: requests
 * wait for blocks or are preempted, and the steps are not already
 * dominated by batch work (then compute_bound says so). */
static void rule_kv_bound(const kvsim__diag_input_t *in, kvsim_summary_t *s) {
  if (in->frac_kv_full <= KVSIM__DIAG_KV_FULL_FRAC || compute_bound(in, s))
    return;
  if (!frequent_preemption(s) && s->waiting_mean < 1)
    return;
  kvsim_diagnosis_t *d = kvsim__diag_add(
      s, "kv_bound", "warning",
      "KV cache full with requests waiting in %.0f%% of samples (%.1f waiting on average, %lld "
      "preemptions): memory, not compute, limits the batch. FP8 KV doubles the pool; a higher "
      "gpu_memory_utilization or more replicas add to it.",
      100 * in->frac_kv_full, s->waiting_mean, (long long)s->preemptions);
  kvsim__diag_advise_fp8(d, s);
  advise_util(d, s);
  advise_replica(d, s);
}

static void rule_seq_bound(const kvsim__diag_input_t *in, kvsim_summary_t *s) {
  if (in->frac_seq_bound <= 0.2 || s->waiting_mean <= 1)
    return;
  kvsim_diagnosis_t *d = kvsim__diag_add(
      s, "max_num_seqs_bound", "info",
      "max_num_seqs (%lld) reached in %.0f%% of samples with %.1f requests waiting on average: "
      "raise max_num_seqs if the KV cache has room (usage mean %.0f%%).",
      (long long)s->plan.p.max_num_seqs, 100 * in->frac_seq_bound, s->waiting_mean,
      100 * s->kv_usage_mean);
  if (s->kv_usage_mean < 0.9)
    advise_seqs(d, s, 2 * s->plan.p.max_num_seqs);
}

static void rule_long_tail(kvsim_summary_t *s) {
  double p50 = s->ttft.p50, p99 = s->ttft.p99;
  if (!(p50 > 0 && p99 > 10 * p50 && p99 > 1.0))
    return;
  kvsim_diagnosis_t *d = kvsim__diag_add(
      s, "long_tail_latency", "warning",
      "long tail: p99 TTFT %.2f s is %.0fx the median %.2f s; requests queue behind a full "
      "batch. Fewer concurrent sequences per replica, more replicas, or admission control cut "
      "the tail.",
      p99, p99 / p50, p50);
  advise_fewer_seqs(d, s);
  advise_replica(d, s);
}

static void rule_prefix(kvsim_summary_t *s) {
  if (!(s->prefix_caching && s->prefix_queries > 0 && s->prefix_hits * 20 < s->prefix_queries))
    return;
  kvsim__diag_add(
      s, "low_prefix_hit_rate", "info",
      "prefix cache hit rate %.1f%%: this traffic shares little prefix (or the cache evicts it "
      "before reuse); caching costs nothing here but buys little.",
      100.0 * (double)s->prefix_hits / (double)s->prefix_queries);
}

static void rule_rejections(const kvsim__diag_input_t *in, kvsim_summary_t *s) {
  if (s->requests_rejected <= 0)
    return;
  int64_t mml = s->plan.p.max_model_len;
  kvsim_diagnosis_t *d = kvsim__diag_add(
      s, "rejected_requests", "warning",
      "%lld requests rejected (%lld too long for max_model_len %lld, %lld by admission control, "
      "%lld larger than the KV pool).",
      (long long)s->requests_rejected, (long long)in->rejected_too_long, (long long)mml,
      (long long)in->rejected_admission, (long long)in->rejected_no_fit);
  /* Twice the context when the plan has room for it (max_model_len_fit:
   * the largest that fits, as vLLM's start-up check computes it). */
  if (in->rejected_too_long > 0 && 2 * mml <= s->plan.max_model_len_fit) {
    kvsim_advice_t *a = kvsim__diag_advise(d, KVSIM_ADVICE_MAX_MODEL_LEN, (double)(2 * mml));
    if (a) {
      snprintf(a->label, sizeof a->label, "max_model_len %lld -> %lld", (long long)mml,
               (long long)(2 * mml));
      snprintf(a->change, sizeof a->change, "%s=%lld", key_of(KVSIM_PARAM_MAX_MODEL_LEN),
               (long long)(2 * mml));
    }
  }
}

void kvsim__diagnose(const kvsim__diag_input_t *in, kvsim_summary_t *s) {
  rule_tp_communication(in, s);
  rule_compute_bound(in, s);
  rule_preemption(s);
  rule_kv_bound(in, s);
  rule_seq_bound(in, s);
  rule_long_tail(s);
  rule_prefix(s);
  rule_rejections(in, s);
}

void kvsim__diagnose_calibration(const kvsim_calibration_t *cal, kvsim_summary_t *out) {
  if (cal->status == KVSIM_CAL_KERNELS)
    return;
  char from[96] = "";
  if (cal->borrowed_from[0])
    snprintf(from, sizeof from, " (those of %s, scaled by spec figures)", cal->borrowed_from);
  kvsim__diag_add(
      out, "uncalibrated_gpu", cal->status == KVSIM_CAL_SPEC_ONLY ? "warning" : "info",
      "%s has no measured kernel tables of its own: its step times are %s%s, so its band is "
      "+/-%.0f%% TTFT and +/-%.0f%% TPOT on step time, at least a GPU with its own tables; kernel "
      "tables of this GPU (configs/kernels) would narrow it.",
      cal->gpu, kvsim_cal_status_name(cal->status), from, 100 * cal->band_ttft_rel,
      100 * cal->band_tpot_rel);
}
