/* vLLM's LoRA adapters at run time: the two LRU caches of the worker (GPU
 * slots, max_loras; host copies, max_cpu_loras) and the time to bring an
 * adapter into a slot. Owned by a replica; the vllm-v1 scheduler uses it
 * for the adapters of each step (sim/src/sched/lora_cache.c). */
#ifndef KVSIM_LORA_H
#define KVSIM_LORA_H

#include <stdint.h>

#include "kvsim/clock.h"
#include "kvsim/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Assumed read rate of an adapter not in the host cache: a local NVMe
 * SSD's sequential read (Samsung 970 EVO Plus datasheet: 3,500 MB/s). The
 * file parsing and pinning vLLM does on top are not counted. */
#define KVSIM_LORA_DISK_GBPS 3.5

typedef struct kvsim_lora_cache {
  int32_t gpu_cap, cpu_cap;  /* max_loras, max_cpu_loras */
  int32_t gpu_n, cpu_n;
  int32_t *gpu_id, *cpu_id;  /* adapter ids (owned) */
  uint64_t *gpu_use, *cpu_use; /* last use stamp: the smallest is the LRU */
  uint64_t clock;
  /* One adapter's bytes on one rank's GPU slot, and its checkpoint read
   * from disk; host link rate (GB/s, one way) and latency (us). */
  int64_t slot_bytes, file_bytes;
  double link_GBps, link_latency_us;
  /* Counters: adapters copied into a GPU slot (activate_adapter), of
   * which read from disk first (not in the host cache), and the time. */
  int64_t loads, cpu_misses;
  double load_s;
} kvsim_lora_cache_t;

/* Capacities >= 1 with cpu_cap >= gpu_cap (LoRAConfig's rule). KVSIM_OK
 * or KVSIM_ENOMEM. */
int kvsim_lora_cache_init(kvsim_lora_cache_t *c, int32_t gpu_cap, int32_t cpu_cap,
                          int64_t slot_bytes, int64_t file_bytes, double link_GBps,
                          double link_latency_us, kvsim_err *err);
void kvsim_lora_cache_fini(kvsim_lora_cache_t *c);

enum { KVSIM_LORA_HIT = 0, KVSIM_LORA_LOADED = 1, KVSIM_LORA_FROM_DISK = 2 };

/* Makes adapter `id` (> 0) resident in a GPU slot, as vLLM's
 * LRUCacheWorkerLoRAManager.add_adapter does: a miss in the host cache
 * reads it from disk (evicting the host LRU, and its GPU slot with it),
 * a hit refreshes it; then a miss in the GPU slots copies it in (evicting
 * the slot LRU). Returns a KVSIM_LORA_* mask; *ns: the time it took. */
int kvsim_lora_cache_use(kvsim_lora_cache_t *c, int32_t id, kvsim_time_ns *ns);

#ifdef __cplusplus
}
#endif

#endif
