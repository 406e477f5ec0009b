/* Scheduler interface. An engine profile (vllm-v1, vllm-v0, static, ...)
 * is one file in src/sched/ implementing kvsim_sched_ops_t, plus one line
 * in the registry. A scheduler owns its replica's waiting and running
 * queues and decides, each step, which requests compute how many tokens;
 * it knows nothing of files, events or time series. */
#ifndef KVSIM_SCHED_H
#define KVSIM_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvsim/clock.h"
#include "kvsim/cputier.h"
#include "kvsim/error.h"
#include "kvsim/kvcache.h"
#include "kvsim/request.h"

typedef enum { KVSIM_POLICY_FCFS = 0, KVSIM_POLICY_PRIORITY } kvsim_policy;
typedef enum { KVSIM_PREEMPT_RECOMPUTE = 0, KVSIM_PREEMPT_SWAP } kvsim_preempt_mode;

/* Engine settings a scheduler reads (resolved: no "default" left). */
typedef struct kvsim_sched_cfg {
  int64_t max_num_seqs;
  int64_t max_num_batched_tokens;
  int64_t max_model_len;
  int64_t long_prefill_token_threshold; /* 0 = off */
  int32_t block_size;
  bool enable_chunked_prefill;
  bool enable_prefix_caching;
  kvsim_policy policy;
  kvsim_preempt_mode preemption_mode;
  double watermark;                     /* V0: fraction of blocks kept free on admission */
  int64_t num_cpu_blocks;               /* V0 swap space, in blocks */
  bool oracle_lengths;                  /* contiguous: reserve the true length, not max_model_len */
} kvsim_sched_cfg_t;

/* A growable array of requests (running list, step list). */
typedef struct kvsim_reqvec {
  kvsim_request_t **v;
  int32_t n, cap;
} kvsim_reqvec_t;

int kvsim__reqvec_grow(kvsim_reqvec_t *a);
static inline int kvsim_reqvec_push(kvsim_reqvec_t *a, kvsim_request_t *r) {
  if (a->n == a->cap && kvsim__reqvec_grow(a) < 0)
    return KVSIM_ENOMEM;
  a->v[a->n++] = r;
  return KVSIM_OK;
}
void kvsim_reqvec_fini(kvsim_reqvec_t *a);

/* The waiting queue: FIFO with push-front for preempted requests, or a
 * heap on (priority, arrival, id) under the priority policy. */
typedef struct kvsim_waitq {
  kvsim_request_t **v;
  int32_t head, n, cap; /* ring buffer (fcfs) or heap in v[0..n) (priority) */
  bool heap;
} kvsim_waitq_t;

int kvsim_waitq_push_back(kvsim_waitq_t *q, kvsim_request_t *r);
int kvsim_waitq_push_front(kvsim_waitq_t *q, kvsim_request_t *r);
kvsim_request_t *kvsim_waitq_peek(const kvsim_waitq_t *q);
kvsim_request_t *kvsim_waitq_pop(kvsim_waitq_t *q);
/* Removes r wherever it is in the queue; returns false if absent. O(n). */
bool kvsim_waitq_remove(kvsim_waitq_t *q, kvsim_request_t *r);
/* The i-th request in queue order (FIFO only; heap order is unspecified). */
kvsim_request_t *kvsim_waitq_at(const kvsim_waitq_t *q, int32_t i);
void kvsim_waitq_fini(kvsim_waitq_t *q);

/* One step: the scheduled requests, each with r->step_new tokens. */
typedef struct kvsim_step {
  kvsim_reqvec_t reqs;
  int32_t num_preempted;    /* preemptions while building this step */
  int64_t num_tokens;       /* sum of step_new */
  kvsim_time_ns extra_ns;   /* transfer time the step waits for (swap, offload loads) */
} kvsim_step_t;

typedef struct kvsim_sched kvsim_sched_t;

typedef struct kvsim_sched_ops {
  const char *name;
  const char *help;
  size_t size; /* sizeof the profile's struct, which starts with kvsim_sched_t */
  int (*init)(kvsim_sched_t *s, kvsim_err *err);
  void (*fini)(kvsim_sched_t *s);
  /* A request arrives (status WAITING, num_computed 0). */
  void (*add)(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now);
  /* Builds the next step into `step` (cleared by the caller). */
  void (*schedule)(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step);
  /* The step ended at `now`: account computed and generated tokens, move
   * finished requests to `finished` (their KV freed). */
  void (*update)(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step, kvsim_reqvec_t *finished);
  /* Optional (NULL = none): requests that hold KV outside `running` and
   * `waiting` — V0's swapped queue (status SWAPPED, CPU blocks in
   * swapped_blocks), a static batch's finished members that keep their
   * slot until the batch ends (status FINISHED, already reported). The
   * engine counts their GPU blocks in the invariant check and their KV in
   * the waste sampling. Sets *out to the profile's array (owned by it,
   * valid until the next call into the scheduler); returns its length. */
  int32_t (*held)(const kvsim_sched_t *s, kvsim_request_t *const **out);
} kvsim_sched_ops_t;

struct kvsim_sched {
  const kvsim_sched_ops_t *ops;
  kvsim_sched_cfg_t cfg;
  kvsim_kvcache_t *kv;       /* the replica's KV manager (not owned) */
  kvsim_cpu_tier_t *cpu;     /* the replica's CPU tier (not owned; 0 blocks when none) */
  kvsim_waitq_t waiting;
  kvsim_reqvec_t running;
  int64_t num_preemptions;   /* cumulative (vllm:num_preemptions) */
  int64_t num_swapped;       /* requests whose KV is in the CPU tier now */
  int64_t prompt_tokens_total, generation_tokens_total;
};

/* Looks up a profile by name; NULL if unknown. */
const kvsim_sched_ops_t *kvsim_sched_find(const char *name);
/* "vllm-v1, vllm-v0, ..." for messages. */
void kvsim_sched_names(char *buf, size_t cap);

/* Creates a scheduler of the given profile over kv. */
int kvsim_sched_new(const kvsim_sched_ops_t *ops, const kvsim_sched_cfg_t *cfg,
                    kvsim_kvcache_t *kv, kvsim_sched_t **out, kvsim_err *err);
void kvsim_sched_free(kvsim_sched_t *s);

/* Shared building blocks for profiles. */

/* Token accounting after a step, identical for every profile: computed
 * tokens advance; a request whose computed tokens catch up with its known
 * tokens samples one; requests done are removed from running (order kept),
 * their KV freed, and appended to `finished`. */
void kvsim_sched_update_tokens(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step,
                               kvsim_reqvec_t *finished);

/* One sampled token for r at `now`: output and token counts, first and
 * last token times. Returns true, with r marked finished, when r has all
 * its output. */
bool kvsim_sched_emit_token(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now);

/* Recompute preemption (V1 _preempt_request): free KV, computed tokens to
 * 0, count it, put the request at the front of the waiting queue. */
void kvsim_sched_preempt(kvsim_sched_t *s, kvsim_request_t *r);

#endif
