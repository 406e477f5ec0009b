/* The paged KV block pool, with vLLM V1 BlockPool semantics
 * (vllm/v1/core/block_pool.py BlockPool, FreeKVCacheBlockQueue in
 * vllm/v1/core/kv_cache_utils.py):
 * block 0 is the null block and never handed out; free blocks sit in a
 * doubly linked queue in eviction order (LRU at the head); blocks are
 * reference counted; a freed block keeps its hash and stays findable in
 * the prefix cache until it is handed out again.
 *
 * A counted pool keeps only the number of free blocks: where no block can
 * ever be reused (prefix caching off, one full-attention group, no
 * offloading), which block a request gets changes nothing but its id, so
 * its table can be a count and allocation an integer subtraction. It
 * allocates none of the arrays below (they stay NULL); kvsim_pool_take and
 * kvsim_pool_give are its whole interface, with the counters and checks. */
#ifndef KVSIM_POOL_H
#define KVSIM_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "kvsim/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t kvsim_block_id;
#define KVSIM_NULL_BLOCK 0
/* The hash of a block cached for a request whose content nobody else can
 * share (no identity given): counted as cached, never in the map. */
#define KVSIM_ANON_HASH 1ull

/* What a block carries in the prefix cache: nothing, an anonymous mark
 * (KVSIM_ANON_HASH), or a hash the map finds it by, stored as
 * KVSIM_BLOCK_HASHED + the map slot that holds the hash. */
enum { KVSIM_BLOCK_UNCACHED = 0, KVSIM_BLOCK_ANON = 1, KVSIM_BLOCK_HASHED = 2 };

/* One record a block: all that taking or releasing it reads and writes,
 * in 16 bytes (four to a cache line) instead of one line in each of four
 * parallel arrays (count, hash, links: 20 bytes). A hashed block's hash
 * is the key in its map slot, so eviction removes it without a probe. */
typedef struct kvsim_pool_block {
  int32_t ref_cnt;
  /* The free queue's links (kvsim_pool_prev/next), -1 = none, 0 = b - 1
   * and b + 1: no link is ever the null block, so the queue a pool
   * starts with, blocks in id order, is all zeros, and a fresh pool's
   * records are calloc's untouched pages instead of a sweep. */
  int32_t prev, next;
  uint32_t cached;    /* KVSIM_BLOCK_UNCACHED, _ANON, or _HASHED + map slot */
} kvsim_pool_block_t;

typedef struct kvsim_pool {
  int32_t num_blocks;      /* including the null block */
  kvsim_pool_block_t *blocks;
  int32_t head, tail;      /* free queue ends, -1 = empty */
  int32_t num_free;        /* blocks in the free queue */
  int32_t num_cached_free; /* of which carry a hash (evictable cache) */
  /* Prefix cache: hash -> block, open addressing with linear probing. */
  uint64_t *map_keys;      /* 0 = empty slot */
  int32_t *map_vals;
  uint32_t map_mask;
  uint32_t map_used;
  int64_t evictions;       /* cached blocks whose hash was dropped on reuse */
  bool counted;            /* no free queue, no ids: num_free is all there is */
} kvsim_pool_t;

int kvsim_pool_init(kvsim_pool_t *p, int32_t num_blocks, kvsim_err *err);
/* A counted pool of num_blocks (the null block included, as above): only
 * kvsim_pool_take/give, the counters and kvsim_pool_check apply. */
int kvsim_pool_init_counted(kvsim_pool_t *p, int32_t num_blocks, kvsim_err *err);
/* The bytes kvsim_pool_init allocates for num_blocks (for memory budgets). */
int64_t kvsim_pool_bytes(int64_t num_blocks);
void kvsim_pool_fini(kvsim_pool_t *p);

/* Blocks a request can be given (the null block excluded). */
static inline int32_t kvsim_pool_usable(const kvsim_pool_t *p) { return p->num_blocks - 1; }
static inline int32_t kvsim_pool_num_free(const kvsim_pool_t *p) { return p->num_free; }
/* vllm:kv_cache_usage_perc as a fraction: cached-but-free blocks count as free. */
static inline double kvsim_pool_usage(const kvsim_pool_t *p) {
  return p->num_blocks > 1 ? 1.0 - (double)p->num_free / (double)(p->num_blocks - 1) : 0.0;
}

/* Counted pool: n blocks leave (the caller checked n <= num_free) or come
 * back (at most the blocks taken). */
static inline void kvsim_pool_take(kvsim_pool_t *p, int32_t n) { p->num_free -= n; }
static inline void kvsim_pool_give(kvsim_pool_t *p, int32_t n) { p->num_free += n; }
/* References held on usable blocks: the sum of the ref counts, or in a counted
 * pool (where no block is shared) the blocks taken. */
