/* What the KV cache manager's files share (kvcache.c: setup and queries;
 * kvcache_lookup.c: prefix hashing and lookups; kvcache_alloc.c: allocation
 * and release; kvcache_fill.c: caching full blocks and the implicit-decode
 * fast paths): the block keys and array growth the hot paths call, static
 * inline so that the split costs no calls, and the helpers one file
 * defines for another. Internal to memory/. */
#ifndef KVSIM_MEMORY_KVCACHE_INTERNAL_H
#define KVSIM_MEMORY_KVCACHE_INTERNAL_H

#include "kvsim/kvcache.h"

#include "core/alloc.h"
#include "core/arith.h"
#include "core/blockhash.h"
#include "core/vec.h"

#include <stdint.h>

/* vLLM's offload tracker keeps 64,000 entries. */
#define KVSIM__KVCACHE_SEEN_SLOTS 65536

static inline uint64_t kvsim__kvcache_group_key(uint64_t hash, int g) {
  /* The prefix cache is keyed by (block hash, KV cache group). */
  return g ? kvsim__mix64(hash + 0x9e3779b97f4a7c15ull * (uint64_t)g) : hash;
}

static inline uint64_t kvsim__kvcache_block_key(const kvsim_request_t *r, int32_t k, int g) {
  return kvsim__kvcache_group_key(r->hashes[k] ^ kvsim__tenant_salt(r->spec.tenant), g);
}

/* The core array growth for the request's int32 capacities. */
static inline int kvsim__kvcache_grow32(void **p, int32_t *cap, int64_t need, size_t elem) {
  if (need <= *cap)
    return KVSIM_OK;
  if (need > INT32_MAX)
    return KVSIM_ENOMEM;
  int64_t c = *cap;
  if (kvsim__grow(p, &c, need, elem) < 0)
    return KVSIM_ENOMEM;
  *cap = c > INT32_MAX ? INT32_MAX : (int32_t)c;
  return KVSIM_OK;
}

/* Room for the hashes of blocks [0, upto): KVSIM_OK or KVSIM_ENOMEM. */
static inline int kvsim__kvcache_reserve_hashes(kvsim_request_t *r, int32_t upto) {
  return kvsim__kvcache_grow32((void **)&r->hashes, &r->hashes_cap, upto, sizeof *r->hashes);
}

/* Sliding groups only need the blocks inside the window before the hit
 * point (SlidingWindowManager.find_longest_cache_hit). */
static inline int32_t kvsim__kvcache_window_blocks(const kvsim_kvcache_t *kv, int g) {
  return (int32_t)kvsim__cdiv(kv->window[g] - 1, kv->block_size);
}

/* Hashes of full blocks up to block index `upto` (exclusive), in order,
 * into room made by reserve_hashes(r, upto). Returns the number available
 * (fewer past the known tokens). Blocks wholly inside the first segment
 * come from the manager's memo when it has them (hashmemo.h), and those
 * hashed here are offered to it. */
int32_t kvsim__kvcache_ensure_hashes(kvsim_kvcache_t *kv, kvsim_request_t *r, int32_t upto,
                                     int32_t bs);

/* Marks blocks [first, full) of the request's tables cached: with their
 * hashes, or (an anonymous prompt) unhashed; with offloading, stores them
 * in the CPU tier (kvcache_fill.c). */
void kvsim__kvcache_cache_full_blocks(kvsim_kvcache_t *kv, kvsim_request_t *r, int32_t first,
                                      int32_t full);

/* The anonymous marks a one-group table defers (anon_upto), given to its
 * blocks: those below it without a hash, as cache_full_blocks would have
 * marked them step by step. The blocks above the hit were allocated with
 * no hash and nothing else hashes them while the request holds them
 * (nobody can find them); the hit blocks below carry their real hashes. */
void kvsim__kvcache_mark_anon(kvsim_kvcache_t *kv, kvsim_blocks_t *t);

#endif
