/* The run: one or more replicas (serving instances) behind a router,
 * driven by one event loop over simulated time. Data flows one way:
 * scenario + workload -> replicas -> event loop -> sink. The loop knows
 * nothing of vLLM (that is the scheduler's) nor of files (the sink's). */
#ifndef KVSIM_ENGINE_H
#define KVSIM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "kvsim/clock.h"
#include "kvsim/error.h"
#include "kvsim/perf.h"
#include "kvsim/plan.h"
#include "kvsim/request.h"
#include "kvsim/scenario.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One time-series row (timeseries.csv, docs/scenario.md "Outputs"). */
typedef struct kvsim_sample {
  kvsim_time_ns time;
  int32_t replica;
  double kv_cache_usage;        /* fraction, like vllm:kv_cache_usage_perc */
  int64_t kv_blocks_used, kv_blocks_cached, kv_blocks_free;
  int64_t num_requests_running, num_requests_waiting, num_requests_swapped;
  int64_t num_preemptions_total;
  int64_t prefix_cache_queries_total, prefix_cache_hits_total;
  int64_t prompt_tokens_total, generation_tokens_total;
  double cpu_kv_cache_usage;
  int64_t kv_token_bytes;       /* bytes holding real tokens */
  int64_t kv_allocated_bytes;   /* bytes allocated to requests (blocks or reservations) */
  int64_t kv_reserved_unused_bytes; /* allocated beyond the blocks the tokens need */
  int64_t kv_internal_frag_bytes;   /* unused tail of each request's last block */
} kvsim_sample_t;

/* Sampling ticks (output.sample_interval_s) write one row per replica.
 * While no step is in flight nothing changes until the next event, and a
 * stretch of more than KVSIM_IDLE_TICKS_MAX such ticks (a trace with an
 * idle gap of hours) writes only its first and last rows; the ticks in
 * between still count in the means of the summary. Shorter stretches are
 * sampled at every tick. */
#define KVSIM_IDLE_TICKS_MAX 1000

/* Where the run's records go. Return a negative code to abort the run. */
typedef struct kvsim_sink {
  void *ctx;
  int (*sample)(void *ctx, const kvsim_sample_t *s);
  /* A request left the system: finished, rejected, or still in flight
   * when the run stopped (status RUNNING/WAITING/SWAPPED). */
  int (*request)(void *ctx, const kvsim_request_t *r);
  /* Progress, called every few thousand events (may be NULL). */
  void (*progress)(void *ctx, kvsim_time_ns now, int64_t done, int64_t in_flight);
  /* A disaggregated run's hand-off row every sampling tick (may be NULL). */
  int (*disagg_sample)(void *ctx, const kvsim_disagg_sample_t *s);
} kvsim_sink_t;

/* Replicas whose own figures a run keeps (kvsim_run_stats_t.replica): the
 * first ones of a larger cluster. A fixed bound keeps the stats and the
 * summary plain data (summary.h). */
#define KVSIM_RUN_MAX_REPLICA_STATS 64

/* One replica's share of a run. */
typedef struct kvsim_replica_stats {
  int64_t requests;               /* requests the router sent to it */
  double kv_usage_peak;
  int64_t prefix_queries, prefix_hits; /* tokens, like the run's */
} kvsim_replica_stats_t;

