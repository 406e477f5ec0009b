#include "kvsim/cputier.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/u64map.h"
#include "core/ilist.h"

int kvsim_cpu_tier_init(kvsim_cpu_tier_t *t, int64_t capacity_blocks, int64_t block_bytes,
                        double link_GBps, double latency_us, bool offload_cache, kvsim_err *err) {
  memset(t, 0, sizeof *t);
  t->lru_head = t->lru_tail = -1;
  if (capacity_blocks < 0 || capacity_blocks > INT32_MAX / 8)
    return kvsim_err_set(err, KVSIM_EINVAL, "CPU tier of %lld blocks is out of range",
                         (long long)capacity_blocks);
  t->num_blocks = capacity_blocks;
  t->block_bytes = block_bytes;
  t->link_bytes_per_s = link_GBps * 1e9;
  t->latency_s = latency_us * 1e-6;
  if (!offload_cache || capacity_blocks == 0)
    return KVSIM_OK;
  size_t n = (size_t)capacity_blocks;
  t->keys = kvsim__calloc(n, sizeof *t->keys);
  t->prev = kvsim__malloc(n * sizeof *t->prev);
  t->next = kvsim__malloc(n * sizeof *t->next);
  t->free_slots = kvsim__malloc(n * sizeof *t->free_slots);
  t->map = kvsim__malloc(sizeof *t->map);
  /* Room for every slot: the map never grows, so a store cannot fail. */
  if (t->map && kvsim__u64map_init(t->map, capacity_blocks) < 0) {
    kvsim__free(t->map);
    t->map = NULL;
  }
  if (!t->keys || !t->prev || !t->next || !t->free_slots || !t->map) {
    kvsim_cpu_tier_fini(t);
    return kvsim_err_set(err, KVSIM_ENOMEM, "CPU tier of %lld blocks: out of memory",
                         (long long)capacity_blocks);
  }
  for (int64_t i = 0; i < capacity_blocks; i++)
    t->free_slots[t->nfree++] = (int32_t)(capacity_blocks - 1 - i);
  return KVSIM_OK;
}

int64_t kvsim_cpu_tier_bytes(int64_t capacity_blocks, bool offload_cache) {
  if (!offload_cache || capacity_blocks <= 0 || capacity_blocks > INT32_MAX / 8)
    return 0;
  kvsim_cpu_tier_t *t = NULL;
  int64_t map = 16; /* kvsim__u64map_init's slots: twice the entries, a power of 2 */
  while (map < 2 * capacity_blocks)
    map *= 2;
  return capacity_blocks * (int64_t)(sizeof *t->keys + sizeof *t->prev + sizeof *t->next +
                                     sizeof *t->free_slots) +
         map * (int64_t)(sizeof(uint64_t) + sizeof(int32_t));
}

void kvsim_cpu_tier_fini(kvsim_cpu_tier_t *t) {
  kvsim__free(t->keys);
  kvsim__free(t->prev);
  kvsim__free(t->next);
  kvsim__free(t->free_slots);
  if (t->map)
    kvsim__u64map_fini(t->map);
  kvsim__free(t->map);
  memset(t, 0, sizeof *t);
}

double kvsim_cpu_tier_transfer_s(const kvsim_cpu_tier_t *t, int64_t n) {
  if (n <= 0 || t->link_bytes_per_s <= 0)
    return 0;
  return t->latency_s + (double)(n * t->block_bytes) / t->link_bytes_per_s;
}

bool kvsim_cpu_tier_swap_out(kvsim_cpu_tier_t *t, int64_t n) {
  if (t->swap_used + t->cached + n > t->num_blocks)
    return false;
  t->swap_used += n;
  t->bytes_to_cpu += n * t->block_bytes;
  t->transfer_s += kvsim_cpu_tier_transfer_s(t, n);
  return true;
}

void kvsim_cpu_tier_swap_in(kvsim_cpu_tier_t *t, int64_t n) {
  t->swap_used -= n;
  t->bytes_to_gpu += n * t->block_bytes;
  t->transfer_s += kvsim_cpu_tier_transfer_s(t, n);
}

