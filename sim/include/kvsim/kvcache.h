/* The KV cache manager of one replica (vLLM V1 KVCacheManager): per
 * request block tables for each KV cache group over one shared pool,
 * prefix-cache lookup of chained full-block hashes, allocation of slots
 * for the tokens of a step, sliding-window freeing, and freeing. */
#ifndef KVSIM_KVCACHE_H
#define KVSIM_KVCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "kvsim/cputier.h"
#include "kvsim/error.h"
#include "kvsim/plan.h"
#include "kvsim/pool.h"
#include "kvsim/request.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvsim_kvcache {
  kvsim_pool_t pool;
  int32_t block_size;
  int32_t bs_shift;            /* log2(block_size) when a power of two, else -1 */
  /* bs_shift when allocate_running's fast path applies (one full-attention
   * group, no residual blocks), else -1: one load instead of four in a
   * check that runs for every running request every step. */
  int32_t fast_shift;
  int32_t num_groups;
  bool sliding[KVSIM_MAX_KV_GROUPS];
  int64_t window[KVSIM_MAX_KV_GROUPS];
  int64_t max_model_len;
  bool prefix_caching;
  /* Cache prompt blocks only (TGI's RadixAllocator.free inserts the
   * prefill tokens; generated-token blocks are freed uncached). Set by
   * the profile; false (vLLM: every full block) by default. */
  bool cache_prompt_only;
  /* int8/int4 caches keep the newest tokens unquantized: each request
   * holds this many extra blocks while it has KV (plan's residual bytes
   * rounded up to blocks), in the table after its groups'. */
  int32_t residual_blocks;
  /* Speculative decoding: num_speculative_tokens + 1, how far a verify
   * step can move num_computed; a step caches the blocks that far back
   * that accepted drafts filled (kvcache_alloc.c first_to_cache). 0 without. */
  int32_t spec_backoff;
  /* vLLM's use_eagle (EAGLE, EAGLE-3, MTP drafters): a prefix hit drops
   * its last block. */
  bool drop_last_hit;
  /* V1 offloading connector (vllm/distributed/kv_transfer/kv_connector/v1/
   * offloading_connector.py, vLLM PR #22595): full blocks are stored to the
   * CPU tier as they fill (after store_threshold lookups when >= 2); a prefix
   * lookup continues past the GPU hits into the CPU tier, and those blocks
   * are loaded back before the request runs. */
  kvsim_cpu_tier_t *cpu;       /* NULL: no offloading */
  int64_t store_threshold;
  uint32_t *seen;              /* lookup counts for store_threshold, direct-mapped */
  int32_t ext_blocks;          /* CPU hits of the last lookup (after the GPU hits) */
  int32_t last_loaded;         /* blocks loaded by the last allocate */
  int64_t ext_queries, ext_hits; /* vllm:external_prefix_cache_queries/hits (tokens) */
  /* Result of the last lookup, consumed by the next allocate of the same
   * request: hit blocks per group (null for skipped sliding blocks). */
  kvsim_block_id *hit_ids; /* num_groups x hit_cap */
  int32_t hit_cap;
  int32_t hit_blocks;
  const kvsim_request_t *hit_req;
  kvsim_block_id *alloc_tmp;
  int32_t alloc_cap;
  /* Prefix-cache counters in tokens (vllm:prefix_cache_queries/hits);
   * lookups of previously preempted requests are counted apart. */
  int64_t queries, hits;
  int64_t preempted_queries, preempted_hits;
  /* Internal (memory/hashmemo.h): the block hashes of first segments
   * that requests share, copied instead of hashed again. NULL: none. */
  struct kvsim__hmemo *hash_memo;
  /* Tenant isolation (cache salt): the largest tenant id seen, and hit
   * tokens lost because the content was cached under another tenant. */
  int32_t max_tenant;
  int64_t isolation_lost;
} kvsim_kvcache_t;

int kvsim_kvcache_init(kvsim_kvcache_t *kv, const kvsim_plan_t *pl, int64_t num_blocks,
                       bool prefix_caching, kvsim_err *err);
void kvsim_kvcache_fini(kvsim_kvcache_t *kv);

/* Without prefix caching, with one full-attention group and no residual
 * table, the pool is counted (kvsim_pool_init_counted) and a request's
 * table holds only its length: its ids stay unset. This gives the manager
 * a pool of real block ids instead (offloading needs them; the unit tests
 * compare the two). Only before the first allocation. KVSIM_ENOMEM. */
int kvsim_kvcache_walk_blocks(kvsim_kvcache_t *kv, kvsim_err *err);

/* Turns on the offloading connector over `cpu` (must outlive kv). */
int kvsim_kvcache_set_offload(kvsim_kvcache_t *kv, kvsim_cpu_tier_t *cpu, int64_t store_threshold,
                              kvsim_err *err);

/* Prepares a request's identity (segments + output segment + salt) for
 * hashing. Called once when the request arrives. Returns KVSIM_ENOMEM. */
int kvsim_kvcache_prepare(kvsim_kvcache_t *kv, kvsim_request_t *r);

