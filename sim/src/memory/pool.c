#include "kvsim/pool.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "memory/pool_map.h"

#define MAP_EMPTY KVSIM__POOL_MAP_EMPTY
#define key_of kvsim__pool_key
#define slot_of kvsim__pool_slot

/* The prefix map's slots: load <= 1/4 (1/2 past a million blocks, to
 * bound memory): short probe runs for lookups, inserts and deletions. */
/* The links as stored (pool.h): 0 reads as b - 1 and b + 1; a link
 * written is never 0 (the null block is never queued). */
static inline int32_t get_prev(const kvsim_pool_block_t *blk, kvsim_block_id b) {
  return blk[b].prev ? blk[b].prev : b - 1;
}
static inline int32_t get_next(const kvsim_pool_block_t *blk, kvsim_block_id b) {
  return blk[b].next ? blk[b].next : b + 1;
}
static inline void set_prev(kvsim_pool_block_t *blk, kvsim_block_id b, int32_t v) {
  assert(v != 0);
  blk[b].prev = v;
}
static inline void set_next(kvsim_pool_block_t *blk, kvsim_block_id b, int32_t v) {
  assert(v != 0);
  blk[b].next = v;
}

static uint64_t map_cap(int64_t num_blocks) {
  uint64_t cap = 16;
  uint64_t want = (num_blocks > (1 << 20) ? 2u : 4u) * (uint64_t)num_blocks;
  while (cap < want)
    cap *= 2;
  return cap;
}

int64_t kvsim_pool_bytes(int64_t num_blocks) {
  kvsim_pool_t *p = NULL;
  if (num_blocks < 0)
    return 0;
  uint64_t n = (uint64_t)num_blocks;
  (void)p;
  /* Still the four arrays' 20 bytes a block, so that the memory budget
   * refuses what it refused before this layout; the record is 16. */
  return (int64_t)(n * (3 * sizeof(int32_t) + sizeof(uint64_t)) +
                   map_cap(num_blocks) * (sizeof *p->map_keys + sizeof *p->map_vals));
}

int kvsim_pool_init(kvsim_pool_t *p, int32_t num_blocks, kvsim_err *err) {
  memset(p, 0, sizeof *p);
  if (num_blocks < 2)
    return kvsim_err_set(err, KVSIM_ENOFIT, "KV pool of %d blocks: need at least 2 (one is the null block)",
                         num_blocks);
  p->num_blocks = num_blocks;
  size_t n = (size_t)num_blocks;
  uint32_t cap = (uint32_t)map_cap(num_blocks);
  p->blocks = kvsim__calloc(n, sizeof *p->blocks);
  p->map_keys = kvsim__calloc(cap, sizeof *p->map_keys);
  p->map_vals = kvsim__malloc(cap * sizeof *p->map_vals);
  if (!p->blocks || !p->map_keys || !p->map_vals) {
    kvsim_pool_fini(p);
    return kvsim_err_set(err, KVSIM_ENOMEM, "KV pool of %d blocks: out of memory", num_blocks);
  }
  p->map_mask = cap - 1;
  /* The free queue starts in block-id order; block 0 is popped off as the
   * null block (BlockPool.__init__). */
  kvsim_pool_block_t *const blk = p->blocks;
  blk[0].ref_cnt = 1;
  set_prev(blk, 0, -1);
  set_next(blk, 0, -1);
  set_prev(blk, 1, -1);
  set_next(blk, num_blocks - 1, -1); /* the rest: zeros, b - 1 and b + 1 */
  p->head = 1;
  p->tail = num_blocks - 1;
  p->num_free = num_blocks - 1;
  return KVSIM_OK;
}

int kvsim_pool_init_counted(kvsim_pool_t *p, int32_t num_blocks, kvsim_err *err) {
  memset(p, 0, sizeof *p);
  if (num_blocks < 2)
    return kvsim_err_set(err, KVSIM_ENOFIT,
                         "KV pool of %d blocks: need at least 2 (one is the null block)",
                         num_blocks);
  p->num_blocks = num_blocks;
  p->counted = true;
  p->head = p->tail = -1;
  p->num_free = num_blocks - 1;
  return KVSIM_OK;
}

int64_t kvsim_pool_refs(const kvsim_pool_t *p) {
  if (p->counted)
    return (int64_t)kvsim_pool_usable(p) - p->num_free;
  int64_t n = 0;
  for (int32_t b = 1; b < p->num_blocks; b++)
    n += p->blocks[b].ref_cnt;
  return n;
}

void kvsim_pool_fini(kvsim_pool_t *p) {
  kvsim__free(p->blocks);
  kvsim__free(p->map_keys);
  kvsim__free(p->map_vals);
  memset(p, 0, sizeof *p);
}

/* Linear probing at low load with backward-shift deletion: no
 * tombstones, so probe runs stay short however much the cache churns.
 * Not the core u64 map on purpose: this one never grows (its capacity is
 * fixed by the pool), takes keys that are already block hashes (no mixing
 * in the hot path), removes only the block that owns the entry, and its
 * zero-filled keys let calloc hand out untouched pages, so a 17.7 M-block
 * pool costs no memory until its cache fills. */
