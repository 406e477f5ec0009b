#include "kvsim/kvcache.h"

#include "core/alloc.h"
#include "core/arith.h"
#include "core/blockhash.h"
#include "core/vec.h"
#include "memory/hashmemo.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define mix64 kvsim__mix64

#define cdiv kvsim__cdiv

#define salt kvsim__tenant_salt

static uint64_t group_key(uint64_t hash, int g) {
  /* The prefix cache is keyed by (block hash, KV cache group). */
  return g ? mix64(hash + 0x9e3779b97f4a7c15ull * (uint64_t)g) : hash;
}

static uint64_t block_key(const kvsim_request_t *r, int32_t k, int g) {
  return group_key(r->hashes[k] ^ salt(r->spec.tenant), g);
}

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
    kv->residual_blocks = (int32_t)cdiv(pl->residual_bytes_per_request, pl->block_bytes);
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

#define SEEN_SLOTS 65536 /* vLLM's offload tracker keeps 64,000 entries */

int kvsim_kvcache_set_offload(kvsim_kvcache_t *kv, kvsim_cpu_tier_t *cpu, int64_t store_threshold,
                              kvsim_err *err) {
  /* The connector stores and loads blocks by what they hold: real ids. */
  int rc = kvsim_kvcache_walk_blocks(kv, err);
  if (rc < 0)
    return rc;
  kv->cpu = cpu;
  kv->store_threshold = store_threshold;
  if (store_threshold >= 2) {
    kv->seen = kvsim__calloc(SEEN_SLOTS, sizeof *kv->seen);
    if (!kv->seen)
      return kvsim_err_set(err, KVSIM_ENOMEM, "offload tracker: out of memory");
  }
  return KVSIM_OK;
}

/* Offloads a newly full block, or counts it toward store_threshold. */
static void offload_store(kvsim_kvcache_t *kv, uint64_t hash) {
  if (kv->seen && kv->seen[hash & (SEEN_SLOTS - 1)] < (uint32_t)kv->store_threshold)
    return;
  kvsim_cpu_tier_store(kv->cpu, hash);
}

void kvsim_kvcache_fini(kvsim_kvcache_t *kv) {
  kvsim__hmemo_free(kv->hash_memo);
  kvsim__free(kv->seen);
  kvsim_pool_fini(&kv->pool);
  kvsim__free(kv->hit_ids);
  kvsim__free(kv->alloc_tmp);
  memset(kv, 0, sizeof *kv);
}

