/* vLLM's adapter caches (kvsim/lora.h). The worker keeps two LRUs
 * (vllm/lora/worker_manager.py LRUCacheWorkerLoRAManager over
 * vllm/lora/model_manager.py LRUCacheLoRAModelManager):
 * _registered_adapters, capacity max_cpu_loras, adapters loaded from disk
 * into host memory (_load_adapter -> LoRAModel.from_local_checkpoint on
 * "cpu"), and _active_adapters, capacity max_loras (lora_slots), the
 * adapters copied into the preallocated GPU slots (activate_adapter ->
 * set_lora on every wrapped layer). add_adapter loads a missing adapter,
 * evicting the host LRU (remove_oldest_adapter; remove_adapter also
 * deactivates it), or touches a present one, then activates it, evicting
 * the slot LRU when the slots are full. Capacities are small (at most
 * KVSIM_MAX_LORAS): linear scans. A use that finds its adapter in a slot
 * (every request of a running adapter, every step) scans only the
 * max_loras slots: the host stamp of an adapter in a slot is its slot's
 * (an adapter gets a slot only through the host cache, and every use
 * touches both), read back when the host cache picks its LRU, which
 * happens only on a read from disk. */
#include "kvsim/lora.h"

#include <string.h>

#include "core/alloc.h"

int kvsim_lora_cache_init(kvsim_lora_cache_t *c, int32_t gpu_cap, int32_t cpu_cap,
                          int64_t slot_bytes, int64_t file_bytes, double link_GBps,
                          double link_latency_us, kvsim_err *err) {
  memset(c, 0, sizeof *c);
  if (gpu_cap < 1)
    gpu_cap = 1;
  if (cpu_cap < gpu_cap)
    cpu_cap = gpu_cap;
  c->gpu_cap = gpu_cap;
  c->cpu_cap = cpu_cap;
  c->gpu_id = kvsim__calloc((size_t)gpu_cap, sizeof *c->gpu_id);
  c->cpu_id = kvsim__calloc((size_t)cpu_cap, sizeof *c->cpu_id);
  c->gpu_use = kvsim__calloc((size_t)gpu_cap, sizeof *c->gpu_use);
  c->cpu_use = kvsim__calloc((size_t)cpu_cap, sizeof *c->cpu_use);
  if (!c->gpu_id || !c->cpu_id || !c->gpu_use || !c->cpu_use) {
    kvsim_lora_cache_fini(c);
    return kvsim_err_set(err, KVSIM_ENOMEM, "LoRA adapter cache: out of memory");
  }
  c->slot_bytes = slot_bytes;
  c->file_bytes = file_bytes;
  c->link_GBps = link_GBps;
  c->link_latency_us = link_latency_us;
  return KVSIM_OK;
}

void kvsim_lora_cache_fini(kvsim_lora_cache_t *c) {
  kvsim__free(c->gpu_id);
  kvsim__free(c->cpu_id);
  kvsim__free(c->gpu_use);
  kvsim__free(c->cpu_use);
  memset(c, 0, sizeof *c);
}

static int32_t find(const int32_t *ids, int32_t n, int32_t id) {
  for (int32_t i = 0; i < n; i++)
    if (ids[i] == id)
      return i;
  return -1;
}

/* The host cache's LRU: each adapter's last use, its slot's when it has one. */
static int32_t cpu_lru(const kvsim_lora_cache_t *c) {
  int32_t best = 0;
  uint64_t best_use = UINT64_MAX;
  for (int32_t i = 0; i < c->cpu_n; i++) {
    uint64_t u = c->cpu_use[i];
    int32_t g = find(c->gpu_id, c->gpu_n, c->cpu_id[i]);
    if (g >= 0 && c->gpu_use[g] > u)
      u = c->gpu_use[g];
    if (u < best_use) {
      best_use = u;
      best = i;
    }
  }
  return best;
}

static int32_t lru(const uint64_t *use, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (use[i] < use[best])
      best = i;
  return best;
}

static void drop(int32_t *ids, uint64_t *use, int32_t *n, int32_t i) {
  (*n)--;
  ids[i] = ids[*n];
  use[i] = use[*n];
}

int kvsim_lora_cache_use(kvsim_lora_cache_t *c, int32_t id, kvsim_time_ns *ns) {
  int mask = KVSIM_LORA_HIT;
  double s = 0;
  uint64_t now = ++c->clock;
  int32_t g = find(c->gpu_id, c->gpu_n, id);
  if (g >= 0) {
    c->gpu_use[g] = now; /* and so its host stamp (cpu_lru) */
    *ns = 0;
    return KVSIM_LORA_HIT;
  }
  int32_t i = find(c->cpu_id, c->cpu_n, id);
  if (i < 0) {
    if (c->cpu_n == c->cpu_cap) {
      int32_t v = cpu_lru(c);
      /* LoRAModelManager.remove_adapter deactivates it first. */
      int32_t gv = find(c->gpu_id, c->gpu_n, c->cpu_id[v]);
      if (gv >= 0)
        drop(c->gpu_id, c->gpu_use, &c->gpu_n, gv);
      drop(c->cpu_id, c->cpu_use, &c->cpu_n, v);
    }
    i = c->cpu_n++;
    c->cpu_id[i] = id;
    s += (double)c->file_bytes / (KVSIM_LORA_DISK_GBPS * 1e9);
    c->cpu_misses++;
    mask |= KVSIM_LORA_FROM_DISK;
  }
  c->cpu_use[i] = now;
  if (c->gpu_n == c->gpu_cap) {
    /* The evicted slot's stamp goes back to its host entry. */
    int32_t v = lru(c->gpu_use, c->gpu_n);
    int32_t h = find(c->cpu_id, c->cpu_n, c->gpu_id[v]);
    if (h >= 0 && c->gpu_use[v] > c->cpu_use[h])
      c->cpu_use[h] = c->gpu_use[v];
    drop(c->gpu_id, c->gpu_use, &c->gpu_n, v);
  }
  g = c->gpu_n++;
  c->gpu_id[g] = id;
  if (c->link_GBps > 0)
    s += (double)c->slot_bytes / (c->link_GBps * 1e9) + c->link_latency_us * 1e-6;
  c->loads++;
  mask |= KVSIM_LORA_LOADED;
  c->gpu_use[g] = now;
  c->load_s += s;
  *ns = kvsim_time_from_s(s);
  return mask;
}
