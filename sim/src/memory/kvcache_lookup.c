/* The KV cache manager's prefix hashing and lookups: the request's block
 * hashes (from the memo for a shared first segment, hashmemo.h), and
 * get_computed_blocks' longest cache hit over full-attention and sliding
 * groups, its isolation tally and the CPU tier's continuation. */
#include "kvsim/kvcache.h"

#include "core/alloc.h"
#include "core/blockhash.h"
#include "memory/hashmemo.h"
#include "memory/kvcache_internal.h"
#include "memory/pool_map.h"

#include <assert.h>
#include <string.h>

#define salt kvsim__tenant_salt
#define group_key kvsim__kvcache_group_key
#define block_key kvsim__kvcache_block_key

int32_t kvsim__kvcache_ensure_hashes(kvsim_kvcache_t *kv, kvsim_request_t *r, int32_t upto,
                                     int32_t bs) {
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

/* Full-attention groups walk the chain from the first block: the hit is
 * the longest run of blocks every full group has cached. */
static int32_t walk_full_groups(kvsim_kvcache_t *kv, const kvsim_request_t *r, int32_t avail) {
  if (kv->num_groups == 1 && !kv->sliding[0]) {
    /* One full-attention group (group 0's key is the salted hash): the
     * same probes and hit_ids as below, the probe inline. */
    const uint64_t s = salt(r->spec.tenant);
    const uint64_t *h = r->hashes;
    kvsim_block_id *ids = kv->hit_ids;
    int32_t L = 0;
    for (; L < avail; L++) {
      const kvsim_block_id b = kvsim__pool_find(&kv->pool, h[L] ^ s);
      ids[L] = b;
      if (b <= 0)
        break;
    }
    return L;
  }
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
      int32_t from = L - kvsim__kvcache_window_blocks(kv, g);
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
    int32_t from = L - kvsim__kvcache_window_blocks(kv, g);
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
      kv->seen[(r->hashes[k] ^ salt(r->spec.tenant)) & (KVSIM__KVCACHE_SEEN_SLOTS - 1)]++;
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
  if (kvsim__kvcache_reserve_hashes(r, max_blocks) < 0 || grow_hits(kv, max_blocks) < 0)
    return KVSIM_ENOMEM;
  int32_t avail = kvsim__kvcache_ensure_hashes(kv, r, max_blocks, bs);
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
