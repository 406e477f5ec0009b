/* The typed summary of a run: what summary.json says, as a struct. The run
 * output builds it at the end of a run (run_output.h); summary.json is
 * printed from it, and plan, sweep and the studies read it in memory.
 *
 * A summary is plain data (no pointers): it can be copied with `=`, kept
 * after the run's scenario is gone, and sent between processes as bytes
 * (the parallel runner does, study.h). Latencies and ratios hold the values
 * summary.json prints (rounded as it rounds them), so a table made from the
 * struct and one made from the file agree digit for digit. */
#ifndef KVSIM_SUMMARY_H
#define KVSIM_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include <cJSON.h>

#include "kvsim/engine.h"
#include "kvsim/plan.h"
#include "kvsim/scenario.h"
#include "kvsim/steady.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVSIM_SUMMARY_MAX_REASONS 16    /* distinct rejection reasons kept */
#define KVSIM_SUMMARY_MAX_PRIORITIES 8  /* priority levels reported separately */
#define KVSIM_SUMMARY_MAX_DIAGNOSES 8   /* diagnosis rules (report/diagnosis.c) */
/* Replicas listed one by one in the cluster summary (the first ones). */
#define KVSIM_SUMMARY_MAX_REPLICAS KVSIM_RUN_MAX_REPLICA_STATS

/* One replica's row of the cluster summary. */
typedef struct kvsim_replica_summary {
  int64_t requests;         /* routed to this replica */
  double request_share;     /* of all requests routed */
  double kv_usage_peak;
  int64_t prefix_queries, prefix_hits; /* tokens */
  double prefix_hit_rate;
} kvsim_replica_summary_t;

/* One latency distribution, in seconds rounded to the nanosecond. With
 * count 0 (no request finished; for TPOT also when no request had a
 * second token) every statistic is NAN, null in summary.json. */
typedef struct kvsim_latency {
  int64_t count;
  double mean, p50, p90, p99, max;
} kvsim_latency_t;

/* [lo, hi] of one figure over the nominal run and the runs at the band's
 * two edges (study.h kvsim_study_run_band): the min and the max of the
 * three, not the two edges alone, because queueing is not monotone in the
 * step time in general (a slower step can batch more and preempt less). */
typedef struct kvsim_range {
  double lo, hi;
} kvsim_range_t;

/* Raises r's top to at least nominal / (1 - rel): a latency's range holds
 * every measured figure the simulated one is within the held-out error
 * band of (|sim - measured| / measured <= rel, so measured <= sim / (1 -
 * rel)) even where the edge runs move it less (a TTFT's unscaled parts,
 * the benchmark client's latency and the decode steps between prefills,
 * damp the prefill scale). Only the top: a bottom below the edge runs
 * could pass what the GPU can do (they hold the step's roofline). A band
 * of 1 or more has no top; nothing for an empty range or a NAN nominal. */
static inline void kvsim_range_hold_band(kvsim_range_t *r, double nominal, double rel) {
  if (r->lo != r->lo || nominal != nominal || !(rel > 0))
    return;
  /* To the nanosecond, as every latency of the summary. */
  const double top = rel < 1 ? round(nominal / (1 - rel) * 1e9) / 1e9 : (double)INFINITY;
  if (top > r->hi)
    r->hi = top;
}

/* The ranges of one latency distribution's statistics. */
typedef struct kvsim_latency_range {
  kvsim_range_t mean, p50, p90, p99, max;
} kvsim_latency_range_t;

/* What the GPU's step times rest on (latency.calibration), and the
 * band's half-widths on step time (gpu.h kvsim_gpu_band). */
typedef struct kvsim_calibration {
  char gpu[64];
  kvsim_cal_status status;
  char kernels[64];       /* the kernel profile (perf.kernels) */
  char source[256];       /* perf.source */
  char borrowed_from[64]; /* the GPU whose tables it borrows; "" for its own */
  double band_ttft_rel, band_tpot_rel;
  bool moe;               /* a MoE model: the MoE band (gpu.h kvsim_gpu_band_moe) */
} kvsim_calibration_t;

/* The statistic of a latency picked by a name ("p99", "mean", ...). */
typedef enum { KVSIM_STAT_MEAN = 0, KVSIM_STAT_P50, KVSIM_STAT_P90, KVSIM_STAT_P99 } kvsim_stat;
typedef enum { KVSIM_METRIC_TTFT = 0, KVSIM_METRIC_TPOT, KVSIM_METRIC_E2E, KVSIM_METRIC_QUEUE } kvsim_metric;

