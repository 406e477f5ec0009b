/* One serving instance: a KV pool, a scheduler, and the step in flight.
 * Internal to the engine. */
#ifndef KVSIM_ENGINE_REPLICA_H
#define KVSIM_ENGINE_REPLICA_H

#include <stdbool.h>

#include "kvsim/cputier.h"
#include "kvsim/engine.h"
#include "kvsim/kvcache.h"
#include "kvsim/perf.h"
#include "kvsim/sched.h"

typedef struct kvsim__replica {
  int32_t index;
  /* The scenario's file (its name when built in) that the progress
   * guard's error names; borrowed from the scenario, which outlives the
   * replica. */
  const char *where;
  kvsim_kvcache_t kv;
  kvsim_cpu_tier_t cpu;
  kvsim_lora_cache_t lora;   /* adapter caches (zero when LoRA is off) */
  kvsim_perf_lora_t lora_perf;
  double lora_kernel_s;      /* steps' LoRA kernel time */
  kvsim_sched_t *sched;
  kvsim_step_t step;
  bool busy;
  bool overlap_transfers;    /* step = max(compute, transfers) instead of the sum */
  /* The run's GEMM terms by step rows for the perf this replica is timed
   * with (kvsim_perf_step_time_memo; shared by the run's replicas, which
   * run on one thread). NULL: none. */
  kvsim_perf_memo_t *step_memo;
  double step_time_scale;    /* the scenario's perf.step_time_scale (1: as modelled) */
  double prefill_time_scale; /* its perf.prefill_time_scale (step_time_scale when not given) */
  double transfer_wait_s;    /* time steps spent on transfers beyond compute */
  kvsim_time_ns step_start;
  int64_t steps;
  int64_t sequence_steps; /* rows over its steps */
  double busy_s;
  double kv_usage_peak;
  /* Progress guard: consecutive step attempts and sampling ticks that
   * found requests waiting, nothing running or held, and no step to run. */
  int32_t stalled;
  /* Invariant checks: local-check work since the last full check. */
  int64_t check_work;
} kvsim__replica_t;

/* Step attempts and ticks without progress (nothing running, requests
 * waiting) after which the run stops with an error naming the head
 * request: in that state nothing can ever free blocks for it. */
#define KVSIM__STALL_LIMIT 16


/* The replica reads the resolved configuration (plan, scheduler
 * settings, pool size) and the scenario's CPU tier and GPU links. */
int kvsim__replica_init(kvsim__replica_t *rep, int32_t index, const kvsim_scenario_t *sc,
                        const kvsim_resolved_t *res, kvsim_err *err);
void kvsim__replica_fini(kvsim__replica_t *rep);

/* The admission check: whether a request holding `tokens` tokens fits the
 * pool at all — the plan's blocks (sliding groups bounded by their window)
 * plus the quantized cache's residual window of every request. */
bool kvsim__replica_fits(const kvsim__replica_t *rep, const kvsim_plan_t *pl, int64_t tokens);

/* A request arrives at the replica's scheduler. KVSIM_ENOMEM (the
 * request is not queued; the caller still owns it). */
int kvsim__replica_add(kvsim__replica_t *rep, kvsim_request_t *r, kvsim_time_ns now, kvsim_err *err);

/* Brings the running requests' token counts up to date (a profile with
 * implicit decode keeps them behind): before anything outside the
 * scheduler reads them. */
void kvsim__replica_sync(kvsim__replica_t *rep);

/* Builds the next step; sets *dt to its duration (the drafter's forwards
 * included when `draft` is given), or -1 when there is
 * nothing to run (the replica goes idle). Errors: KVSIM_ENOMEM (the
 * partial step is discarded, no request lost), KVSIM_ETHRESH from the
 * progress guard (KVSIM__STALL_LIMIT attempts without progress). */
int kvsim__replica_start_step(kvsim__replica_t *rep, const kvsim_perf_t *perf,
                              const kvsim_perf_t *draft /* NULL: no drafter */, int64_t window,
                              kvsim_time_ns now, kvsim_time_ns *dt, kvsim_err *err);

/* The step in flight ended at now: requests done go to `finished`.
 * KVSIM_ENOMEM, with nothing accounted, when `finished` cannot grow. */
int kvsim__replica_end_step(kvsim__replica_t *rep, kvsim_time_ns now, kvsim_reqvec_t *finished,
                            kvsim_err *err);

/* Fills a time-series row for this replica. A sampling tick (tick true)
 * counts toward the progress guard: KVSIM_ETHRESH, with the row filled,
 * when the replica has been stalled for KVSIM__STALL_LIMIT attempts. */
int kvsim__replica_sample(kvsim__replica_t *rep, const kvsim_plan_t *pl, kvsim_time_ns now, bool tick,
                          kvsim_sample_t *s, kvsim_err *err);

/* Invariants after a step, in two costs:
 * - kvsim__replica_check_step, O(what the step touched): every request of
 *   the last step holds live blocks at its tail (in range, referenced,
 *   off the free queue) or, finished, none; the free queue's ends and
 *   counters agree; the CPU tier's swap blocks are the swapped requests'.
 * - kvsim__replica_check, O(pool): used + cached + free = total, the free
 *   queue's links, every ref count equals the requests holding the block,
 *   waiting requests hold nothing.
 * kvsim__replica_check_due says whether the full check is due: when the
 * local checks' work since the last full one reaches the pool's size, so
 * that full checks cost about as much as the local ones. Both return 0 or
 * KVSIM_EINVAL naming the replica, block and request. */
int kvsim__replica_check_step(kvsim__replica_t *rep, const kvsim_reqvec_t *finished, kvsim_err *err);
bool kvsim__replica_check_due(kvsim__replica_t *rep);
int kvsim__replica_check(const kvsim__replica_t *rep, kvsim_err *err);

#endif
