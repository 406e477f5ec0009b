/* The CPU tier: KV blocks in host memory, reached over the host link.
 * Two uses: V0 swap preemption (a swapped request owns CPU blocks, no
 * sharing) and the V1 offloading connector (blocks addressed by their
 * prefix hash, LRU eviction; vllm/v1/kv_offload/cpu.py CPUOffloadingSpec
 * and lru_manager.py, vLLM PR #22595). Transfers cost
 * bytes / host-link bandwidth plus a fixed latency. */
#ifndef KVSIM_CPUTIER_H
#define KVSIM_CPUTIER_H

#include <stdbool.h>
#include <stdint.h>

#include "kvsim/clock.h"
#include "kvsim/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvsim_cpu_tier {
  int64_t num_blocks;      /* capacity */
  int64_t swap_used;       /* blocks owned by swapped requests */
  int64_t block_bytes;     /* bytes of one GPU block (all layers of the rank) */
  double link_bytes_per_s; /* host link, one direction */
  double latency_s;        /* per transfer */
  /* Offload cache: hash -> slot (the library's u64 map, private), and
   * an LRU list over slots (head = least recent). */
  uint64_t *keys;          /* per slot; 0 = free slot */
  int32_t *prev, *next;
  int32_t lru_head, lru_tail;
  int32_t *free_slots;
  int64_t nfree;
  struct kvsim__u64map *map; /* NULL: no offload cache */
  int64_t cached;          /* offloaded blocks held */
  /* Counters. */
  int64_t bytes_to_cpu, bytes_to_gpu;
  int64_t stores, evictions, hits;
  double transfer_s;       /* total time spent transferring */
} kvsim_cpu_tier_t;

/* capacity_blocks 0 makes an empty tier (every call is a no-op/miss). */
int kvsim_cpu_tier_init(kvsim_cpu_tier_t *t, int64_t capacity_blocks, int64_t block_bytes,
                        double link_GBps, double latency_us, bool offload_cache, kvsim_err *err);
void kvsim_cpu_tier_fini(kvsim_cpu_tier_t *t);
/* About the bytes kvsim_cpu_tier_init allocates (for memory budgets). */
int64_t kvsim_cpu_tier_bytes(int64_t capacity_blocks, bool offload_cache);

/* Seconds to move n blocks one way (0 for n = 0). */
double kvsim_cpu_tier_transfer_s(const kvsim_cpu_tier_t *t, int64_t n);
static inline kvsim_time_ns kvsim_cpu_tier_transfer_ns(const kvsim_cpu_tier_t *t, int64_t n) {
  return kvsim_time_from_s(kvsim_cpu_tier_transfer_s(t, n));
}

/* Swap: reserve n blocks for a request moving out (false if no room), and
 * release them when it moves back in. Both count bytes and time. */
bool kvsim_cpu_tier_swap_out(kvsim_cpu_tier_t *t, int64_t n);
void kvsim_cpu_tier_swap_in(kvsim_cpu_tier_t *t, int64_t n);

/* Offload cache: store a block (refreshing it if present, evicting the
 * least recently used when full); look one up (refreshing it on a hit). */
void kvsim_cpu_tier_store(kvsim_cpu_tier_t *t, uint64_t hash);
bool kvsim_cpu_tier_lookup(kvsim_cpu_tier_t *t, uint64_t hash);
/* Counts a load of n hit blocks back to the GPU. */
void kvsim_cpu_tier_load(kvsim_cpu_tier_t *t, int64_t n);

/* Fraction of the tier in use (cpu_kv_cache_usage_perc). */
static inline double kvsim_cpu_tier_usage(const kvsim_cpu_tier_t *t) {
  return t->num_blocks > 0 ? (double)(t->swap_used + t->cached) / (double)t->num_blocks : 0.0;
}

/* Used + cached + free = capacity; LRU list and map agree. */
int kvsim_cpu_tier_check(const kvsim_cpu_tier_t *t, kvsim_err *err);

#ifdef __cplusplus
}
#endif

#endif