/* One SLO target of the scenario and what the run reached (p99). With no
 * sample of the metric actual is NAN (null) and reason says why
 * (summary.json's "reason"; "" otherwise): "no request finished" (not
 * met: the run served nothing) or, for TPOT, "no request had a second
 * token" (met: every finished request had one output token, none missed). */
typedef struct kvsim_slo_result {
  bool given;        /* the scenario sets this target */
  double target, actual;
  bool met;
  char reason[32];
} kvsim_slo_result_t;

/* One change a diagnosis advises, as a typed override of the scenario
 * (kvsim_scenario_set_*), and what re-running the scenario with it gave
 * (kvsim_study_verify_advice, study.h). */
typedef enum kvsim_advice_kind {
  KVSIM_ADVICE_KV_FP8 = 0,       /* engine.kv_cache_dtype = fp8 */
  KVSIM_ADVICE_REPLICAS,         /* hardware.replicas = value */
  KVSIM_ADVICE_TP,               /* hardware.tensor_parallel_size = value */
  KVSIM_ADVICE_UTILIZATION,      /* engine.gpu_memory_utilization = value */
  KVSIM_ADVICE_MAX_NUM_SEQS,     /* engine.max_num_seqs = value (lower or higher) */
  KVSIM_ADVICE_MAX_MODEL_LEN,    /* engine.max_model_len = value */
  KVSIM_ADVICE_GPU,              /* hardware.gpu = gpu (a catalog name) */
  KVSIM_ADVICE_PREFILL_REPLICAS, /* disaggregation.prefill.replicas = value (all units) */
  KVSIM_ADVICE_DECODE_REPLICAS,  /* disaggregation.decode.replicas = value (all units) */
} kvsim_advice_kind;

#define KVSIM_DIAGNOSIS_MAX_ADVICE 4

typedef struct kvsim_advice {
  kvsim_advice_kind kind;
  double value;        /* the new setting (unused for KV_FP8 and GPU) */
  char gpu[64];        /* KVSIM_ADVICE_GPU: the catalog GPU to try */
  char label[64];      /* "FP8 KV", "one more replica (1 -> 2)" */
  char change[64];     /* the --set that reproduces it: "hardware.replicas=2" */
  /* Filled when the change was run (tried). rc: KVSIM_OK, KVSIM_ENOFIT
   * (the changed plan does not fit) or the run's error, in note. */
  bool tried;
  int rc;
  double ttft_p99_s, tpot_p99_s, requests_per_s;
  int64_t preemptions, rejected;
  bool slo_given, slo_met;
  char verdict[24]; /* "meets the SLO", "not enough", "helps", "no better", "worse", "cannot tell"
                       (a side finished nothing), "does not fit", "failed" */
  char note[200];
} kvsim_advice_t;

/* One finding of the diagnosis (the seeds' troubleshooting table). */
typedef struct kvsim_diagnosis {
  char code[40];     /* "frequent_preemption", "kv_bound", ... */
  char severity[16]; /* "warning" or "info" */
  char message[1024];
  kvsim_advice_t advice[KVSIM_DIAGNOSIS_MAX_ADVICE];
  int nadvice;
  /* The measured effect of each tried change in one line ("FP8 KV: p99
   * TTFT 191 s -> 161 s, not enough; ..."; the targets still missed are
   * each advice's `note`); "" until verified. */
  char verified[768];
} kvsim_diagnosis_t;

