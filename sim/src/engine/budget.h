/* The memory budget of one simulation: what a run would hold, estimated
 * before it is allocated, checked against kvsim_memory_budget(). Internal
 * to the engine. */
#ifndef KVSIM_ENGINE_BUDGET_H
#define KVSIM_ENGINE_BUDGET_H

#include <stdint.h>

#include "kvsim/error.h"
#include "kvsim/scenario.h"

/* The bytes the replicas' pools, CPU tiers and bookkeeping take (what
 * setup allocates before the first request). */
int64_t kvsim__budget_replicas_bytes(const kvsim_scenario_t *sc, const kvsim_resolved_t *res);

/* KVSIM_EBUDGET naming the budget when the replicas would not fit in it. */
int kvsim__budget_check_replicas(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                                 kvsim_err *err);

/* KVSIM_EBUDGET naming the budget when `fixed` bytes plus `requests`
 * requests in flight would not fit in it. */
int kvsim__budget_check_requests(int64_t fixed, int64_t requests, kvsim_err *err);

#endif
