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
  kvsim_kvcache_t kv;
  kvsim_cpu_tier_t cpu;
  kvsim_sched_t *sched;
  kvsim_step_t step;
  bool busy;
  bool overlap_transfers;    /* step = max(compute, transfers) instead of the sum */
  double transfer_wait_s;    /* time steps spent on transfers beyond compute */
  kvsim_time_ns step_start;
  int64_t steps;
  double busy_s;
  double kv_usage_peak;
} kvsim__replica_t;

/* The replica reads the resolved configuration (plan, scheduler
 * settings, pool size) and the scenario's CPU tier and GPU links. */
int kvsim__replica_init(kvsim__replica_t *rep, int32_t index, const kvsim_scenario_t *sc,
                        const kvsim_resolved_t *res, kvsim_err *err);
void kvsim__replica_fini(kvsim__replica_t *rep);

/* Builds the next step; returns its duration, or -1 when there is nothing
 * to run (the replica goes idle). */
kvsim_time_ns kvsim__replica_start_step(kvsim__replica_t *rep, const kvsim_perf_t *perf,
                                        int64_t window, kvsim_time_ns now);

/* The step in flight ended at now: requests done go to `finished`. */
void kvsim__replica_end_step(kvsim__replica_t *rep, kvsim_time_ns now, kvsim_reqvec_t *finished);

/* Fills a time-series row for this replica. */
void kvsim__replica_sample(const kvsim__replica_t *rep, const kvsim_plan_t *pl, kvsim_time_ns now,
                           kvsim_sample_t *s);

/* Pool and request invariants: used + cached + free = total, every ref
 * count equals the requests holding the block. */
int kvsim__replica_check(const kvsim__replica_t *rep, kvsim_err *err);

#endif