/* The core array growth for the request's int32 capacities. */
static int grow32(void **p, int32_t *cap, int64_t need, size_t elem) {
  if (need <= *cap)
    return KVSIM_OK;
  if (need > INT32_MAX)
    return KVSIM_ENOMEM;
  int64_t c = *cap;
  if (kvsim__grow(p, &c, need, elem) < 0)
    return KVSIM_ENOMEM;
  *cap = c > INT32_MAX ? INT32_MAX : (int32_t)c;
  return KVSIM_OK;
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
  if (grow32((void **)&r->segs, &r->segs_cap, n, sizeof *r->segs) < 0)
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

/* Room for the hashes of blocks [0, upto): KVSIM_OK or KVSIM_ENOMEM. */
static int reserve_hashes(kvsim_request_t *r, int32_t upto) {
  return grow32((void **)&r->hashes, &r->hashes_cap, upto, sizeof *r->hashes);
}

/* Hashes of full blocks up to block index `upto` (exclusive), in order,
 * into room made by reserve_hashes(r, upto). Returns the number available
 * (fewer past the known tokens). Blocks wholly inside the first segment
 * come from the manager's memo when it has them (hashmemo.h), and those
 * hashed here are offered to it. */
static int32_t ensure_hashes(kvsim_kvcache_t *kv, kvsim_request_t *r, int32_t upto, int32_t bs) {
  if (upto <= r->num_hashes)
    return upto;
  assert(upto <= r->hashes_cap);
  /* The cursor in locals, written back on the way out: stores into
   * r->hashes may alias it, which made the compiler reload it per piece. */
  int32_t nh = r->num_hashes, seg = r->hash_seg;
  int64_t off = r->hash_off;
  const kvsim_segment_t *segs = r->segs;
  const int32_t nsegs = r->num_segs;
  uint64_t *hashes = r->hashes;
  /* In the first segment (the cursor at block nh, offset nh * bs). */
  const bool first = seg == 0 && nsegs > 0 && kv->hash_memo;
  int64_t inside = 0;
  int32_t kept = 0;
  if (first) {
    inside = segs[0].len / bs;
    const uint64_t *h = kvsim__hmemo_get(kv->hash_memo, segs[0].id, &kept);
    int64_t lim = upto < kept ? upto : kept;
    lim = lim < inside ? lim : inside;
    if (lim > nh) {
      memcpy(hashes + nh, h + nh, (size_t)(lim - nh) * sizeof *hashes);
      nh = (int32_t)lim;
      off = (int64_t)nh * bs;
      if (off == segs[0].len) {
        seg = 1;
        off = 0;
      }
    }
  }
  uint64_t x = nh ? hashes[nh - 1] : KVSIM__HASH_NONE;
  while (nh < upto) {
    int64_t need = bs;
    while (need > 0) {
      if (seg >= nsegs) {
        upto = nh; /* past the known tokens: not a full block */
        goto out;
      }
      const kvsim_segment_t *s = &segs[seg];
      int64_t take = s->len - off;
      if (take > need)
        take = need;
      x = kvsim__hash_piece(x, s->id, off, take);
      need -= take;
      off += take;
      if (off == s->len) {
        seg++;
        off = 0;
      }
    }
    x = kvsim__hash_seal(x); /* not 0 or KVSIM_ANON_HASH */
    hashes[nh++] = x;
  }
out:
  r->num_hashes = nh;
  r->hash_seg = seg;
  r->hash_off = off;
  if (first) {
    const int64_t done = nh < inside ? nh : inside;
    if (done > kept)
      kvsim__hmemo_offer(kv->hash_memo, segs[0].id, hashes, (int32_t)done);
  }
  return upto;
}

static int grow_hits(kvsim_kvcache_t *kv, int32_t n) {
  if (n <= kv->hit_cap)
    return KVSIM_OK;
  int32_t cap = kv->hit_cap ? kv->hit_cap : 256;
  while (cap < n)
    cap *= 2;
  kvsim_block_id *h = kvsim__realloc(kv->hit_ids, (size_t)cap * (size_t)kv->num_groups * sizeof *h);
  if (!h)
    return KVSIM_ENOMEM;
  kv->hit_ids = h;
  kv->hit_cap = cap;
  return KVSIM_OK;
}

/* Sliding groups only need the blocks inside the window before the hit
 * point (SlidingWindowManager.find_longest_cache_hit). */
static int32_t window_blocks(const kvsim_kvcache_t *kv, int g) {
  return (int32_t)cdiv(kv->window[g] - 1, kv->block_size);
}

/* Full-attention groups walk the chain from the first block: the hit is
 * the longest run of blocks every full group has cached. */
static int32_t walk_full_groups(kvsim_kvcache_t *kv, const kvsim_request_t *r, int32_t avail) {
  int32_t L = 0;
  while (L < avail) {
    bool ok = true;
    for (int g = 0; g < kv->num_groups && ok; g++) {
      if (kv->sliding[g])
        continue;
      kvsim_block_id b = kvsim_pool_lookup(&kv->pool, block_key(r, L, g));
      ok = b > 0;
      kv->hit_ids[g * kv->hit_cap + L] = b;
    }
    if (!ok)
      break;
    L++;
  }
  return L;
}

/* Sliding groups: shrink the hit L until each has its window's blocks
 * cached before it. */
static int32_t shrink_for_windows(kvsim_kvcache_t *kv, const kvsim_request_t *r, int32_t L) {
  for (int g = 0; g < kv->num_groups; g++) {
    if (!kv->sliding[g])
      continue;
    for (;;) {
      int32_t from = L - window_blocks(kv, g);
      if (from < 0)
        from = 0;
      int32_t k = L - 1;
      for (; k >= from; k--) {
        kvsim_block_id b = kvsim_pool_lookup(&kv->pool, block_key(r, k, g));
        if (b <= 0)
          break;
        kv->hit_ids[g * kv->hit_cap + k] = b;
      }
      if (k < from)
        break;
      L = k; /* retry with the hit ending before the missing block */
    }
    int32_t from = L - window_blocks(kv, g);
    for (int32_t k = 0; k < from; k++)
      kv->hit_ids[g * kv->hit_cap + k] = KVSIM_NULL_BLOCK;
  }
  return L;
}

/* What isolation costs: the blocks after the hit that another tenant's
 * identical content has cached (group 0, the first full group). An
 * estimate over the cache as it is. */
static void tally_isolation(kvsim_kvcache_t *kv, const kvsim_request_t *r, int32_t L, int32_t avail) {
  int32_t X = L;
  for (; X < avail; X++) {
    bool any = false;
    for (int32_t t = 0; t <= kv->max_tenant && !any; t++)
      any = t != r->spec.tenant && kvsim_pool_lookup(&kv->pool, group_key(r->hashes[X] ^ salt(t), 0)) > 0;
    if (!any)
      break;
  }
  kv->isolation_lost += (int64_t)(X - L) * kv->block_size;
}

/* The connector continues where the GPU cache stops (it matches only
 * blocks the GPU does not have; num_external_computed_tokens). */
static void lookup_external(kvsim_kvcache_t *kv, const kvsim_request_t *r, int32_t L, int32_t avail) {
  int32_t E = 0;
  if (kv->seen)
    for (int32_t k = 0; k < avail; k++)
      kv->seen[(r->hashes[k] ^ salt(r->spec.tenant)) & (SEEN_SLOTS - 1)]++;
  while (L + E < avail && kvsim_cpu_tier_lookup(kv->cpu, r->hashes[L + E] ^ salt(r->spec.tenant)))
    E++;
  kv->ext_blocks = E;
  kv->ext_queries += r->num_tokens - (int64_t)L * kv->block_size;
  kv->ext_hits += (int64_t)E * kv->block_size;
}

int64_t kvsim_kvcache_lookup(kvsim_kvcache_t *kv, kvsim_request_t *r, bool preempted) {
  kv->hit_req = r;
  kv->hit_blocks = 0;
  if (!kv->prefix_caching)
    return 0;
  int32_t bs = kv->block_size;
  if (r->anon && !preempted) {
    kv->queries += r->num_tokens; /* a unique prompt: nothing to find */
    return 0;
  }
  /* max_cache_hit_length = num_tokens - 1: the last token is recomputed. */
  int32_t max_blocks = (int32_t)((r->num_tokens - 1) / bs);
  if (reserve_hashes(r, max_blocks) < 0 || grow_hits(kv, max_blocks) < 0)
    return KVSIM_ENOMEM;
  int32_t avail = ensure_hashes(kv, r, max_blocks, bs);
  int32_t L = walk_full_groups(kv, r, avail);
  /* EAGLE-style drafters (eagle, eagle3, mtp) need the target's hidden
   * state of the last hit position, so the hit gives back its last block
   * to be recomputed (FullAttentionManager.find_longest_cache_hit:
   * "if use_eagle and computed_blocks[0]: ... pop()"). */
  if (kv->drop_last_hit && L > 0)
    L--;
  L = shrink_for_windows(kv, r, L);
  kv->hit_blocks = L;
  kv->ext_blocks = 0;
  if (r->spec.tenant > kv->max_tenant)
    kv->max_tenant = r->spec.tenant;
  if (kv->max_tenant > 0 && !preempted)
    tally_isolation(kv, r, L, avail);
  if (kv->cpu)
    lookup_external(kv, r, L, avail);
  /* vllm:prefix_cache_hits counts the GPU cache; the connector's hits go
   * to vllm:external_prefix_cache_hits. Lookups of previously preempted
   * requests are tallied apart (PrefixCacheStats.record, vllm/v1/metrics/
   * stats.py), so a resumed request re-hitting its own blocks does not
   * inflate the hit rate. Like get_computed_blocks, every lookup counts,
   * including a blocked head of the waiting queue looked up again. */
  int64_t local = (int64_t)L * bs;
  if (preempted) {
    kv->preempted_queries += r->num_tokens;
    kv->preempted_hits += local;
  } else {
    kv->queries += r->num_tokens;
    kv->hits += local;
  }
  return local + (int64_t)kv->ext_blocks * bs;
}

/* Appends to a table whose room reserve_table made. */
static void blocks_push(kvsim_blocks_t *t, kvsim_block_id b) {
  assert(t->len < t->cap);
  t->ids[t->len++] = b;
}

static int reserve_table(kvsim_blocks_t *t, int64_t need) {
  return grow32((void **)&t->ids, &t->cap, need, sizeof *t->ids);
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

/* The anonymous marks a one-group table defers (anon_upto), given to its
 * blocks: those below it without a hash, as cache_full_blocks would have
 * marked them step by step. The blocks above the hit were allocated with
 * no hash and nothing else hashes them while the request holds them
 * (nobody can find them); the hit blocks below carry their real hashes. */
static void mark_anon(kvsim_kvcache_t *kv, kvsim_blocks_t *t) {
  const int32_t upto = t->anon_upto < t->len ? t->anon_upto : t->len;
  for (int32_t k = 0; k < upto; k++)
    if (t->ids[k] > 0)
      kvsim_pool_cache_anon(&kv->pool, t->ids[k]);
  t->anon_upto = 0;
}

static void cache_full_blocks(kvsim_kvcache_t *kv, kvsim_request_t *r, int32_t first, int32_t full) {
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
  full = ensure_hashes(kv, r, full, kv->block_size);
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
  cache_full_blocks(kv, r, block, block + 1);
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
  kvsim_pool_alloc(&kv->pool, 1, t->ids + t->len);
  t->len++;
  return 1;
}

/* The hash room a step's caching needs: blocks full once tokens up to
 * `upto_tokens` are computed (anonymous prompts are cached unhashed). */
static int reserve_step_hashes(const kvsim_kvcache_t *kv, kvsim_request_t *r, int64_t upto_tokens) {
  if (!kv->prefix_caching || r->anon)
    return KVSIM_OK;
  if (upto_tokens > r->num_tokens)
    upto_tokens = r->num_tokens;
  return reserve_hashes(r, (int32_t)(upto_tokens / kv->block_size));
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
    cache_full_blocks(kv, r, first, full);
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
      int32_t from = hits - window_blocks(kv, g);
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
  int32_t target = (int32_t)cdiv(need_slots, bs);
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
    if (reserve_hashes(r, r->cached_blocks) < 0)
      return KVSIM_ENOMEM;
    int32_t full = ensure_hashes(kv, r, r->cached_blocks, kv->block_size);
    if (r->blocks[0].anon_upto)
      mark_anon(kv, &r->blocks[0]);
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

bool kvsim_kvcache_block_cached(const kvsim_kvcache_t *kv, const kvsim_request_t *r, int g,
                                int32_t k) {
  const kvsim_blocks_t *t = &r->blocks[g];
  if (kv->pool.counted || k < 0 || k >= t->len || t->ids[k] <= 0)
    return false;
  return kvsim_pool_cached(&kv->pool, t->ids[k]) || k < t->anon_upto;
}

int64_t kvsim_kvcache_held(const kvsim_kvcache_t *kv, const kvsim_request_t *r) {
  int64_t n = 0;
  int tables = kv->num_groups + (kv->residual_blocks ? 1 : 0);
  for (int g = 0; g < tables; g++)
    n += r->blocks[g].len - r->blocks[g].num_skipped;
  return n;
}
