/* The KV cache manager (kvsim/kvcache.h), its setup and queries: the
 * manager's tables from the plan, offloading's tracker, a request's
 * segments made ready for hashing, and what a request holds. The rest of
 * the manager lives beside it, one job a file (kvcache_internal.h). */
#include "kvsim/kvcache.h"

#include "core/alloc.h"
#include "core/arith.h"
#include "memory/hashmemo.h"
#include "memory/kvcache_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

int kvsim_kvcache_init(kvsim_kvcache_t *kv, const kvsim_plan_t *pl, int64_t num_blocks,
                       bool prefix_caching, kvsim_err *err) {
  memset(kv, 0, sizeof *kv);
  kv->fast_shift = -1; /* until the groups are known (below) */
  if (num_blocks > INT32_MAX)
    return kvsim_err_set(err, KVSIM_EUNSUP, "KV pool of %lld blocks is too large", (long long)num_blocks);
  /* Counted until the groups are known (below): the same check of the
   * size, without the free queue's arrays that counting never reads. */
  int rc = kvsim_pool_init_counted(&kv->pool, (int32_t)num_blocks, err);
  if (rc < 0)
    return rc;
  kv->block_size = pl->p.block_size;
  kv->bs_shift = -1;
  for (int32_t k = 0; k < 31; k++)
    if ((1 << k) == kv->block_size)
      kv->bs_shift = k;
  kv->num_groups = pl->num_groups;
  if (kv->num_groups > KVSIM_MAX_KV_GROUPS)
    return kvsim_err_set(err, KVSIM_EUNSUP, "%d KV cache groups exceed %d", kv->num_groups,
                         KVSIM_MAX_KV_GROUPS);
  for (int g = 0; g < kv->num_groups; g++) {
    kv->sliding[g] = pl->groups[g].sliding && pl->p.engine == KVSIM_PLAN_V1;
    kv->window[g] = pl->groups[g].window;
  }
  kv->max_model_len = pl->p.max_model_len;
  kv->prefix_caching = prefix_caching;
  if (pl->residual_bytes_per_request > 0 && pl->block_bytes > 0) {
    if (kv->num_groups >= KVSIM_MAX_KV_GROUPS)
      return kvsim_err_set(err, KVSIM_EUNSUP, "no room for the residual window's block table");
    kv->residual_blocks = (int32_t)kvsim__cdiv(pl->residual_bytes_per_request, pl->block_bytes);
  }
  const bool one_full_group = kv->num_groups == 1 && !kv->sliding[0] && !kv->residual_blocks;
  kv->fast_shift = one_full_group ? kv->bs_shift : -1;
  /* Only an optimization: without memory for it, every block is hashed. */
  kv->hash_memo = prefix_caching ? kvsim__hmemo_new() : NULL;
  /* No block can be reused without prefix caching: nothing is looked up,
   * nothing cached, nothing touched, so a block's id is never read again
   * and a count does (allocate_counted). Sliding windows (null blocks
   * inside a table), several groups and the residual table keep ids;
   * so does offloading (kvsim_kvcache_walk_blocks, from set_offload). */
  if (!(one_full_group && !prefix_caching))
    return kvsim_kvcache_walk_blocks(kv, err);
  return KVSIM_OK;
}

int kvsim_kvcache_walk_blocks(kvsim_kvcache_t *kv, kvsim_err *err) {
  if (!kv->pool.counted)
    return KVSIM_OK;
  assert(kv->pool.num_free == kvsim_pool_usable(&kv->pool)); /* before any allocation */
  int32_t n = kv->pool.num_blocks;
  kvsim_pool_fini(&kv->pool);
  return kvsim_pool_init(&kv->pool, n, err);
}

int kvsim_kvcache_set_offload(kvsim_kvcache_t *kv, kvsim_cpu_tier_t *cpu, int64_t store_threshold,
                              kvsim_err *err) {
  /* The connector stores and loads blocks by what they hold: real ids. */
  int rc = kvsim_kvcache_walk_blocks(kv, err);
  if (rc < 0)
    return rc;
  kv->cpu = cpu;
  kv->store_threshold = store_threshold;
  if (store_threshold >= 2) {
    kv->seen = kvsim__calloc(KVSIM__KVCACHE_SEEN_SLOTS, sizeof *kv->seen);
    if (!kv->seen)
      return kvsim_err_set(err, KVSIM_ENOMEM, "offload tracker: out of memory");
  }
  return KVSIM_OK;
}

void kvsim_kvcache_fini(kvsim_kvcache_t *kv) {
  kvsim__hmemo_free(kv->hash_memo);
  kvsim__free(kv->seen);
  kvsim_pool_fini(&kv->pool);
  kvsim__free(kv->hit_ids);
  kvsim__free(kv->alloc_tmp);
  memset(kv, 0, sizeof *kv);
}

int kvsim_kvcache_prepare(kvsim_kvcache_t *kv, kvsim_request_t *r) {
  r->num_hashes = 0;
  r->hash_seg = 0;
  r->hash_off = 0;
  r->num_segs = 0;
  r->cached_blocks = 0;
  r->anon = false;
  if (!kv->prefix_caching)
    return KVSIM_OK;
  /* Offloading stores blocks by hash as they fill, so it hashes everything. */
  r->anon = r->spec.num_segments == 0 && !kv->cpu;
  int32_t n = (r->spec.num_segments > 0 ? r->spec.num_segments : 1) + 1;
  if (kvsim__kvcache_grow32((void **)&r->segs, &r->segs_cap, n, sizeof *r->segs) < 0)
    return KVSIM_ENOMEM;
  if (r->spec.num_segments > 0) {
    memcpy(r->segs, r->spec.segments, (size_t)r->spec.num_segments * sizeof *r->segs);
    r->num_segs = r->spec.num_segments;
  } else {
    /* A prompt without identity is one segment of its own. */
    r->segs[0] = (kvsim_segment_t){kvsim_unique_segment_id(r->spec.id), r->spec.prompt_tokens};
    r->num_segs = 1;
  }
  r->segs[r->num_segs++] =
      (kvsim_segment_t){kvsim_output_segment_id(r->spec.id), r->spec.output_tokens};
  r->spec.segments = NULL; /* the source's buffer is gone after this call */
  return KVSIM_OK;
}

bool kvsim_kvcache_block_cached(const kvsim_kvcache_t *kv, const kvsim_request_t *r, int g,
                                int32_t k) {
  const kvsim_blocks_t *t = &r->blocks[g];
  if (kv->pool.counted || k < 0 || k >= t->len || t->ids[k] <= 0)
    return false;
  return kvsim_pool_cached(&kv->pool, t->ids[k]) || k < t->anon_upto;
}

int64_t kvsim_kvcache_tracker_bytes(void) {
  return (int64_t)KVSIM__KVCACHE_SEEN_SLOTS * (int64_t)sizeof(((kvsim_kvcache_t *)0)->seen[0]);
}

int64_t kvsim_kvcache_held(const kvsim_kvcache_t *kv, const kvsim_request_t *r) {
  int64_t n = 0;
  int tables = kv->num_groups + (kv->residual_blocks ? 1 : 0);
  for (int g = 0; g < tables; g++)
    n += r->blocks[g].len - r->blocks[g].num_skipped;
  return n;
}