/* The offloaded slots, least recently used at the head. */
static kvsim__ilist_t lru(kvsim_cpu_tier_t *t) {
  return (kvsim__ilist_t){t->prev, t->next, &t->lru_head, &t->lru_tail};
}

static void lru_unlink(kvsim_cpu_tier_t *t, int32_t s) { kvsim__ilist_unlink(lru(t), s); }
static void lru_push(kvsim_cpu_tier_t *t, int32_t s) { kvsim__ilist_push_tail(lru(t), s); }

static uint64_t key_of(uint64_t h) { return h ? h : 1; }

void kvsim_cpu_tier_store(kvsim_cpu_tier_t *t, uint64_t hash) {
  if (!t->map)
    return;
  uint64_t k = key_of(hash);
  int32_t s = kvsim__u64map_get(t->map, k);
  if (s >= 0) { /* already offloaded: refresh */
    lru_unlink(t, s);
    lru_push(t, s);
    return;
  }
  /* Make room: evict least recently used offloaded blocks (swap space in
   * use is never evicted). */
  while (t->swap_used + t->cached >= t->num_blocks && t->lru_head >= 0) {
    int32_t old = t->lru_head;
    kvsim__u64map_del(t->map, t->keys[old]);
    lru_unlink(t, old);
    t->keys[old] = 0;
    t->free_slots[t->nfree++] = old;
    t->cached--;
    t->evictions++;
  }
  if (t->swap_used + t->cached >= t->num_blocks || t->nfree == 0)
    return;
  s = t->free_slots[--t->nfree];
  t->keys[s] = k;
  lru_push(t, s);
  int rc = kvsim__u64map_put(t->map, k, s);
  assert(rc == KVSIM_OK); /* sized for every slot at init */
  (void)rc;
  t->cached++;
  t->stores++;
  t->bytes_to_cpu += t->block_bytes;
  t->transfer_s += kvsim_cpu_tier_transfer_s(t, 1) - t->latency_s;
}

bool kvsim_cpu_tier_lookup(kvsim_cpu_tier_t *t, uint64_t hash) {
  if (!t->map)
    return false;
  int32_t s = kvsim__u64map_get(t->map, key_of(hash));
  if (s < 0)
    return false;
  lru_unlink(t, s);
  lru_push(t, s);
  return true;
}

void kvsim_cpu_tier_load(kvsim_cpu_tier_t *t, int64_t n) {
  t->hits += n;
  t->bytes_to_gpu += n * t->block_bytes;
  t->transfer_s += kvsim_cpu_tier_transfer_s(t, n);
}

int kvsim_cpu_tier_check(const kvsim_cpu_tier_t *t, kvsim_err *err) {
  if (t->swap_used < 0 || t->cached < 0 || t->swap_used + t->cached > t->num_blocks)
    return kvsim_err_set(err, KVSIM_EINVAL, "CPU tier: swap %lld + cached %lld exceed %lld blocks",
                         (long long)t->swap_used, (long long)t->cached, (long long)t->num_blocks);
  if (!t->map)
    return KVSIM_OK;
  int64_t n = 0;
  for (int32_t s = t->lru_head, prev = -1; s >= 0; prev = s, s = t->next[s]) {
    if (t->prev[s] != prev || !t->keys[s] || kvsim__u64map_get(t->map, t->keys[s]) != s)
      return kvsim_err_set(err, KVSIM_EINVAL, "CPU tier: LRU slot %d is inconsistent", s);
    if (++n > t->num_blocks)
      return kvsim_err_set(err, KVSIM_EINVAL, "CPU tier: LRU list has a cycle");
  }
  if (n != t->cached || n + t->nfree != t->num_blocks)
    return kvsim_err_set(err, KVSIM_EINVAL, "CPU tier: %lld cached + %lld free slots != %lld",
                         (long long)n, (long long)t->nfree, (long long)t->num_blocks);
  return KVSIM_OK;
}
