/* The KV cache manager's allocation and release: allocate_slots' paths
 * (a counted pool, the common one-group table, the general path with
 * hits, sliding windows and residual blocks), all or nothing, and freeing
 * a finished or a preempted request's blocks tail first. */
#include "kvsim/kvcache.h"

#include "core/arith.h"
#include "memory/kvcache_internal.h"

#include <assert.h>

#define block_key kvsim__kvcache_block_key

/* Appends to a table whose room reserve_table made. */
static void blocks_push(kvsim_blocks_t *t, kvsim_block_id b) {
  assert(t->len < t->cap);
  t->ids[t->len++] = b;
}

static int reserve_table(kvsim_blocks_t *t, int64_t need) {
  return kvsim__kvcache_grow32((void **)&t->ids, &t->cap, need, sizeof *t->ids);
}

/* Sliding window: how many of group g's first blocks lie wholly before the
 * window of the token after `computed` (SlidingWindowManager.
 * remove_skipped_blocks / get_num_skipped_tokens). */
static int32_t skip_blocks(const kvsim_kvcache_t *kv, int g, int64_t computed) {
  int64_t skipped_tokens = computed - kv->window[g] + 1;
  return skipped_tokens > 0 ? (int32_t)(skipped_tokens / kv->block_size) : 0;
}

/* Those blocks are released and replaced by the null block. */
static void remove_skipped(kvsim_kvcache_t *kv, kvsim_request_t *r, int64_t computed) {
  for (int g = 0; g < kv->num_groups; g++) {
    if (!kv->sliding[g])
      continue;
    kvsim_blocks_t *t = &r->blocks[g];
    int32_t skip = skip_blocks(kv, g, computed);
    if (skip > t->len)
      skip = t->len;
    /* Release from the newest skipped block backwards, like a tail-first free. */
    for (int32_t i = skip - 1; i >= t->num_skipped; i--) {
      if (t->ids[i] != KVSIM_NULL_BLOCK)
        kvsim_pool_release(&kv->pool, t->ids[i]);
      t->ids[i] = KVSIM_NULL_BLOCK;
    }
    if (skip > t->num_skipped)
      t->num_skipped = skip;
  }
}

/* The hash room a step's caching needs: blocks full once tokens up to
 * `upto_tokens` are computed (anonymous prompts are cached unhashed). */
static int reserve_step_hashes(const kvsim_kvcache_t *kv, kvsim_request_t *r, int64_t upto_tokens) {
  if (!kv->prefix_caching || r->anon)
    return KVSIM_OK;
  if (upto_tokens > r->num_tokens)
    upto_tokens = r->num_tokens;
  return kvsim__kvcache_reserve_hashes(r, (int32_t)(upto_tokens / kv->block_size));
}

/* The first block a step caches: the one holding num_computed, or with
 * speculative decoding an earlier one still uncached. A verify step moves
 * num_computed by up to k + 1 tokens, past the end of a block its
 * accepted drafts filled; vLLM caches that block at the next allocate
 * (cache_blocks goes on from num_cached_block), so the step looks back
 * over at most spec_backoff tokens for blocks without a hash. */
static int32_t first_to_cache(const kvsim_kvcache_t *kv, const kvsim_request_t *r) {
  int32_t first = (int32_t)(r->num_computed / kv->block_size);
  if (!kv->spec_backoff)
    return first;
  const int64_t from = r->num_computed > kv->spec_backoff ? r->num_computed - kv->spec_backoff : 0;
  const int32_t lo = (int32_t)(from / kv->block_size);
  if (r->anon) { /* cached unhashed: cached_blocks says how far */
    const int32_t c = r->cached_blocks > lo ? r->cached_blocks : lo;
    return c < first ? c : first;
  }
  const kvsim_blocks_t *t = &r->blocks[0];
  while (first > lo && first - 1 < t->len && t->ids[first - 1] > 0 &&
         !kvsim_pool_cached(&kv->pool, t->ids[first - 1]))
    first--;
  return first;
}

/* Caches the blocks that are full once tokens up to `upto_tokens` are
 * computed (draft tokens never: at most num_tokens; the prompt only when
 * the profile caches prompts only), from the first uncached one, and not
 * below `min_first` (a hit's blocks are cached already). */
static inline void cache_step(kvsim_kvcache_t *kv, kvsim_request_t *r, int64_t upto_tokens, int32_t min_first) {
  if (!kv->prefix_caching)
    return;
  if (upto_tokens > r->num_tokens)
    upto_tokens = r->num_tokens;
  if (kv->cache_prompt_only && upto_tokens > r->num_prompt)
    upto_tokens = r->num_prompt;
  int32_t full = (int32_t)(upto_tokens / kv->block_size);
  int32_t first = first_to_cache(kv, r);
  if (min_first > first)
    first = min_first;
  if (full > first)
    kvsim__kvcache_cache_full_blocks(kv, r, first, full);
}

/* The common case (one full-attention group, no prefix hit, no residual
 * blocks): a decode step usually fits in the last block. */