/* Totals of a run (per replica sums; percentiles are the sink's). */
typedef struct kvsim_run_stats {
  kvsim_resolved_t resolved;      /* the configuration the run used (scenario.h) */
  kvsim_plan_t plan;              /* = resolved.plan */
  int64_t pool_blocks;            /* usable blocks per replica (= resolved.pool_usable) */
  int64_t requests_arrived, requests_finished, requests_rejected, requests_in_flight;
  int64_t rejected_too_long, rejected_admission, rejected_no_fit;
  int64_t preemptions, requests_preempted;
  /* Speculative decoding: drafts verified and accepted (vLLM's
   * spec_decode_num_draft_tokens / num_accepted_tokens). */
  int64_t spec_drafts, spec_accepted;
  /* LoRA: requests naming an adapter, adapters copied into GPU slots, of
   * which read from disk first, and the time of the loads and kernels. */
  int64_t lora_requests, lora_loads, lora_cpu_misses, lora_skips;
  double lora_load_s, lora_kernel_s;
  int64_t prefix_queries, prefix_hits, prefix_preempted_queries, prefix_preempted_hits;
  int64_t prefix_isolation_lost;
  int64_t prompt_tokens, generation_tokens, cached_tokens;
  int64_t steps;
  int64_t sequence_steps;         /* rows over all steps: each request computing in a step counts one */
  kvsim_time_ns first_arrival, last_finish, end_time;
  double busy_s;                  /* sum over replicas of time spent in steps */
  double kv_usage_peak, kv_usage_mean; /* mean over samples */
  double running_mean, waiting_mean;
  double frac_samples_kv_full;    /* samples with usage >= 0.99 and requests waiting */
  double frac_samples_seq_bound;  /* samples with running == max_num_seqs */
  int64_t evictions;
  /* CPU tier (swap, offload): traffic, external prefix hits, waits. */
  int64_t cpu_bytes_to_cpu, cpu_bytes_to_gpu, cpu_stores, cpu_evictions;
  int64_t ext_prefix_queries, ext_prefix_hits;
  double cpu_transfer_s, transfer_wait_s;
  int64_t skipped_rows;
  double kv_token_fraction_mean;  /* time-weighted: token bytes / allocated bytes */
  double kv_reserved_unused_bytes_mean, kv_internal_frag_bytes_mean;
  /* The step model's terms at the run's mean step (kvsim_perf_mean_step,
   * the first replica's model and GPU): what the steps spend time on. */
  kvsim_step_cost_t mean_step;
  /* The cluster: replicas, the router and what it did (prefix_affinity:
   * requests sent to their prefix's replica, passed to the least-loaded
   * one because that replica was too far behind, or without a prefix),
   * and the first KVSIM_RUN_MAX_REPLICA_STATS replicas' own figures. */
  int32_t replicas;
  kvsim_router router;
  int64_t router_affinity, router_fallbacks, router_no_identity;
  kvsim_replica_stats_t replica[KVSIM_RUN_MAX_REPLICA_STATS];
  /* A disaggregated run (kvsim/disagg.h): its hand-off's figures and the
   * prefill side's plan (resolved and plan above are the decode side's). */
  bool disaggregated;
  kvsim_disagg_stats_t disagg;
  kvsim_plan_t disagg_prefill_plan;
} kvsim_run_stats_t;

typedef struct kvsim_run_opts {
  bool check_invariants;          /* check pool and request invariants after steps */
  /* Every step checks what it touched (O(batch)); the full O(pool) check
   * runs after every N-th step of a replica; 0 = every step; -1 = sampled:
   * when the local checks' work since the last full check reaches the
   * pool's size, so that full checks cost about as much as the local ones
   * (the CLI's --check-invariants and debug builds). */
  int64_t check_period;
} kvsim_run_opts_t;

/* The memory budget of one simulation, in bytes: what its replicas (KV
 * pools, CPU tiers) and its requests in flight may hold. A run that would
 * hold more stops with KVSIM_EBUDGET and a message naming the budget,
 * before it allocates (replicas) or as the requests pile up. Process-wide;
 * a parallel sweep's workers (processes) each have the whole budget.
 * bytes <= 0 restores the default. */
#define KVSIM_MEMORY_BUDGET_DEFAULT (INT64_C(4) << 30)
void kvsim_memory_budget_set(int64_t bytes);
int64_t kvsim_memory_budget(void);

/* Runs a scenario to completion (or max_time_s). The scenario is only
 * read (kvsim_scenario_resolve gives the configuration; stats->resolved
 * keeps it). Errors: the memory plan does not fit (KVSIM_ENOFIT, the
 * engine's message), a bad trace row, a broken invariant, a negative code
 * returned by the sink. */
int kvsim_run(const kvsim_scenario_t *sc, const kvsim_run_opts_t *opts, const kvsim_sink_t *sink,
              kvsim_run_stats_t *stats, kvsim_err *err);
/* The same with sc's configuration already resolved (res is
 * kvsim_scenario_resolve(sc)'s, which fitted): the memory plan is not
 * computed again. For callers that resolve first (to refuse a plan before
 * they create outputs). */
int kvsim_run_resolved(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                       const kvsim_run_opts_t *opts, const kvsim_sink_t *sink,
                       kvsim_run_stats_t *stats, kvsim_err *err);

#ifdef __cplusplus
}
#endif

#endif
