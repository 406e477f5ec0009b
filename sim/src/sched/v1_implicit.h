/* Implicit decode for vllm-v1: a step whose running requests are, but
 * for a few, in plain decode advances those without touching them.
 * Internal to the scheduler (sched/vllm_v1.c). */
#ifndef KVSIM_SCHED_V1_IMPLICIT_H
#define KVSIM_SCHED_V1_IMPLICIT_H

#include <stdbool.h>
#include <stdint.h>

#include "kvsim/sched.h"

/* The cohort: running requests in plain decode (one known token not yet
 * computed, no drafts), each advanced one token a fast step, with nothing
 * to do in the step but that token: no block to allocate or fill (an
 * anonymous request's fill is done as it leaves: kvsim_kvcache_filled;
 * a row that only wants its next block may take it as the step begins,
 * staying, when the explicit rows before it leave the pool's order
 * alone: kvsim__imp_begin), not its last token, not at max_model_len. Their counts are those of clock
 * imp_base (request.h), and each waits on the calendar (a ring of buckets
 * keyed by clock) at the first clock where that stops holding: there it
 * leaves the cohort, brought up to date, and is scheduled explicitly.
 * The requests outside the cohort (ex) are few: prefill chunks, the
 * admitted, those whose event came. A step runs fast only when its
 * outcome cannot depend on the cohort's places in the running order: the
 * token budget holds every row, and the pool every block the explicit
 * rows may take (no preemption). Otherwise the cohort is dissolved (every
 * running request brought up to date) and the step runs the explicit
 * loop; it forms again after the step. */
typedef struct kvsim__imp {
  bool on;             /* cohort, calendar and ex are kept */
  bool in_flight;      /* a fast step was scheduled and not yet updated */
  bool step_new_set;   /* sync set the cohort's step_new during the step */
  int64_t clock;       /* steps so far while the cohort was kept (fast, or explicit after it) */
  int64_t seq;         /* admission stamps (adm_seq) */
  int64_t n;           /* requests in the cohort */
  int64_t ctx;         /* their computed tokens at `clock`, summed */
  /* Their blocks held, and the blocks their tokens fill or start, summed:
   * neither changes while a request is in the cohort (steps_to_event
   * keeps its tokens within one block, above its start). */
  int64_t live, need;
  kvsim_reqvec_t ex;   /* running requests outside the cohort (running order once sorted) */
  kvsim_reqvec_t takes; /* kvsim__imp_begin's rows that only want their next block */
  kvsim_reqvec_t kept;  /* the cohort's rows through an explicit step (kvsim__imp_stop) */
  kvsim_reqvec_t *ring;
  int64_t mask;        /* ring size - 1 (a power of two above the block size) */
} kvsim__imp_t;

int kvsim__imp_init(kvsim__imp_t *m, const kvsim_kvcache_t *kv, kvsim_err *err);
void kvsim__imp_fini(kvsim__imp_t *m);

/* Whether this scheduler may run implicit steps at all: the engine
 * allows it, no drafts or adapters, one full-attention group with
 * power-of-two blocks, no offloading, no sliding window, and sums that
 * stay exact in doubles for any step of max_num_batched_tokens. */
bool kvsim__imp_allowed(const kvsim_sched_t *s, int64_t window);

/* The start of a schedule. When the cohort is kept: the requests whose
 * event is due leave it (brought up to date) for ex, ex is put in running
 * order, and true is returned if the step can run fast within `budget`
 * (threshold: long_prefill_token_threshold, 0 = off); due rows that only
 * want their next block take it then and stay, where the order allows.
 * Otherwise the cohort is dissolved and false returned: the explicit
 * loop runs. */
bool kvsim__imp_begin(kvsim__imp_t *m, kvsim_sched_t *s, int64_t budget, int64_t threshold);

/* A request joins running in a fast step: stamped, listed in ex. Room in
 * ex must have been reserved (kvsim__imp_reserve). */
void kvsim__imp_admitted(kvsim__imp_t *m, kvsim_request_t *r);
int kvsim__imp_reserve(kvsim__imp_t *m, int64_t more);

/* After the step's token accounting (kvsim_sched_update_tokens): a fast
 * step advances the cohort (clock, its computed tokens, the generated
 * tokens' total); then the step's explicit requests that are in plain
 * decode join the cohort. After an explicit step the cohort forms anew
 * from the running list (when allowed). */
void kvsim__imp_after_update(kvsim__imp_t *m, kvsim_sched_t *s, bool fast, int64_t window);

/* Dissolves the cohort: every running request up to date, nothing kept. */
void kvsim__imp_stop(kvsim__imp_t *m, kvsim_sched_t *s);

/* The implicit_sums op: the cohort's sums (false when it is not kept, or
 * the running list changed outside the scheduler). */
bool kvsim__imp_sums(const kvsim__imp_t *m, const kvsim_sched_t *s, kvsim_sched_isums_t *out);

/* The sync op: the cohort's counts up to date, and their step_new of 1
 * while a fast step is in flight (cleared by its update). */
void kvsim__imp_sync(kvsim__imp_t *m, kvsim_sched_t *s);

#endif
