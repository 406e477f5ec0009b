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
#include <stdint.h>

#include <cJSON.h>

#include "kvsim/engine.h"
#include "kvsim/plan.h"
#include "kvsim/scenario.h"

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

/* One latency distribution, in seconds rounded to the nanosecond. */
typedef struct kvsim_latency {
  int64_t count;
  double mean, p50, p90, p99, max;
} kvsim_latency_t;

/* The statistic of a latency picked by a name ("p99", "mean", ...). */
typedef enum { KVSIM_STAT_MEAN = 0, KVSIM_STAT_P50, KVSIM_STAT_P90, KVSIM_STAT_P99 } kvsim_stat;
typedef enum { KVSIM_METRIC_TTFT = 0, KVSIM_METRIC_TPOT, KVSIM_METRIC_E2E, KVSIM_METRIC_QUEUE } kvsim_metric;

/* One SLO target of the scenario and what the run reached (p99). */
typedef struct kvsim_slo_result {
  bool given;        /* the scenario sets this target */
  double target, actual;
  bool met;
} kvsim_slo_result_t;

/* One finding of the diagnosis (the seeds' troubleshooting table). */
typedef struct kvsim_diagnosis {
  char code[40];     /* "frequent_preemption", "kv_bound", ... */
  char severity[16]; /* "warning" or "info" */
  char message[512];
} kvsim_diagnosis_t;

typedef struct kvsim_summary {
  char name[128];
  uint64_t seed;
  /* The memory plan the run used (keys of `kvsim calc --json`). */
  kvsim_plan_t plan;
  int64_t pool_usable_blocks;

  /* Requests. */
  int64_t requests_total, requests_finished, requests_rejected;
  int64_t running_at_end, waiting_at_end, skipped_rows;
  struct {
    char why[96];
    int64_t n;
  } rejected_reasons[KVSIM_SUMMARY_MAX_REASONS];
  int nreasons;

  double simulated_time_s, makespan_s;
  double requests_per_s, output_tokens_per_s, prompt_tokens_per_s, total_tokens_per_s;

  /* Latency. by_priority is filled, lowest priority value first, when the
   * run saw more than one priority. */
  kvsim_latency_t ttft, tpot, e2e, queue;
  struct {
    int32_t priority;
    kvsim_latency_t ttft, e2e;
  } by_priority[KVSIM_SUMMARY_MAX_PRIORITIES];
  int npriorities;
  bool percentiles_exact;   /* false: log histogram of 0.1 % resolution */
  /* The +/- band from the GPU's calibration residuals (gpu.h). */
  bool has_uncertainty;
  double uncertainty_ttft_p99_s, uncertainty_tpot_p99_s, uncertainty_e2e_p99_s;
  char uncertainty_source[256];

  /* KV cache. */
  double kv_usage_peak, kv_usage_mean, running_mean, waiting_mean;
  int64_t evictions;
  double kv_allocated_token_fraction, kv_reserved_unused_bytes_mean, kv_internal_frag_bytes_mean;

  int64_t preemptions, requests_preempted;
  /* SGLang's preemptions are retractions (kind "retraction", and their own
   * "retractions" section with the engine's num_retractions). */
  bool preemptions_are_retractions;

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

/* summary.json as a cJSON tree (the caller deletes it). The scenario gives
 * the resolved configuration ("config", "workload_resolved") and the model
 * and GPU of the memory plan; everything else comes from s. Returns NULL
 * when out of memory. */
cJSON *kvsim_summary_json(const kvsim_summary_t *s, const kvsim_scenario_t *sc);

#endif
