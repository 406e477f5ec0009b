#include "kvsim/cputier.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

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
  uint32_t cap = 16;
  while (cap < 4u * (uint32_t)capacity_blocks)
    cap *= 2;
  t->keys = kvsim__calloc(n, sizeof *t->keys);
  t->prev = kvsim__malloc(n * sizeof *t->prev);
  t->next = kvsim__malloc(n * sizeof *t->next);
  t->free_slots = kvsim__malloc(n * sizeof *t->free_slots);
  t->map_keys = kvsim__calloc(cap, sizeof *t->map_keys);
  t->map_vals = kvsim__malloc(cap * sizeof *t->map_vals);
  if (!t->keys || !t->prev || !t->next || !t->free_slots || !t->map_keys || !t->map_vals) {
    kvsim_cpu_tier_fini(t);
    return kvsim_err_set(err, KVSIM_ENOMEM, "CPU tier of %lld blocks: out of memory",
                         (long long)capacity_blocks);
  }
  t->map_mask = cap - 1;
  for (int64_t i = 0; i < capacity_blocks; i++)
    t->free_slots[t->nfree++] = (int32_t)(capacity_blocks - 1 - i);
  return KVSIM_OK;
}

void kvsim_cpu_tier_fini(kvsim_cpu_tier_t *t) {
  kvsim__free(t->keys);
  kvsim__free(t->prev);
  kvsim__free(t->next);
  kvsim__free(t->free_slots);
  kvsim__free(t->map_keys);
  kvsim__free(t->map_vals);
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

static uint32_t home(const kvsim_cpu_tier_t *t, uint64_t k) {
  return (uint32_t)(k ^ (k >> 29)) & t->map_mask;
}

static int32_t map_find(const kvsim_cpu_tier_t *t, uint64_t k, uint32_t *at) {
  for (uint32_t i = home(t, k);; i = (i + 1) & t->map_mask) {
    if (t->map_keys[i] == 0)
      return -1;
    if (t->map_keys[i] == k) {
      if (at)
        *at = i;
      return t->map_vals[i];
    }
  }
}

static void map_del(kvsim_cpu_tier_t *t, uint32_t hole) {
  for (uint32_t j = (hole + 1) & t->map_mask; t->map_keys[j]; j = (j + 1) & t->map_mask) {
    uint32_t h = home(t, t->map_keys[j]);
    bool stays = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
    if (stays)
      continue;
    t->map_keys[hole] = t->map_keys[j];
    t->map_vals[hole] = t->map_vals[j];
    hole = j;
  }
  t->map_keys[hole] = 0;
}

static void lru_unlink(kvsim_cpu_tier_t *t, int32_t s) {
  if (t->prev[s] >= 0)
    t->next[t->prev[s]] = t->next[s];
  else
    t->lru_head = t->next[s];
  if (t->next[s] >= 0)
    t->prev[t->next[s]] = t->prev[s];
  else
    t->lru_tail = t->prev[s];
}

static void lru_push(kvsim_cpu_tier_t *t, int32_t s) {
  t->prev[s] = t->lru_tail;
  t->next[s] = -1;
  if (t->lru_tail >= 0)
    t->next[t->lru_tail] = s;
  else
    t->lru_head = s;
  t->lru_tail = s;
}

static uint64_t key_of(uint64_t h) { return h ? h : 1; }

void kvsim_cpu_tier_store(kvsim_cpu_tier_t *t, uint64_t hash) {
  if (!t->map_keys)
    return;
  uint64_t k = key_of(hash);
  int32_t s = map_find(t, k, NULL);
  if (s >= 0) { /* already offloaded: refresh */
    lru_unlink(t, s);
    lru_push(t, s);
    return;
  }
  /* Make room: evict least recently used offloaded blocks (swap space in
   * use is never evicted). */
  while (t->swap_used + t->cached >= t->num_blocks && t->lru_head >= 0) {
    int32_t old = t->lru_head;
    uint32_t at = 0;
    map_find(t, t->keys[old], &at);
    map_del(t, at);
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
  uint32_t i = home(t, k);
  while (t->map_keys[i])
    i = (i + 1) & t->map_mask;
  t->map_keys[i] = k;
  t->map_vals[i] = s;
  t->cached++;
  t->stores++;
  t->bytes_to_cpu += t->block_bytes;
  t->transfer_s += kvsim_cpu_tier_transfer_s(t, 1) - t->latency_s;
}

bool kvsim_cpu_tier_lookup(kvsim_cpu_tier_t *t, uint64_t hash) {
  if (!t->map_keys)
    return false;
  int32_t s = map_find(t, key_of(hash), NULL);
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
  if (!t->map_keys)
    return KVSIM_OK;
  int64_t n = 0;
  for (int32_t s = t->lru_head, prev = -1; s >= 0; prev = s, s = t->next[s]) {
    if (t->prev[s] != prev || !t->keys[s] || map_find(t, t->keys[s], NULL) != s)
      return kvsim_err_set(err, KVSIM_EINVAL, "CPU tier: LRU slot %d is inconsistent", s);
    if (++n > t->num_blocks)
      return kvsim_err_set(err, KVSIM_EINVAL, "CPU tier: LRU list has a cycle");
  }
  if (n != t->cached || n + t->nfree != t->num_blocks)
    return kvsim_err_set(err, KVSIM_EINVAL, "CPU tier: %lld cached + %lld free slots != %lld",
                         (long long)n, (long long)t->nfree, (long long)t->num_blocks);
  return KVSIM_OK;
}
