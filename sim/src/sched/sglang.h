/* The sglang profile's own state and options (sglang.c), and its queue
 * ordering (sglang_policy.c). Internal to sim/src/sched/. */
#ifndef KVSIM_SCHED_SGLANG_H
#define KVSIM_SCHED_SGLANG_H

#include "kvsim/sched.h"

typedef enum { SGL_FCFS = 0, SGL_LPM, SGL_LOF, SGL_RANDOM } sgl_policy;

/* The scenario's engine keys SGLang spells its own way. */
typedef struct sgl_opts {
  double mem_fraction_static;       /* 0: automatic */
  double schedule_conservativeness; /* --schedule-conservativeness, 1.0 */
  double gpu_memory_capacity_mib;   /* nvidia-smi's memory.total; 0: the runtime's */
  int64_t max_total_tokens, max_running_requests, chunked_prefill_size, max_prefill_tokens;
  int64_t scheduler_recv_interval; /* --scheduler-recv-interval; 0 or 1: every loop */
  int32_t page_size;
  int32_t policy;
  /* --speculative-num-steps, --speculative-eagle-topk,
   * --speculative-num-draft-tokens; 0: SGLang's automatic tree. */
  int32_t spec_num_steps, spec_eagle_topk, spec_num_draft_tokens;
} sgl_opts_t;
_Static_assert(sizeof(sgl_opts_t) <= KVSIM_SCHED_OPTS_BYTES, "sglang options fit the buffer");

/* schedule_policy.py _determine_active_policy: "Turn off the expensive
 * prefix matching and sorting when the #queue is large". */
#define LPM_MAX_QUEUE 128

typedef struct sgl {
  kvsim_sched_t s;
  double ratio, ratio_init, ratio_min, ratio_decay;
  kvsim_request_t *chunked;  /* the request mid-prefill, in running */
  kvsim_reqvec_t order;      /* scratch: waiting requests in policy order */
  int64_t *keys;             /* scratch: their sort keys */
  int64_t keys_cap;
  uint64_t rng;              /* random policy: splitmix64, fixed seed */
  /* --scheduler-recv-interval > 1: arrivals the scheduler has not read
   * yet (the tokenizer's socket), in arrival order; the receive skipper's
   * counter, and whether the last batch was a prefill. */
  kvsim_reqvec_t inbox;
  int64_t recv_counter;
  bool last_prefill;
} sgl_t;

static inline const sgl_opts_t *kvsim__sgl_opts(const kvsim_sched_t *s) {
  return kvsim_sched_opts(s);
}

/* The waiting queue in the active policy's order
 * (SchedulePolicy.calc_priority): FCFS leaves v->order alone (the queue is
 * its order); the others fill v->order. *policy is the active one.
 * Returns KVSIM_OK or KVSIM_ENOMEM. */
int kvsim__sgl_policy_order(sgl_t *v, int *policy);

#endif