kvsim_block_id kvsim_pool_lookup(const kvsim_pool_t *p, uint64_t hash) {
  return kvsim__pool_find(p, hash);
}

/* Takes block b's hash out of the map: b is hashed, so its slot holds
 * its key (the map's owner of a hash is the only block hashed with it). */
static void map_remove(kvsim_pool_t *p, kvsim_block_id b) {
  kvsim_pool_block_t *const blk = p->blocks;
  uint32_t i = blk[b].cached - KVSIM_BLOCK_HASHED;
  assert(i <= p->map_mask && p->map_vals[i] == b && p->map_keys[i] != MAP_EMPTY);
  /* Shift later members of the run back over the hole when their home
   * slot does not lie cyclically in (hole, j]; a moved hash's block
   * follows its slot. */
  uint32_t hole = i;
  for (uint32_t j = (i + 1) & p->map_mask; p->map_keys[j] != MAP_EMPTY; j = (j + 1) & p->map_mask) {
    uint32_t home = slot_of(p, p->map_keys[j]);
    bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (stays)
      continue;
    const kvsim_block_id v = p->map_vals[j];
    p->map_keys[hole] = p->map_keys[j];
    p->map_vals[hole] = v;
    /* Keys 1 (hashes 0 and 1) stay in the map unowned (see
     * kvsim_pool_cache): move a block's slot only if it is this one. */
    if (blk[v].cached == KVSIM_BLOCK_HASHED + j)
      blk[v].cached = KVSIM_BLOCK_HASHED + hole;
    hole = j;
  }
  p->map_keys[hole] = MAP_EMPTY;
  p->map_used--;
}

void kvsim_pool_cache(kvsim_pool_t *p, kvsim_block_id b, uint64_t hash) {
  kvsim_pool_block_t *const e = &p->blocks[b];
  assert(b > 0 && b < p->num_blocks && e->cached <= KVSIM_BLOCK_ANON);
  uint64_t key = key_of(hash);
  uint32_t i = slot_of(p, key);
  for (;; i = (i + 1) & p->map_mask) {
    uint64_t k = p->map_keys[i];
    if (k == key) {
      /* Already cached by another block: this one stays unfindable. */
      if (e->cached == KVSIM_BLOCK_ANON) {
        e->cached = KVSIM_BLOCK_UNCACHED;
        if (e->ref_cnt == 0)
          p->num_cached_free--;
      }
      return;
    }
    if (k == MAP_EMPTY)
      break;
  }
  p->map_keys[i] = key;
  p->map_vals[i] = b;
  p->map_used++;
  /* Hashes 0 and KVSIM_ANON_HASH (both key 1) leave the block uncached or
   * anonymous, as a hash array holding them said: their key is never
   * evicted from the map. */
  if (hash == 0)
    e->cached = KVSIM_BLOCK_UNCACHED;
  else if (hash == KVSIM_ANON_HASH)
    e->cached = KVSIM_BLOCK_ANON;
  else
    e->cached = KVSIM_BLOCK_HASHED + i;
}

/* The free queue, in eviction order (LRU at the head), linked through
 * the records. */
static void queue_remove(kvsim_pool_t *p, kvsim_block_id b) {
  kvsim_pool_block_t *const blk = p->blocks, *const e = &blk[b];
  const int32_t pr = get_prev(blk, b), nx = get_next(blk, b);
  if (pr >= 0)
    set_next(blk, pr, nx);
  else
    p->head = nx;
  if (nx >= 0)
    set_prev(blk, nx, pr);
  else
    p->tail = pr;
  set_prev(blk, b, -1);
  set_next(blk, b, -1);
  p->num_free--;
  if (e->cached)
    p->num_cached_free--;
}

static void queue_push_tail(kvsim_pool_t *p, kvsim_block_id b) {
  kvsim_pool_block_t *const blk = p->blocks;
  set_prev(blk, b, p->tail);
  set_next(blk, b, -1);
  if (p->tail >= 0)
    set_next(blk, p->tail, b);
  else
    p->head = b;
  p->tail = b;
}

/* Pops from the head only, so the run of n blocks is cut off the queue
 * once (not unlinked block by block) and the counters are written once:
 * this runs for every block a request takes. */
void kvsim_pool_alloc(kvsim_pool_t *p, int32_t n, kvsim_block_id *out) {
  assert(!p->counted && n <= p->num_free);
  kvsim_pool_block_t *const blk = p->blocks;
  int32_t b = p->head, cached = 0;
  for (int32_t i = 0; i < n; i++) {
    kvsim_pool_block_t *const e = &blk[b];
    if (e->cached) {
      /* _maybe_evict_cached_block: the block leaves the prefix cache. */
      if (e->cached >= KVSIM_BLOCK_HASHED)
        map_remove(p, b);
      e->cached = KVSIM_BLOCK_UNCACHED;
      cached++;
    }
    e->ref_cnt = 1;
    out[i] = b;
    const int32_t nx = get_next(blk, b);
    set_prev(blk, b, -1);
    set_next(blk, b, -1);
    b = nx;
  }
  p->head = b;
  if (b >= 0)
    set_prev(blk, b, -1);
  else
    p->tail = -1;
  p->num_free -= n;
  p->num_cached_free -= cached;
  p->evictions += cached;
}

