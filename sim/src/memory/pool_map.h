/* The block pool's prefix map probe, shared by pool.c and the KV
 * manager's prefix walk (kvcache_lookup.c), which calls it once a block of
 * every resumed or shared prompt: inline there, one definition. Internal
 * to memory/. */
#ifndef KVSIM_MEMORY_POOL_MAP_H
#define KVSIM_MEMORY_POOL_MAP_H

#include "kvsim/pool.h"

#define KVSIM__POOL_MAP_EMPTY 0ull

/* Block hashes are never 0 (the map's empty marker). */
static inline uint64_t kvsim__pool_key(uint64_t h) { return h ? h : 1; }

static inline uint32_t kvsim__pool_slot(const kvsim_pool_t *p, uint64_t key) {
  /* The key is already a well-mixed hash; fold the high bits in anyway. */
  return (uint32_t)(key ^ (key >> 29)) & p->map_mask;
}

/* kvsim_pool_lookup: the block cached under hash, or -1. */
static inline kvsim_block_id kvsim__pool_find(const kvsim_pool_t *p, uint64_t hash) {
  const uint64_t key = kvsim__pool_key(hash);
  for (uint32_t i = kvsim__pool_slot(p, key);; i = (i + 1) & p->map_mask) {
    const uint64_t k = p->map_keys[i];
    if (k == KVSIM__POOL_MAP_EMPTY)
      return -1;
    if (k == key)
      return p->map_vals[i];
  }
}

#endif