/* get_computed_blocks: tokens of a waiting request (num_computed == 0)
 * already in the cache, at most num_tokens - 1, whole blocks: GPU hits,
 * then (with offloading) the following blocks found in the CPU tier.
 * Remembers the hits for the following allocate, which allocates GPU
 * blocks for the CPU hits and records them in last_loaded. Counts the
 * query. Returns the hit tokens, or KVSIM_ENOMEM (nothing counted) when
 * the request's hashes or the hit table cannot grow. */
int64_t kvsim_kvcache_lookup(kvsim_kvcache_t *kv, kvsim_request_t *r, bool preempted);

/* allocate_slots: makes room for num_new tokens after num_computed +
 * hit tokens (hit tokens from the last lookup of this request, 0 if none).
 * All or nothing: every table and hash array is grown before the first
 * block leaves the free queue. Returns 1 when allocated; 0, changing
 * nothing, when the free blocks do not suffice; KVSIM_ENOMEM, changing
 * nothing, when a table cannot grow. */
int kvsim_kvcache_allocate(kvsim_kvcache_t *kv, kvsim_request_t *r, int64_t hit_tokens,
                            int64_t num_new, int64_t num_lookahead);

/* allocate for the commonest call, a running request's next token(s) that
 * fit in the blocks it holds and fill no block: nothing to do. Falls back
 * to kvsim_kvcache_allocate otherwise. */
static inline int kvsim_kvcache_allocate_running(kvsim_kvcache_t *kv, kvsim_request_t *r,
                                                  int64_t num_new) {
  const int32_t sh = kv->fast_shift;
  if (sh >= 0) {
    /* Shifts, not divisions: this runs for every running request every step. */
    int64_t end = r->num_computed + num_new;
    if (end <= ((int64_t)r->blocks[0].len << sh) &&
        (!kv->prefix_caching || (end >> sh) == (r->num_computed >> sh)))
      return 1;
  }
  return kvsim_kvcache_allocate(kv, r, 0, num_new, 0);
}

/* Whether the caching of a decode row's full block may wait (implicit
 * decode, sched/v1_implicit.c): for an anonymous request under one
 * full-attention group without drafts, the step that fills block j only
 * marks the request's own table (cache_full_blocks: its anon_upto and
 * cached_blocks, or its own blocks' anonymous marks), which nobody reads
 * until the request is next touched; kvsim_kvcache_filled does it then.
 * A request whose blocks carry hashes is not: another request's lookup
 * or prefill in the same step may meet the hash. */
static inline bool kvsim_kvcache_fill_deferrable(const kvsim_kvcache_t *kv,
                                                 const kvsim_request_t *r) {
  return r->anon && kv->prefix_caching && kv->fast_shift >= 0 && !kv->spec_backoff &&
         !kv->cache_prompt_only;
}

/* What kvsim_kvcache_allocate's caching did in the decode step that filled
 * block `block` of such a request (its last token computed, nothing
 * allocated): the marks of that block. Idempotent. */
void kvsim_kvcache_filled(kvsim_kvcache_t *kv, kvsim_request_t *r, int32_t block);

/* A one-token row whose token starts a block (its table ends at its
 * computed tokens), given that block as kvsim_kvcache_allocate gives it:
 * one block off the free queue's head (a count, in a counted pool), and
 * nothing to cache (no block is full that was not). Returns 1; or 0,
 * changing nothing, where that call would do more or differently (another
 * table layout, drafts, max_model_len, no free block, a table or hash
 * array to grow): then kvsim_kvcache_allocate must run. */
int kvsim_kvcache_take_next(kvsim_kvcache_t *kv, kvsim_request_t *r);

/* Frees all blocks of a request, tail first (eviction order). */
void kvsim_kvcache_free(kvsim_kvcache_t *kv, kvsim_request_t *r);
/* The same for a preempted request, whose cached blocks must stay findable
 * for its own resumption. KVSIM_ENOMEM, freeing nothing, when the hashes
 * they need cannot be made. */
int kvsim_kvcache_free_preempted(kvsim_kvcache_t *kv, kvsim_request_t *r);

/* Whether entry k of the request's table g holds a cached block: one with
 * a hash, or an anonymous request's full block whose mark waits for its
 * release (kvsim_blocks_t.anon_upto). */
bool kvsim_kvcache_block_cached(const kvsim_kvcache_t *kv, const kvsim_request_t *r, int g,
                                int32_t k);

/* The bytes of the offload store's lookup counter (`seen`), which a
 * manager with a CPU tier allocates: the memory budget counts them. */
int64_t kvsim_kvcache_tracker_bytes(void);

/* Blocks currently held by the request (non-null, all groups). */
int64_t kvsim_kvcache_held(const kvsim_kvcache_t *kv, const kvsim_request_t *r);

/* Blocks the manager gives a request holding `tokens` tokens without
 * sliding-window freeing: one table per group plus the quantized cache's
 * residual blocks. */
static inline int64_t kvsim_kvcache_blocks_for(const kvsim_kvcache_t *kv, int64_t tokens) {
  return (int64_t)kv->num_groups * ((tokens + kv->block_size - 1) / kv->block_size) +
         kv->residual_blocks;
}

#ifdef __cplusplus
}
#endif

#endif