static int allocate_simple(kvsim_kvcache_t *kv, kvsim_request_t *r, int64_t num_new,
                           int64_t num_lookahead) {
  const int32_t bs = kv->block_size;
  kvsim_blocks_t *t = &r->blocks[0];
  int64_t need = r->num_computed + num_new + num_lookahead;
  if (need > kv->max_model_len)
    need = kv->max_model_len;
  int32_t n = (int32_t)((need + bs - 1) / bs) - t->len;
  if (n > 0) {
    if (n > kvsim_pool_num_free(&kv->pool))
      return 0;
    /* Reserve first, then commit: nothing below can fail. */
    if (reserve_table(t, (int64_t)t->len + n) < 0 ||
        reserve_step_hashes(kv, r, r->num_computed + num_new) < 0)
      return KVSIM_ENOMEM;
    kvsim_pool_alloc(&kv->pool, n, t->ids + t->len);
    t->len += n;
  } else if (reserve_step_hashes(kv, r, r->num_computed + num_new) < 0) {
    return KVSIM_ENOMEM;
  }
  cache_step(kv, r, r->num_computed + num_new, 0);
  return 1;
}

/* A counted pool (prefix caching off, one full-attention group): the
 * table is its length, allocation a subtraction. The same blocks, limit
 * and refusal as allocate_simple, which then neither hashes nor caches. */
static int allocate_counted(kvsim_kvcache_t *kv, kvsim_request_t *r, int64_t num_new,
                            int64_t num_lookahead) {
  const int32_t bs = kv->block_size;
  kvsim_blocks_t *t = &r->blocks[0];
  int64_t need = r->num_computed + num_new + num_lookahead;
  if (need > kv->max_model_len)
    need = kv->max_model_len;
  int32_t n = (int32_t)((need + bs - 1) / bs) - t->len;
  if (n > 0) {
    if (n > kvsim_pool_num_free(&kv->pool))
      return 0;
    kvsim_pool_take(&kv->pool, n);
    t->len += n;
  }
  return 1;
}

/* Blocks the general path must take off the free queue: each group's new
 * blocks up to `target` (less those wholly outside a sliding window from
 * the start, which are never allocated) plus hit blocks that are free
 * (evictable) right now. */
static int64_t blocks_to_take(const kvsim_kvcache_t *kv, const kvsim_request_t *r, int32_t hits,
                              int32_t target, int64_t computed) {
  int64_t take = 0;
  for (int g = 0; g < kv->num_groups; g++) {
    const kvsim_blocks_t *t = &r->blocks[g];
    int32_t have = t->len > hits ? t->len : hits;
    if (target > have) {
      int32_t n = target - have;
      if (kv->sliding[g]) {
        int32_t skip = skip_blocks(kv, g, computed);
        if (skip > have)
          n -= (skip < target ? skip : target) - have;
      }
      take += n;
    }
    for (int32_t k = 0; k < hits; k++) {
      kvsim_block_id b = kv->hit_ids[g * kv->hit_cap + k];
      if (b > 0 && kvsim_pool_ref(&kv->pool, b) == 0)
        take++;
    }
  }
  return take;
}

/* Puts the lookup's hit blocks at the head of each empty table, touched
 * first so that the allocation that follows cannot evict them. */
static void take_hits(kvsim_kvcache_t *kv, kvsim_request_t *r, int32_t hits) {
  for (int g = 0; g < kv->num_groups && hits; g++) {
    kvsim_blocks_t *t = &r->blocks[g];
    assert(t->len == 0);
    for (int32_t k = 0; k < hits; k++) {
      kvsim_block_id b = kv->hit_ids[g * kv->hit_cap + k];
      if (b > 0)
        kvsim_pool_touch(&kv->pool, b);
      blocks_push(t, b);
    }
    if (kv->sliding[g]) {
      int32_t from = hits - kvsim__kvcache_window_blocks(kv, g);
      t->num_skipped = from > 0 ? from : 0;
    }
  }
}

/* Grows every table to `target` blocks; a sliding group's blocks before
 * its window get the null block instead of a real one. */
static void fill_tables(kvsim_kvcache_t *kv, kvsim_request_t *r, int32_t target, int64_t computed) {
  for (int g = 0; g < kv->num_groups; g++) {
    kvsim_blocks_t *t = &r->blocks[g];
    if (!kv->sliding[g]) {
      /* No null block among them: the run off the queue's head in one
       * call, the blocks the loop below takes one at a time, in order. */
      if (target > t->len) {
        assert(target <= t->cap);
        kvsim_pool_alloc(&kv->pool, target - t->len, t->ids + t->len);
        t->len = target;
      }
      continue;
    }
    const int32_t skip = skip_blocks(kv, g, computed);
    while (t->len < target) {
      kvsim_block_id b = KVSIM_NULL_BLOCK;
      bool skipped = t->len < skip;
      if (skipped && t->num_skipped < t->len + 1)
        t->num_skipped = t->len + 1;
      if (!skipped)
        kvsim_pool_alloc(&kv->pool, 1, &b);
      blocks_push(t, b);
    }
  }
}