int64_t kvsim_pool_refs(const kvsim_pool_t *p);

/* Pops n blocks from the head of the free queue (ref 1 each), evicting any
 * hash they carried. The caller checked n <= num_free. */
void kvsim_pool_alloc(kvsim_pool_t *p, int32_t n, kvsim_block_id *out);

/* kvsim_pool_alloc(p, 1, &b), inline: a decode row's next block
 * (kvsim_kvcache_take_next) is most of the pool's takes, and the call's
 * setup cost more than the take. A head block carrying a findable hash
 * (its eviction edits the map) goes through kvsim_pool_alloc. The caller
 * checked num_free >= 1. */
static inline kvsim_block_id kvsim_pool_alloc_one(kvsim_pool_t *p) {
  kvsim_block_id b = p->head;
  kvsim_pool_block_t *const e = &p->blocks[b];
  if (e->cached >= KVSIM_BLOCK_HASHED) {
    kvsim_pool_alloc(p, 1, &b);
    return b;
  }
  const int32_t nx = e->next ? e->next : b + 1; /* the links as stored: 0 = b + 1 */
  const int32_t was = e->cached != KVSIM_BLOCK_UNCACHED; /* an anonymous mark, evicted */
  e->ref_cnt = 1;
  e->prev = -1;
  e->next = -1;
  e->cached = KVSIM_BLOCK_UNCACHED;
  p->head = nx;
  if (nx >= 0)
    p->blocks[nx].prev = -1;
  else
    p->tail = -1;
  p->num_free--;
  p->num_cached_free -= was;
  p->evictions += was;
  return b;
}

/* Drops one reference; at zero the block goes to the TAIL of the free
 * queue, keeping its hash. Free a request's blocks tail-first so that its
 * last block is evicted before its prefix. */
void kvsim_pool_release(kvsim_pool_t *p, kvsim_block_id b);

/* kvsim_pool_release of ids[len - 1] down to ids[0], null blocks skipped:
 * a whole table, its tail block first. The blocks of entries below
 * anon_upto are first marked cached without a hash
 * (kvsim_pool_cache_anon), in the same pass. */
void kvsim_pool_release_table(kvsim_pool_t *p, const kvsim_block_id *ids, int32_t len,
                              int32_t anon_upto);

/* Takes a reference on a cached block (removing it from the free queue if
 * it was free). */
void kvsim_pool_touch(kvsim_pool_t *p, kvsim_block_id b);

/* Prefix cache. lookup returns the block or -1. cache registers a full
 * block (not cached yet, or anonymous) under its hash unless that hash is
 * already cached. */
kvsim_block_id kvsim_pool_lookup(const kvsim_pool_t *p, uint64_t hash);
void kvsim_pool_cache(kvsim_pool_t *p, kvsim_block_id b, uint64_t hash);
/* Marks a full block cached without a findable hash (KVSIM_ANON_HASH). */
static inline void kvsim_pool_cache_anon(kvsim_pool_t *p, kvsim_block_id b) {
  if (p->blocks[b].cached == KVSIM_BLOCK_UNCACHED)
    p->blocks[b].cached = KVSIM_BLOCK_ANON;
}
/* A walked pool's block b: its references; whether it carries a hash
 * (anonymous or findable); whether that is the anonymous mark. */
static inline int32_t kvsim_pool_ref(const kvsim_pool_t *p, kvsim_block_id b) {
  return p->blocks[b].ref_cnt;
}
static inline int32_t kvsim_pool_prev(const kvsim_pool_t *p, kvsim_block_id b) {
  const int32_t v = p->blocks[b].prev;
  return v ? v : b - 1;
}
static inline int32_t kvsim_pool_next(const kvsim_pool_t *p, kvsim_block_id b) {
  const int32_t v = p->blocks[b].next;
  return v ? v : b + 1;
}
static inline bool kvsim_pool_cached(const kvsim_pool_t *p, kvsim_block_id b) {
  return p->blocks[b].cached != KVSIM_BLOCK_UNCACHED;
}
static inline bool kvsim_pool_anon(const kvsim_pool_t *p, kvsim_block_id b) {
  return p->blocks[b].cached == KVSIM_BLOCK_ANON;
}

/* Checks used + cached + free = total and the queue links (a counted
 * pool: 0 <= free <= usable, nothing cached); returns 0 or a negative code
 * with the first broken rule in err. */
int kvsim_pool_check(const kvsim_pool_t *p, kvsim_err *err);

#ifdef __cplusplus
}
#endif

#endif
