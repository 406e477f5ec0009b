#include "kvsim/pool.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/ilist.h"

#define MAP_EMPTY 0ull

/* Block hashes are never 0 (the map's empty marker). */
static uint64_t key_of(uint64_t h) { return h ? h : 1; }

/* The prefix map's slots: load <= 1/4 (1/2 past a million blocks, to
 * bound memory): short probe runs for lookups, inserts and deletions. */
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
  return (int64_t)(n * (sizeof *p->ref_cnt + sizeof *p->hash + sizeof *p->prev + sizeof *p->next) +
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
  p->ref_cnt = kvsim__calloc(n, sizeof *p->ref_cnt);
  p->hash = kvsim__calloc(n, sizeof *p->hash);
  p->prev = kvsim__malloc(n * sizeof *p->prev);
  p->next = kvsim__malloc(n * sizeof *p->next);
  p->map_keys = kvsim__calloc(cap, sizeof *p->map_keys);
  p->map_vals = kvsim__malloc(cap * sizeof *p->map_vals);
  if (!p->ref_cnt || !p->hash || !p->prev || !p->next || !p->map_keys || !p->map_vals) {
    kvsim_pool_fini(p);
    return kvsim_err_set(err, KVSIM_ENOMEM, "KV pool of %d blocks: out of memory", num_blocks);
  }
  p->map_mask = cap - 1;
  /* The free queue starts in block-id order; block 0 is popped off as the
   * null block (BlockPool.__init__). */
  for (int32_t i = 1; i < num_blocks; i++) {
    p->prev[i] = i - 1 >= 1 ? i - 1 : -1;
    p->next[i] = i + 1 < num_blocks ? i + 1 : -1;
  }
  p->prev[0] = p->next[0] = -1;
  p->ref_cnt[0] = 1;
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
    n += p->ref_cnt[b];
  return n;
}

void kvsim_pool_fini(kvsim_pool_t *p) {
  kvsim__free(p->ref_cnt);
  kvsim__free(p->hash);
  kvsim__free(p->prev);
  kvsim__free(p->next);
  kvsim__free(p->map_keys);
  kvsim__free(p->map_vals);
  memset(p, 0, sizeof *p);
}

static uint32_t slot_of(const kvsim_pool_t *p, uint64_t key) {
  /* The key is already a well-mixed hash; fold the high bits in anyway. */
  return (uint32_t)(key ^ (key >> 29)) & p->map_mask;
}

/* Linear probing at low load with backward-shift deletion: no
 * tombstones, so probe runs stay short however much the cache churns.
 * Not the core u64 map on purpose: this one never grows (its capacity is
 * fixed by the pool), takes keys that are already block hashes (no mixing
 * in the hot path), removes only the block that owns the entry, and its
 * zero-filled keys let calloc hand out untouched pages, so a 17.7 M-block
 * pool costs no memory until its cache fills. */
kvsim_block_id kvsim_pool_lookup(const kvsim_pool_t *p, uint64_t hash) {
  uint64_t key = key_of(hash);
  for (uint32_t i = slot_of(p, key);; i = (i + 1) & p->map_mask) {
    uint64_t k = p->map_keys[i];
    if (k == MAP_EMPTY)
      return -1;
    if (k == key)
      return p->map_vals[i];
  }
}

static void map_remove(kvsim_pool_t *p, uint64_t hash, kvsim_block_id b) {
  uint64_t key = key_of(hash);
  uint32_t i = slot_of(p, key);
  for (;; i = (i + 1) & p->map_mask) {
    uint64_t k = p->map_keys[i];
    if (k == MAP_EMPTY)
      return;
    if (k == key)
      break;
  }
  if (p->map_vals[i] != b)
    return;
  /* Shift later members of the run back over the hole when their home
   * slot does not lie cyclically in (hole, j]. */
  uint32_t hole = i;
  for (uint32_t j = (i + 1) & p->map_mask; p->map_keys[j] != MAP_EMPTY; j = (j + 1) & p->map_mask) {
    uint32_t home = slot_of(p, p->map_keys[j]);
    bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (stays)
      continue;
    p->map_keys[hole] = p->map_keys[j];
    p->map_vals[hole] = p->map_vals[j];
    hole = j;
  }
  p->map_keys[hole] = MAP_EMPTY;
  p->map_used--;
}