int kvsim_kvcache_allocate(kvsim_kvcache_t *kv, kvsim_request_t *r, int64_t hit_tokens,
                           int64_t num_new, int64_t num_lookahead) {
  const int32_t bs = kv->block_size;
  if (kv->pool.counted)
    return allocate_counted(kv, r, num_new, num_lookahead); /* no hits without a prefix cache */
  if (hit_tokens == 0 && kv->num_groups == 1 && !kv->sliding[0] && !kv->residual_blocks)
    return allocate_simple(kv, r, num_new, num_lookahead);
  int32_t hits = hit_tokens > 0 && kv->hit_req == r ? kv->hit_blocks : 0;
  int32_t ext = hit_tokens > 0 && kv->hit_req == r ? kv->ext_blocks : 0;
  int64_t computed = r->num_computed + (int64_t)(hits + ext) * bs;
  if (computed > kv->max_model_len)
    computed = kv->max_model_len;
  int64_t need_slots = computed + num_new + num_lookahead;
  if (need_slots > kv->max_model_len)
    need_slots = kv->max_model_len;
  int32_t target = (int32_t)kvsim__cdiv(need_slots, bs);
  kvsim_blocks_t *res = &r->blocks[kv->num_groups];
  int32_t res_new = kv->residual_blocks && res->len == 0 ? kv->residual_blocks : 0;

  /* Reserve first, then commit: every table's room and the hashes of the
   * blocks this step fills, before any block changes hands. */
  for (int g = 0; g < kv->num_groups; g++) {
    const kvsim_blocks_t *t = &r->blocks[g];
    int64_t room = target > hits ? target : hits;
    if (reserve_table(&r->blocks[g], room > t->len ? room : t->len) < 0)
      return KVSIM_ENOMEM;
  }
  if ((res_new && reserve_table(res, (int64_t)res->len + res_new) < 0) ||
      reserve_step_hashes(kv, r, computed + num_new) < 0)
    return KVSIM_ENOMEM;

  kv->last_loaded = 0;
  if (!hits)
    remove_skipped(kv, r, r->num_computed);
  if (blocks_to_take(kv, r, hits, target, computed) + res_new > kvsim_pool_num_free(&kv->pool))
    return 0;
  while (res_new-- > 0) {
    kvsim_block_id b;
    kvsim_pool_alloc(&kv->pool, 1, &b);
    blocks_push(res, b);
  }
  take_hits(kv, r, hits);
  if (hits)
    remove_skipped(kv, r, computed);
  fill_tables(kv, r, target, computed);
  kv->hit_req = NULL;
  kv->hit_blocks = 0;
  kv->ext_blocks = 0;
  if (ext) {
    kv->last_loaded = ext;
    kvsim_cpu_tier_load(kv->cpu, ext);
  }
  cache_step(kv, r, computed + num_new, hits);
  return 1;
}

int kvsim_kvcache_free_preempted(kvsim_kvcache_t *kv, kvsim_request_t *r) {
  if (r->anon && r->cached_blocks > 0) {
    /* Give the anonymous blocks their hashes now: the resumed request may
     * find them again if they are not evicted first. */
    if (kvsim__kvcache_reserve_hashes(r, r->cached_blocks) < 0)
      return KVSIM_ENOMEM;
    int32_t full = kvsim__kvcache_ensure_hashes(kv, r, r->cached_blocks, kv->block_size);
    if (r->blocks[0].anon_upto)
      kvsim__kvcache_mark_anon(kv, &r->blocks[0]);
    for (int g = 0; g < kv->num_groups; g++) {
      kvsim_blocks_t *t = &r->blocks[g];
      for (int32_t k = 0; k < full && k < t->len; k++) {
        kvsim_block_id b = t->ids[k];
        if (b > 0 && kvsim_pool_anon(&kv->pool, b))
          kvsim_pool_cache(&kv->pool, b, block_key(r, k, g));
      }
    }
  }
  kvsim_kvcache_free(kv, r);
  return KVSIM_OK;
}

void kvsim_kvcache_free(kvsim_kvcache_t *kv, kvsim_request_t *r) {
  if (kv->pool.counted) { /* one table, no null blocks in it */
    kvsim_pool_give(&kv->pool, r->blocks[0].len);
    r->blocks[0].len = 0;
    r->blocks[0].num_skipped = 0;
    if (kv->hit_req == r)
      kv->hit_req = NULL;
    return;
  }
  int tables = kv->num_groups + (kv->residual_blocks ? 1 : 0);
  for (int g = 0; g < tables; g++) {
    kvsim_blocks_t *t = &r->blocks[g];
    /* SingleTypeKVCacheManager.free: reversed(req_blocks), so the tail
     * block reaches the free queue first and is evicted first. */
    kvsim_pool_release_table(&kv->pool, t->ids, t->len, t->anon_upto); /* and the deferred marks */
    t->len = 0;
    t->anon_upto = 0;
    t->num_skipped = 0;
  }
  if (kv->hit_req == r)
    kv->hit_req = NULL;
}
