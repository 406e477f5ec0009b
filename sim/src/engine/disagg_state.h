/* The state of a disaggregated run (disagg_run.c), shared with its
 * end-of-run accounting and checks (disagg_report.c). Private to
 * sim/src/engine/. */
#ifndef KVSIM_ENGINE_DISAGG_STATE_H
#define KVSIM_ENGINE_DISAGG_STATE_H

#include "engine/handoff.h"
#include "engine/replica.h"
#include "engine/reqpool.h"
#include "engine/router.h"
#include "kvsim/engine.h"
#include "kvsim/events.h"

enum { EV_ARRIVAL = 1, EV_STEP = 2, EV_SAMPLE = 3, EV_STOP = 4, EV_XFER = 5 };

typedef struct inbox_entry {
  int32_t slot, p; /* the decode object's slot, its prefill instance */
} inbox_entry_t;

typedef struct recv_gate {
  int64_t interval;                 /* the decode side's scheduler_recv_interval; <= 1: off */
  int64_t *weight;                  /* per decode instance: its batches' weights since its last poll */
  bool *landed;                     /* per decode instance: requests landed in its last step */
  kvsim__vec(inbox_entry_t) *inbox; /* per decode instance: arrived, not yet received */
} recv_gate_t;

typedef struct side {
  kvsim_scenario_t sc;
  kvsim_resolved_t res;
  kvsim_perf_t perf;
  kvsim__replica_t *reps;
  int32_t n;
  kvsim__router_t router;
  kvsim__router_load_t *loads;
  kvsim_kvcache_t **kvs;
  double usage_peak;
} side_t;

typedef struct drun {
  const kvsim_scenario_t *sc;
  const kvsim_sink_t *sink;
  kvsim_run_stats_t *st;
  kvsim_err *err;
  side_t side[2];
  kvsim__handoff_t ho;
  recv_gate_t gate; /* the SGLang flow's decode side */
  kvsim_time_ns *step_end; /* per instance (prefill first): when its step in flight ends */
  kvsim_eventq_t q;
  kvsim_source_t *src;
  bool src_end, src_blocked;
  kvsim__reqpool_t pool;
  kvsim__vec(int32_t) pre_of;      /* dec slot -> pre slot, from pull to arrival */
  kvsim__vec(uint64_t) prefix_key; /* dec slot -> the routers' prefix key */
  int64_t in_flight, pending;      /* requests in the system; steps and transfers in flight */
  int64_t arrivals;                /* pulled, not yet arrived */
  int64_t fixed_bytes;             /* both sides' pools (budget.h) */
  kvsim_reqvec_t finished;
  int32_t *xs;
  kvsim_time_ns *xe;
  int32_t xcap;
  kvsim_request_t **started;
  int32_t started_cap;
  /* The summary's means over every instance's ticks (run.c's
   * account_sample): usage, queues, time full or at max_num_seqs, and
   * allocation waste. */
  int64_t samples, kv_full, seq_bound, frac_samples;
  double usage_sum, running_sum, waiting_sum, frac_sum, frag_sum, unused_sum;
} drun_t;

/* Instance g of the run: the prefill instances first, then the decode ones. */
static inline kvsim__replica_t *rep_of(drun_t *r, int32_t g) {
  int32_t np = r->side[0].n;
  return g < np ? &r->side[0].reps[g] : &r->side[1].reps[g - np];
}

/* The run's totals into r->st (disagg_report.c). */
void kvsim__drun_totals(drun_t *r);
/* The error of a run that cannot make progress, naming why. */
int kvsim__drun_stuck(drun_t *r);
/* --check-invariants after an event: the hand-off's accounting of every pool. */
int kvsim__drun_check_all(drun_t *r);

#endif
