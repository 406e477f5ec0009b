/* The KV cache manager's caching of full blocks (cache_full_blocks, which
 * every allocation's step ends with) and the implicit-decode fast paths
 * (sched/v1_implicit.c): a decode row's deferred fill and its next block
 * taken without the general allocation. */
#include "kvsim/kvcache.h"

#include "core/blockhash.h"
#include "memory/kvcache_internal.h"

#include <assert.h>

#define salt kvsim__tenant_salt
#define block_key kvsim__kvcache_block_key

/* Offloads a newly full block, or counts it toward store_threshold. */
static void offload_store(kvsim_kvcache_t *kv, uint64_t hash) {
  if (kv->seen && kv->seen[hash & (KVSIM__KVCACHE_SEEN_SLOTS - 1)] < (uint32_t)kv->store_threshold)
    return;
  kvsim_cpu_tier_store(kv->cpu, hash);
}

void kvsim__kvcache_mark_anon(kvsim_kvcache_t *kv, kvsim_blocks_t *t) {
  const int32_t upto = t->anon_upto < t->len ? t->anon_upto : t->len;
  for (int32_t k = 0; k < upto; k++)
    if (t->ids[k] > 0)
      kvsim_pool_cache_anon(&kv->pool, t->ids[k]);
  t->anon_upto = 0;
}

void kvsim__kvcache_cache_full_blocks(kvsim_kvcache_t *kv, kvsim_request_t *r, int32_t first,
                                      int32_t full) {
  if (r->anon && kv->fast_shift >= 0) {
    /* One full-attention group: a held block's anonymous mark is read by
     * nobody (its hash is in no map, it is never shared or evicted), so it
     * is given when the block is released (kvsim_pool_release_table, or
     * mark_anon before a preemption hashes them), and the table keeps
     * a high-water mark now. That says which blocks only while the marks
     * are one run: blocks between the mark and `first` must be ones this
     * marking would skip (the hit's, with their real hashes). Otherwise
     * this step marks its blocks at once, as before. */
    kvsim_blocks_t *t = &r->blocks[0];
    const int32_t upto = full < t->len ? full : t->len;
    int32_t k = t->anon_upto;
    while (k < first && k < t->len && (t->ids[k] <= 0 || kvsim_pool_cached(&kv->pool, t->ids[k])))
      k++;
    if (k >= first) {
      if (upto > t->anon_upto)
        t->anon_upto = upto;
    } else {
      for (int32_t j = first; j < upto; j++)
        if (t->ids[j] > 0)
          kvsim_pool_cache_anon(&kv->pool, t->ids[j]);
    }
    if (full > r->cached_blocks)
      r->cached_blocks = full;
    return;
  }
  if (r->anon) {
    for (int g = 0; g < kv->num_groups; g++) {
      kvsim_blocks_t *t = &r->blocks[g];
      for (int32_t k = first; k < full && k < t->len; k++)
        if (t->ids[k] > 0)
          kvsim_pool_cache_anon(&kv->pool, t->ids[k]);
    }
    if (full > r->cached_blocks)
      r->cached_blocks = full;
    return;
  }
  full = kvsim__kvcache_ensure_hashes(kv, r, full, kv->block_size);
  for (int g = 0; g < kv->num_groups; g++) {
    kvsim_blocks_t *t = &r->blocks[g];
    for (int32_t k = first; k < full && k < t->len; k++) {
      kvsim_block_id b = t->ids[k];
      if (b > 0 && !kvsim_pool_cached(&kv->pool, b))
        kvsim_pool_cache(&kv->pool, b, block_key(r, k, g));
    }
  }
  if (kv->cpu)
    for (int32_t k = first; k < full; k++)
      offload_store(kv, r->hashes[k] ^ salt(r->spec.tenant));
}

void kvsim_kvcache_filled(kvsim_kvcache_t *kv, kvsim_request_t *r, int32_t block) {
  assert(kvsim_kvcache_fill_deferrable(kv, r) && block >= 0);
  kvsim_blocks_t *t = &r->blocks[0];
  if (t->anon_upto == block && block < t->len) {
    /* cache_full_blocks' anonymous case when the marks are one run up to
     * this block (a decode row's every fill after its first): the mark
     * moves on. */
    t->anon_upto = block + 1;
    if (block + 1 > r->cached_blocks)
      r->cached_blocks = block + 1;
    return;
  }
  /* cache_step of the step that computed the block's last token: first is
   * that token's block, full the block after it (allocate_simple, which
   * allocated nothing: the block was held). */
  kvsim__kvcache_cache_full_blocks(kv, r, block, block + 1);
}

int kvsim_kvcache_take_next(kvsim_kvcache_t *kv, kvsim_request_t *r) {
  const int32_t sh = kv->fast_shift;
  if (sh < 0 || kv->spec_backoff || kvsim_pool_num_free(&kv->pool) < 1)
    return 0;
  kvsim_blocks_t *t = &r->blocks[0];
  const int64_t c = r->num_computed;
  /* allocate_simple's need, c + 1 tokens (below max_model_len), is one
   * block more than the table; its cache_step caches from block c / bs
   * to (c + 1) / bs, the same block: nothing. */
  if (((int64_t)t->len << sh) != c || c + 1 > kv->max_model_len)
    return 0;
  if (kv->pool.counted) {
    kvsim_pool_take(&kv->pool, 1);
    t->len++;
    return 1;
  }
  /* The room allocate_simple reserves: the table's next entry, and the
   * hashes of the blocks full at c + 1 tokens (reserve_step_hashes). */
  if (t->len >= t->cap ||
      (kv->prefix_caching && !r->anon && (c + 1 < r->num_tokens ? c + 1 : r->num_tokens) >> sh > r->hashes_cap))
    return 0;
  t->ids[t->len++] = kvsim_pool_alloc_one(&kv->pool);
  return 1;
}