typedef struct kvsim_summary {
  char name[128];
  uint64_t seed;
  /* The memory plan the run used (keys of `kvsim calc --json`). */
  kvsim_plan_t plan;
  int64_t pool_usable_blocks;

  /* Requests. */
  int64_t requests_total, requests_finished, requests_rejected;
  /* Of the rejected: longer than max_model_len, and needing more KV
   * blocks than one replica's pool holds (whatever the load). */
  int64_t rejected_too_long, rejected_no_fit;
  int64_t running_at_end, waiting_at_end, skipped_rows;
  struct {
    char why[96];
    int64_t n;
  } rejected_reasons[KVSIM_SUMMARY_MAX_REASONS];
  int nreasons;

  double simulated_time_s, makespan_s;
  double requests_per_s, output_tokens_per_s, prompt_tokens_per_s, total_tokens_per_s;

  /* Latency of the requests in the steady window (steady; kvsim/steady.h):
   * ttft, tpot, e2e, queue, by_priority and the SLO below. all_* are the
   * untrimmed figures of every finished request, for comparison. */
  kvsim_steady_t steady;
  kvsim_latency_t all_ttft, all_tpot, all_e2e;
  /* Latency. by_priority is filled, lowest priority value first, when the
   * run saw more than one priority. */
  kvsim_latency_t ttft, tpot, e2e, queue;
  struct {
    int32_t priority;
    kvsim_latency_t ttft, e2e;
  } by_priority[KVSIM_SUMMARY_MAX_PRIORITIES];
  int npriorities;
  bool percentiles_exact;   /* false: log histogram of 0.1 % resolution */
  kvsim_calibration_t calibration;
  /* latency.uncertainty: the +/- half-width of each p99. With ranges, the
   * larger distance from the nominal p99 to an end of its range; without,
   * the band's relative half-width (on step time) times the p99, which
   * leaves queueing out. Always set (has_uncertainty true) since every GPU
   * has a band. */
  bool has_uncertainty;
  double uncertainty_ttft_p99_s, uncertainty_tpot_p99_s, uncertainty_e2e_p99_s;
  char uncertainty_source[384];

  /* The band through the queue: filled (has_ranges) when the scenario was
   * also run with step times at the band's edges (study.h); every
   * `<stat>_range` of summary.json comes from these. */
  bool has_ranges;
  double band_scale_lo, band_scale_hi; /* perf.step_time_scale factors of the edge runs */
  double band_prefill_scale_lo, band_prefill_scale_hi; /* and their perf.prefill_time_scale */
  kvsim_latency_range_t ttft_range, tpot_range, e2e_range, queue_range;
  kvsim_range_t requests_per_s_range, output_tokens_per_s_range, prompt_tokens_per_s_range,
      total_tokens_per_s_range;
  kvsim_range_t kv_usage_peak_range, preemptions_range, requests_preempted_range;
  kvsim_range_t rejected_range, slo_attainment_range;

  /* KV cache. */
  double kv_usage_peak, kv_usage_mean, running_mean, waiting_mean;
  int64_t evictions;
  double kv_allocated_token_fraction, kv_reserved_unused_bytes_mean, kv_internal_frag_bytes_mean;

  int64_t preemptions, requests_preempted;
  /* SGLang's preemptions are retractions (kind "retraction", and their own
   * "retractions" section with the engine's num_retractions). */
  bool preemptions_are_retractions;
  /* Speculative decoding (spec_method "" without): k, drafts verified and
   * accepted, and their ratio (vLLM's "Draft acceptance rate"). */
  char spec_method[16];
  int spec_tokens;
  int64_t spec_drafts, spec_accepted;
  /* LoRA (max_loras 0 without): the slots, the host cache, the requests
   * that named an adapter, adapter loads into GPU slots and host-cache
   * misses (read from disk), and the seconds of loads and kernels. */
  int32_t lora_max_loras, lora_max_cpu_loras, lora_rank;
  int64_t lora_requests, lora_loads, lora_cpu_misses, lora_skips;
  double lora_load_s, lora_kernel_s;

  /* Prefix cache (tokens). */
  bool prefix_caching;
  int64_t prefix_queries, prefix_hits, prompt_tokens_cached, prefix_isolation_lost;
  int64_t prefix_preempted_queries, prefix_preempted_hits;
  double prefix_hit_rate, prompt_tokens_cached_fraction, prefix_hit_rate_without_isolation;

  /* CPU tier (swap space or the offloading connector); has_cpu_tier false
   * when the scenario has none. */
  bool has_cpu_tier, cpu_offload, transfers_overlap;
  int64_t cpu_bytes_to_cpu, cpu_bytes_to_gpu, cpu_blocks_stored, cpu_evictions;
  int64_t ext_prefix_queries, ext_prefix_hits;
  double cpu_transfer_s, transfer_wait_s;

  /* SLO attainment: the fraction of requests that finished within every
   * per-request target (rejected ones miss). */
  kvsim_slo_result_t slo_ttft_p99, slo_tpot_p99, slo_e2e_p99;
  double slo_attainment;

  int64_t steps;
  int64_t sequence_steps; /* rows over all steps (the --bench line; not in summary.json) */
  double busy_s;

  kvsim_diagnosis_t diagnosis[KVSIM_SUMMARY_MAX_DIAGNOSES];
  int ndiagnosis;

  /* Cluster: filled (and "cluster" printed) only when replicas > 1.
   * Rows for the first KVSIM_SUMMARY_MAX_REPLICAS replicas (nreplica_rows);
   * the prefix_affinity counts are 0 for the other routers. */
  int32_t replicas;
  char router[24];
  int64_t router_affinity, router_fallbacks, router_no_identity;
  kvsim_replica_summary_t per_replica[KVSIM_SUMMARY_MAX_REPLICAS];
  int32_t nreplica_rows;

  /* A disaggregated run ("disaggregation" printed only then): the flow,
   * the link, each side's pool and the hand-off's figures. Replicas above
   * are the prefill instances then the decode instances. */
  bool disaggregated;
  kvsim_disagg_cfg_t disagg_cfg;
  kvsim_disagg_stats_t disagg;
  int64_t prefill_kv_cache_tokens, decode_kv_cache_tokens;
  int64_t prefill_per_token_kv_bytes; /* one rank's */
  int32_t prefill_tp, decode_tp;
} kvsim_summary_t;

