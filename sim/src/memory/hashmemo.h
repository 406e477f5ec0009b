/* Block hashes of first segments that requests share, kept per KV manager
 * for its hashing (memory/kvcache_lookup.c, ensure_hashes). The hash of a block
 * wholly inside a request's first segment depends only on that segment's
 * id, the block's index and the block size (core/blockhash.h: each block
 * folds its parent's hash with one piece, the segment's id, the offset
 * and the block's tokens), so requests that start alike (a system
 * prompt, a conversation's earlier turns) copy those hashes instead of
 * hashing their blocks again. Internal to memory/. */
#ifndef KVSIM_MEMORY_HASHMEMO_H
#define KVSIM_MEMORY_HASHMEMO_H

#include <stdint.h>

typedef struct kvsim__hmemo kvsim__hmemo_t;

/* NULL when out of memory (the hashing then goes without). */
kvsim__hmemo_t *kvsim__hmemo_new(void);
void kvsim__hmemo_free(kvsim__hmemo_t *m);

/* The first hashes kept for the blocks of segment `id` (*n of them, 0 and
 * NULL when none). Valid until the next kvsim__hmemo_offer. */
const uint64_t *kvsim__hmemo_get(const kvsim__hmemo_t *m, uint64_t id, int32_t *n);

/* The hashes of segment id's first n blocks, just computed: kept from the
 * second segment that offers them on (a first segment seen once, as every
 * request's own text is, costs a store), replacing the segment kept in
 * their slot; or extending it. Nothing on failure. */
void kvsim__hmemo_offer(kvsim__hmemo_t *m, uint64_t id, const uint64_t *h, int32_t n);

#endif
