/* The prefix-cache block hash chain, one definition for the simulator's
 * cache (memory/kvcache.c) and `kvsim trace stats` (workload/tstats.c),
 * so that a trace's ideal hit rate and a run's hits come from the same
 * keys. As vLLM's hash_block_tokens (vllm/v1/core/kv_cache_utils.py), a
 * block's hash folds its parent's hash with the block's content; here the
 * content is the (segment id, offset, length) pieces of the prompt it
 * covers, so equal keys mean equal prefixes. Internal: not part of the
 * public API. */
#ifndef KVSIM_CORE_BLOCKHASH_H
#define KVSIM_CORE_BLOCKHASH_H

#include <stdint.h>

#include "core/arith.h"

/* NONE_HASH: the parent of a request's first block. vLLM draws it at
 * random unless PYTHONHASHSEED is set; a constant keeps runs reproducible. */
#define KVSIM__HASH_NONE UINT64_C(0x6a09e667f3bcc909)

/* Folds one piece of a block (a segment id, the offset in the segment, the
 * tokens taken) into the running hash x. */
static inline uint64_t kvsim__hash_piece(uint64_t x, uint64_t seg_id, int64_t off, int64_t take) {
  x = kvsim__mix64(x ^ seg_id);
  return kvsim__mix64(x ^ ((uint64_t)off << 20) ^ (uint64_t)take);
}

/* A finished block's hash, kept out of 0 and 1, the block pool's "no hash"
 * and "anonymous" marks; the chain goes on from it. */
static inline uint64_t kvsim__hash_seal(uint64_t x) { return x > 1 ? x : x + 2; }

/* A tenant's cache salt. vLLM mixes cache_salt into the first block's
 * extra keys, so every hash of the chain differs per tenant; salting each
 * block's key with the tenant is the same isolation, and keeps the
 * unsalted chain at hand to measure what isolation costs. */
static inline uint64_t kvsim__tenant_salt(int32_t tenant) {
  return tenant ? kvsim__mix64(UINT64_C(0x2545f4914f6cdd1d) ^ (uint64_t)(uint32_t)tenant) : 0;
}

#endif