void kvsim_pool_cache(kvsim_pool_t *p, kvsim_block_id b, uint64_t hash) {
  assert(b > 0 && b < p->num_blocks && (p->hash[b] == 0 || p->hash[b] == KVSIM_ANON_HASH));
  uint64_t key = key_of(hash);
  uint32_t i = slot_of(p, key);
  for (;; i = (i + 1) & p->map_mask) {
    uint64_t k = p->map_keys[i];
    if (k == key) {
      /* Already cached by another block: this one stays unfindable. */
      if (p->hash[b] == KVSIM_ANON_HASH) {
        p->hash[b] = 0;
        if (p->ref_cnt[b] == 0)
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
  p->hash[b] = hash;
}

/* The free queue, in eviction order (LRU at the head). */
static kvsim__ilist_t free_queue(kvsim_pool_t *p) {
  return (kvsim__ilist_t){p->prev, p->next, &p->head, &p->tail};
}

static void queue_remove(kvsim_pool_t *p, kvsim_block_id b) {
  kvsim__ilist_unlink(free_queue(p), b);
  p->num_free--;
  if (p->hash[b])
    p->num_cached_free--;
}

/* Pops from the head only, so the run of n blocks is cut off the queue
 * once (not unlinked block by block) and the counters are written once:
 * this runs for every block a request takes. */
void kvsim_pool_alloc(kvsim_pool_t *p, int32_t n, kvsim_block_id *out) {
  assert(!p->counted && n <= p->num_free);
  int32_t *const next = p->next, *const prev = p->prev, *const ref = p->ref_cnt;
  uint64_t *const hash = p->hash;
  int32_t b = p->head, cached = 0;
  for (int32_t i = 0; i < n; i++) {
    const uint64_t h = hash[b];
    if (h) {
      /* _maybe_evict_cached_block: the block leaves the prefix cache. */
      if (h != KVSIM_ANON_HASH)
        map_remove(p, h, b);
      hash[b] = 0;
      cached++;
    }
    ref[b] = 1;
    out[i] = b;
    const int32_t nx = next[b];
    prev[b] = next[b] = -1;
    b = nx;
  }
  p->head = b;
  if (b >= 0)
    prev[b] = -1;
  else
    p->tail = -1;
  p->num_free -= n;
  p->num_cached_free -= cached;
  p->evictions += cached;
}

void kvsim_pool_release(kvsim_pool_t *p, kvsim_block_id b) {
  assert(!p->counted && b > 0 && b < p->num_blocks && p->ref_cnt[b] > 0);
  if (--p->ref_cnt[b] > 0)
    return;
  kvsim__ilist_push_tail(free_queue(p), b);
  p->num_free++;
  if (p->hash[b])
    p->num_cached_free++;
}

void kvsim_pool_release_table(kvsim_pool_t *p, const kvsim_block_id *ids, int32_t len,
                              int32_t anon_upto) {
  assert(!p->counted);
  int32_t *const next = p->next, *const prev = p->prev, *const ref = p->ref_cnt;
  uint64_t *const hash = p->hash;
  int32_t tail = p->tail, freed = 0, cached = 0;
  for (int32_t i = len - 1; i >= 0; i--) {
    const kvsim_block_id b = ids[i];
    if (b == KVSIM_NULL_BLOCK)
      continue;
    assert(b > 0 && b < p->num_blocks && ref[b] > 0);
    if (i < anon_upto && hash[b] == 0)
      hash[b] = KVSIM_ANON_HASH; /* kvsim_pool_cache_anon */
    if (--ref[b] > 0)
      continue;
    /* kvsim__ilist_push_tail with the tail in a local */
    prev[b] = tail;
    next[b] = -1;
    if (tail >= 0)
      next[tail] = b;
    else
      p->head = b;
    tail = b;
    freed++;
    cached += hash[b] != 0;
  }
  p->tail = tail;
  p->num_free += freed;
  p->num_cached_free += cached;
}

void kvsim_pool_touch(kvsim_pool_t *p, kvsim_block_id b) {
  assert(!p->counted && b > 0 && b < p->num_blocks);
  if (p->ref_cnt[b] == 0)
    queue_remove(p, b);
  p->ref_cnt[b]++;
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
    if (p->ref_cnt[b] < 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "pool: block %d has ref_cnt %d", b, p->ref_cnt[b]);
    used += p->ref_cnt[b] > 0;
  }
  int32_t prev = -1;
  for (int32_t b = p->head; b >= 0; b = p->next[b]) {
    if (p->ref_cnt[b] != 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "pool: block %d in the free queue with ref_cnt %d", b,
                           p->ref_cnt[b]);
    if (p->prev[b] != prev)
      return kvsim_err_set(err, KVSIM_EINVAL, "pool: free queue link broken at block %d", b);
    if (++free_n > p->num_blocks)
      return kvsim_err_set(err, KVSIM_EINVAL, "pool: free queue has a cycle");
    cached += p->hash[b] != 0;
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
  for (int32_t b = 1; b < p->num_blocks; b++)
    if (p->hash[b] && p->hash[b] != KVSIM_ANON_HASH && kvsim_pool_lookup(p, p->hash[b]) != b)
      return kvsim_err_set(err, KVSIM_EINVAL, "pool: block %d carries a hash the cache does not map to it", b);
  return KVSIM_OK;
}
