/* The run's counts of a request that leaves the system, one definition
 * for the aggregated loop (run.c) and the disaggregated one
 * (disagg_run.c). Internal to the engine. */
#ifndef KVSIM_ENGINE_TALLY_H
#define KVSIM_ENGINE_TALLY_H

#include "kvsim/engine.h"
#include "kvsim/request.h"

/* Finished: its count, the last finish, its cached prompt tokens and
 * whether it was ever preempted; rejected: its count. */
static inline void kvsim__tally_retired(kvsim_run_stats_t *st, const kvsim_request_t *q) {
  if (q->status == KVSIM_REQ_FINISHED) {
    st->requests_finished++;
    if (q->finish > st->last_finish)
      st->last_finish = q->finish;
    st->cached_tokens += q->num_cached_tokens;
    if (q->num_preemptions)
      st->requests_preempted++;
  } else if (q->status == KVSIM_REQ_REJECTED) {
    st->requests_rejected++;
  }
}

#endif
