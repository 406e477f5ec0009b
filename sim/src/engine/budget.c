/* The memory budget: one process-wide limit on what a simulation may hold,
 * so that an input asking for more (a search doubling replicas, a rate so
 * high that requests pile up) is an error naming the budget, not a process
 * the kernel kills. The estimate counts what grows with the input: each
 * replica's pool and CPU tier, and the requests in flight. */
#include "engine/budget.h"

#include <stdatomic.h>

#include "engine/replica.h"
#include "kvsim/cputier.h"
#include "kvsim/kvcache.h"
#include "kvsim/pool.h"

static _Atomic int64_t budget = KVSIM_MEMORY_BUDGET_DEFAULT;

void kvsim_memory_budget_set(int64_t bytes) {
  atomic_store(&budget, bytes > 0 ? bytes : KVSIM_MEMORY_BUDGET_DEFAULT);
}

int64_t kvsim_memory_budget(void) { return atomic_load(&budget); }

/* A request in flight: its object and the router's key. Its block hashes
 * and tables (a few words per block) are not counted: 200,000 requests
 * piled up (bench-synthetic-1m.json at 10^6 req/s, --no-band) peaked at
 * 276 MB RSS, about 1.3 KiB each; this counts 1.2. */
#define REQUEST_BYTES ((int64_t)sizeof(kvsim_request_t) + 64)

int64_t kvsim__budget_replicas_bytes(const kvsim_scenario_t *sc, const kvsim_resolved_t *res) {
  const kvsim_plan_t *pl = &res->plan;
  bool offload = sc->offload.cpu_gib > 0;
  int64_t per = kvsim_pool_bytes(res->pool_blocks) +
                kvsim_cpu_tier_bytes(offload ? pl->offload_blocks : pl->swap_blocks, offload) +
                (int64_t)sizeof(kvsim__replica_t) +
                (offload ? kvsim_kvcache_tracker_bytes() : 0);
  return (int64_t)sc->replicas * per;
}

static double gib(int64_t b) { return (double)b / (double)(INT64_C(1) << 30); }

int kvsim__budget_check_replicas(const kvsim_scenario_t *sc, const kvsim_resolved_t *res,
                                 kvsim_err *err) {
  int64_t need = kvsim__budget_replicas_bytes(sc, res), cap = kvsim_memory_budget();
  if (need <= cap)
    return KVSIM_OK;
  return kvsim_err_set(err, KVSIM_EBUDGET,
                       "hardware.replicas = %d: %d replicas of %lld KV blocks need %.3g GiB of "
                       "simulator memory, past the memory budget of %.3g GiB (--memory-budget)",
                       sc->replicas, sc->replicas, (long long)res->pool_blocks, gib(need), gib(cap));
}

int kvsim__budget_check_requests(int64_t fixed, int64_t requests, kvsim_err *err) {
  int64_t cap = kvsim_memory_budget();
  if (requests <= (cap - fixed) / REQUEST_BYTES)
    return KVSIM_OK;
  return kvsim_err_set(err, KVSIM_EBUDGET,
                       "%lld requests in flight (arrived, not yet finished) need %.3g GiB of "
                       "simulator memory, past the memory budget of %.3g GiB (--memory-budget)",
                       (long long)requests, gib(fixed + requests * REQUEST_BYTES), gib(cap));
}
