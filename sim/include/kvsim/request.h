/* A request in flight inside a replica. Objects are pooled and reused; the
 * arrays they own (block tables, hashes, segments) keep their capacity
 * across reuse so that the steady state allocates nothing. */
#ifndef KVSIM_REQUEST_H
#define KVSIM_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "kvsim/clock.h"
#include "kvsim/pool.h"
#include "kvsim/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVSIM_MAX_KV_GROUPS 16

typedef enum kvsim_req_status {
  KVSIM_REQ_PENDING = 0, /* pulled from the workload, not yet arrived */
  KVSIM_REQ_WAITING,     /* in a replica's waiting queue (fresh or preempted) */
  KVSIM_REQ_RUNNING,
  KVSIM_REQ_SWAPPED,     /* KV in the CPU tier (V0 swap preemption) */
  KVSIM_REQ_FINISHED,
  KVSIM_REQ_REJECTED,
} kvsim_req_status;

/* A growable array of block ids. */
typedef struct kvsim_blocks {
  kvsim_block_id *ids; /* unset over a counted pool (kvcache.h): len is the table */
  int32_t len, cap;
  int32_t num_skipped; /* leading entries replaced by the null block (sliding window) */
  /* An anonymous request's entries below this are full and cached
   * unhashed, their blocks marked KVSIM_ANON_HASH only when they are
   * released (kvcache_fill.c mark_anon): nothing reads a held block's mark. */
  int32_t anon_upto;
} kvsim_blocks_t;

typedef struct kvsim_request {
  /* The fields every step reads or writes for every running request
   * (schedule, the batch shape, token accounting) first, in the request's
   * first cache line; the block tables right after. */
  int64_t num_tokens;        /* prompt + generated so far (vLLM request.num_tokens) */
  int64_t num_computed;      /* tokens whose KV is in the cache */
  int64_t num_prompt;        /* = spec.prompt_tokens */
  int64_t num_output;        /* generated tokens */
  int32_t step_new;          /* tokens scheduled in the current step */
  /* Speculative decoding: draft tokens proposed at the end of the last
   * step, verified in the next (vLLM request.spec_token_ids); 0 without. */
  int32_t num_spec;
  kvsim_req_status status;
  kvsim_time_ns first_token, last_token; /* KVSIM_TIME_NEVER when not reached */

  /* KV: one block table per KV cache group; hashes of the full blocks
   * (same for every group; the pool key mixes the group in). */
  kvsim_blocks_t blocks[KVSIM_MAX_KV_GROUPS];
  uint64_t *hashes;
  int32_t num_hashes, hashes_cap;

  kvsim_req_spec_t spec;     /* spec.segments points into `segs` below */
  int32_t slot;              /* index in the run's request table */
  int32_t replica;
  int64_t num_cached_tokens; /* prefix-cache hit of the first schedule */
  int32_t num_preemptions;
  /* A prompt with no identity (no segments) can only ever hit its own
   * blocks, after a preemption: its full blocks are cached anonymously and
   * given findable hashes only when it is preempted. cached_blocks is how
   * many of its blocks the engine has cached. */
  bool anon;
  int32_t cached_blocks;
  /* Cursor for incremental hashing: segment index and offset of the next
   * unhashed token. */
  int32_t hash_seg;
  int64_t hash_off;

  /* Identity: the prompt's segments followed by the output segment. */
  kvsim_segment_t *segs;
  int32_t num_segs, segs_cap;

  /* Timestamps (ns); KVSIM_TIME_NEVER when not reached. */
  kvsim_time_ns arrival, first_scheduled, finish;
  const char *reject_reason; /* static string */

  /* A contiguous reservation of this many tokens (contiguous, static
   * profiles) instead of paged blocks; 0 for paged profiles. */
  int64_t reserved_tokens;
  int64_t swapped_blocks;
  kvsim_time_ns ready_at;    /* waiting on a transfer until then */
  /* Disaggregated prefill: the request finishes with its blocks kept, for
   * the hand-off to free once the decode side has its KV (vLLM's
   * KVConnector.request_finished returning delay_free_blocks). */
  bool hold_kv;
  /* Implicit decode (vllm-v1, sched/v1_implicit.c): a running request in
   * plain decode is advanced by its scheduler's clock without being
   * touched; its token counts (num_computed, num_tokens, num_output) are
   * then those of clock imp_base, behind by the clock's steps since, until
   * the scheduler brings them up to date (its sync op, every event of the
   * request). last_token is not kept for it; adm_seq orders the running
   * requests as they were admitted. */
  bool imp;
  int64_t imp_base;
  int64_t adm_seq;
  /* The clock of its calendar entry; and, through a step the scheduler
   * runs explicitly, whether it keeps that entry (imp_kept) and its
   * computed tokens when the step began (imp_c). */
  int64_t imp_due, imp_c;
  bool imp_kept;
} kvsim_request_t;

/* prompt + output tokens, saturated at INT64_MAX: an output length near
 * 2^63 must fail the max_model_len check, not wrap below it. Inline here,
 * beside the type, so that the schedulers below the engine need nothing
 * from it. */
static inline int64_t kvsim_request_total_tokens(const kvsim_request_t *r) {
  int64_t total;
  return __builtin_add_overflow(r->spec.prompt_tokens, r->spec.output_tokens, &total) ? INT64_MAX
                                                                                     : total;
}

#ifdef __cplusplus
}
#endif

#endif