/* The distribution of `m` in s (never NULL). */
const kvsim_latency_t *kvsim_summary_latency(const kvsim_summary_t *s, kvsim_metric m);
/* One statistic of a latency. */
double kvsim_latency_stat(const kvsim_latency_t *l, kvsim_stat st);

/* "ttft" / "tpot" / "e2e" / "queue" and "mean" / "p50" / "p90" / "p99" to
 * their enums: 0, or KVSIM_EINVAL when the name is unknown. */
int kvsim_metric_parse(const char *name, kvsim_metric *out);
int kvsim_stat_parse(const char *name, kvsim_stat *out);

/* Fills the cluster fields of s (replicas, router, per-replica rows) from a
 * run's totals; with one replica only s->replicas is set and nothing is
 * printed. Ratios are rounded as summary.json prints them (1e-6). */
void kvsim_summary_set_cluster(kvsim_summary_t *s, const kvsim_run_stats_t *st);

/* Fills the calibration fields of s from the GPU (its name, perf.status,
 * perf.kernels, perf.source, kvsim_gpu_band, and the GPU whose tables it
 * borrows) and latency.uncertainty from
 * the band alone (no ranges yet). */
void kvsim_summary_set_calibration(kvsim_summary_t *s, const kvsim_gpu_t *gpu, bool moe);

/* The least top of an E2E range: its TTFT part t held by the TTFT band,
 * the rest (e2e - t, the decode) by the TPOT band (kvsim_range_hold_band's
 * rule on each part), to the nanosecond. Both bands below 1. */
static inline double kvsim_e2e_band_top(double ttft, double e2e, double ttft_rel, double tpot_rel) {
  const double decode = e2e > ttft ? e2e - ttft : 0;
  return round((ttft / (1 - ttft_rel) + decode / (1 - tpot_rel)) * 1e9) / 1e9;
}

/* Merges the summaries of the same scenario run with step times at the
 * band's edges (lo, hi) into s: each range is the min and max over s
 * itself and edges[0..n), so it always holds the nominal value; the tops
 * of the TTFT and TPOT ranges at least the calibration's band above the
 * nominal figure (kvsim_range_hold_band); latency.uncertainty is
 * re-derived from the p99 ranges. */
void kvsim_summary_merge_ranges(kvsim_summary_t *s, const kvsim_summary_t *edges, int n,
                                const kvsim_band_edge_t *lo, const kvsim_band_edge_t *hi);

/* The run line of `kvsim run` (no newline) into buf[cap]: where the
 * results are (dir) and the headline figures, each with its range when
 * the band was run (or the p99 TTFT's +/- when not), and a word naming
 * the coefficients when the GPU's are not its own fit. */
void kvsim_summary_run_line(const kvsim_summary_t *s, const char *dir, char *buf, size_t cap);
/* When the run's steady window is too short (kvsim/steady.h), the warning
 * line `kvsim run` prints on stderr ("warning: ...") into buf, and true;
 * false (buf "") otherwise. */
bool kvsim_summary_steady_warning(const kvsim_summary_t *s, char *buf, size_t cap);

/* summary.json as a cJSON tree (the caller deletes it). The scenario gives
 * the resolved configuration ("config", "workload_resolved") and the model
 * and GPU of the memory plan; everything else comes from s. Returns NULL
 * when out of memory. */
cJSON *kvsim_summary_json(const kvsim_summary_t *s, const kvsim_scenario_t *sc);

#ifdef __cplusplus
}
#endif

#endif