void kvsim_pool_release(kvsim_pool_t *p, kvsim_block_id b) {
  assert(!p->counted && b > 0 && b < p->num_blocks && p->blocks[b].ref_cnt > 0);
  if (--p->blocks[b].ref_cnt > 0)
    return;
  queue_push_tail(p, b);
  p->num_free++;
  if (p->blocks[b].cached)
    p->num_cached_free++;
}

void kvsim_pool_release_table(kvsim_pool_t *p, const kvsim_block_id *ids, int32_t len,
                              int32_t anon_upto) {
  assert(!p->counted);
  kvsim_pool_block_t *const blk = p->blocks;
  int32_t tail = p->tail, freed = 0, cached = 0;
  for (int32_t i = len - 1; i >= 0; i--) {
    const kvsim_block_id b = ids[i];
    if (b == KVSIM_NULL_BLOCK)
      continue;
    kvsim_pool_block_t *const e = &blk[b];
    assert(b > 0 && b < p->num_blocks && e->ref_cnt > 0);
    if (i < anon_upto && e->cached == KVSIM_BLOCK_UNCACHED)
      e->cached = KVSIM_BLOCK_ANON; /* kvsim_pool_cache_anon */
    if (--e->ref_cnt > 0)
      continue;
    /* queue_push_tail with the tail in a local */
    set_prev(blk, b, tail);
    set_next(blk, b, -1);
    if (tail >= 0)
      set_next(blk, tail, b);
    else
      p->head = b;
    tail = b;
    freed++;
    cached += e->cached != KVSIM_BLOCK_UNCACHED;
  }
  p->tail = tail;
  p->num_free += freed;
  p->num_cached_free += cached;
}

void kvsim_pool_touch(kvsim_pool_t *p, kvsim_block_id b) {
  assert(!p->counted && b > 0 && b < p->num_blocks);
  if (p->blocks[b].ref_cnt == 0)
    queue_remove(p, b);
  p->blocks[b].ref_cnt++;
}

static int check_counted(const kvsim_pool_t *p, kvsim_err *err) {
  if (p->num_free < 0 || p->num_free > kvsim_pool_usable(p))
    return kvsim_err_set(err, KVSIM_EINVAL, "pool: %d free of %d usable blocks", p->num_free,
                         kvsim_pool_usable(p));
  if (p->num_cached_free != 0 || p->evictions != 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "pool: a counted pool caches nothing (%d cached free, %lld evicted)",
                         p->num_cached_free, (long long)p->evictions);
  return KVSIM_OK;
}

int kvsim_pool_check(const kvsim_pool_t *p, kvsim_err *err) {
  if (p->counted)
    return check_counted(p, err);
  int32_t used = 0, free_n = 0, cached = 0;
  for (int32_t b = 1; b < p->num_blocks; b++) {
    const kvsim_pool_block_t *e = &p->blocks[b];
    if (e->ref_cnt < 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "pool: block %d has ref_cnt %d", b, e->ref_cnt);
    if (e->cached >= KVSIM_BLOCK_HASHED) {
      const uint32_t i = e->cached - KVSIM_BLOCK_HASHED;
      if (i > p->map_mask || p->map_vals[i] != b || p->map_keys[i] == MAP_EMPTY ||
          kvsim_pool_lookup(p, p->map_keys[i]) != b)
        return kvsim_err_set(err, KVSIM_EINVAL,
                             "pool: block %d points at map slot %u, which does not map to it", b,
                             i);
    }
    used += e->ref_cnt > 0;
  }
  int32_t prev = -1;
  for (int32_t b = p->head; b >= 0; b = kvsim_pool_next(p, b)) {
    if (p->blocks[b].ref_cnt != 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "pool: block %d in the free queue with ref_cnt %d", b,
                           p->blocks[b].ref_cnt);
    if (kvsim_pool_prev(p, b) != prev)
      return kvsim_err_set(err, KVSIM_EINVAL, "pool: free queue link broken at block %d", b);
    if (++free_n > p->num_blocks)
      return kvsim_err_set(err, KVSIM_EINVAL, "pool: free queue has a cycle");
    cached += p->blocks[b].cached != KVSIM_BLOCK_UNCACHED;
    prev = b;
  }
  if (prev != p->tail)
    return kvsim_err_set(err, KVSIM_EINVAL, "pool: free queue tail mismatch");
  if (free_n != p->num_free || cached != p->num_cached_free)
    return kvsim_err_set(err, KVSIM_EINVAL, "pool: counters free %d/%d cached %d/%d disagree with the queue",
                         p->num_free, free_n, p->num_cached_free, cached);
  if (used + free_n != p->num_blocks - 1)
    return kvsim_err_set(err, KVSIM_EINVAL, "pool: used %d + free %d != usable %d", used, free_n,
                         p->num_blocks - 1);
  return KVSIM_OK;
}
