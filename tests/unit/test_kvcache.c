#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/blockhash.h"
#include "kvsim/kvcache.h"
#include "kvsim/workload.h"
#include "memory/hashmemo.h"
#include "memory/kvcache_internal.h"

/* A pool of `blocks` blocks of 4 tokens, one full-attention group. */
static void make(kvsim_kvcache_t *kv, int32_t blocks, bool caching, int64_t window) {
  kvsim_plan_t pl;
  memset(&pl, 0, sizeof pl);
  pl.p.engine = KVSIM_PLAN_V1;
  pl.p.block_size = 4;
  pl.p.max_model_len = 1 << 20;
  pl.num_groups = 1;
  pl.groups[0].sliding = window > 0;
  pl.groups[0].window = window;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_kvcache_init(kv, &pl, blocks, caching, &err), KVSIM_OK, "init: %s", err.msg);
}

/* A request whose prompt is the given segments. */
static kvsim_request_t *req(kvsim_kvcache_t *kv, uint64_t id, const kvsim_segment_t *segs, int n,
                            int64_t output, int32_t tenant) {
  kvsim_request_t *r = calloc(1, sizeof *r);
  int64_t prompt = 0;
  for (int i = 0; i < n; i++)
    prompt += segs[i].len;
  r->spec.id = id;
  r->spec.prompt_tokens = prompt;
  r->spec.output_tokens = output;
  r->spec.tenant = tenant;
  r->spec.segments = segs;
  r->spec.num_segments = n;
  r->num_prompt = r->num_tokens = prompt;
  cr_assert_eq(kvsim_kvcache_prepare(kv, r), KVSIM_OK, "prepare");
  return r;
}

static void drop(kvsim_request_t *r) {
  free(r->blocks[0].ids);
  free(r->hashes);
  free(r->segs);
  free(r);
}

/* Schedules the whole prompt at once, like an admitted request. */
static int64_t admit(kvsim_kvcache_t *kv, kvsim_request_t *r) {
  int64_t hit = kvsim_kvcache_lookup(kv, r, false);
  cr_assert(kvsim_kvcache_allocate(kv, r, hit, r->num_tokens - hit, 0), "allocation fits");
  r->num_computed = r->num_tokens;
  return hit;
}

static void check(kvsim_kvcache_t *kv) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_pool_check(&kv->pool, &err), KVSIM_OK, "pool: %s", err.msg);
}

Test(kvcache, shared_prefix_hits_whole_blocks_by_chain) {
  kvsim_kvcache_t kv;
  make(&kv, 64, true, 0);
  kvsim_segment_t a[] = {{100, 10}, {1, 6}};
  kvsim_segment_t b[] = {{100, 10}, {2, 6}};
  kvsim_request_t *r1 = req(&kv, 1, a, 2, 4, 0), *r2 = req(&kv, 2, b, 2, 4, 0);
  cr_assert_eq(admit(&kv, r1), 0, "nothing cached yet");
  /* 10 shared tokens = 2 full blocks of 4; block 3 mixes in the unique part. */
  cr_assert_eq(admit(&kv, r2), 8, "hit = the 2 full blocks of the shared 10 tokens");
  cr_assert_eq(r2->blocks[0].ids[0], r1->blocks[0].ids[0], "hit blocks are shared, not copied");
  cr_assert_eq(kvsim_pool_ref(&kv.pool, r1->blocks[0].ids[0]), 2,
               "a shared block counts both holders");
  cr_assert_eq(kv.queries, 32, "queries count prompt tokens (16 + 16)");
  cr_assert_eq(kv.hits, 8, "hits count tokens");
  check(&kv);
  kvsim_kvcache_free(&kv, r1);
  cr_assert_eq(kvsim_pool_ref(&kv.pool, r2->blocks[0].ids[0]), 1,
               "freeing one holder keeps the block");
  kvsim_kvcache_free(&kv, r2);
  check(&kv);
  drop(r1), drop(r2);
  kvsim_kvcache_fini(&kv);
}

Test(kvcache, a_hit_needs_the_whole_chain_from_the_first_block) {
  kvsim_kvcache_t kv;
  make(&kv, 64, true, 0);
  kvsim_segment_t a[] = {{5, 4}, {6, 4}, {7, 4}};
  kvsim_segment_t b[] = {{9, 4}, {6, 4}, {7, 4}}; /* same later blocks, different first */
  kvsim_request_t *r1 = req(&kv, 1, a, 3, 1, 0), *r2 = req(&kv, 2, b, 3, 1, 0);
  admit(&kv, r1);
  cr_assert_eq(admit(&kv, r2), 0, "later blocks do not hit after a different first block");
  drop(r1), drop(r2);
  kvsim_kvcache_fini(&kv);
}

Test(kvcache, the_last_prompt_token_is_always_recomputed) {
  kvsim_kvcache_t kv;
  make(&kv, 64, true, 0);
  kvsim_segment_t a[] = {{5, 12}};
  kvsim_request_t *r1 = req(&kv, 1, a, 1, 1, 0), *r2 = req(&kv, 2, a, 1, 1, 0);
  admit(&kv, r1);
  /* 12 tokens = 3 full blocks, all cached; at most 11 may hit -> 2 blocks. */
  cr_assert_eq(admit(&kv, r2), 8, "hit stops before the block holding the last token");
  drop(r1), drop(r2);
  kvsim_kvcache_fini(&kv);
}

Test(kvcache, tenants_never_share_blocks) {
  kvsim_kvcache_t kv;
  make(&kv, 64, true, 0);
  kvsim_segment_t a[] = {{5, 16}, {6, 4}};
  kvsim_request_t *r1 = req(&kv, 1, a, 2, 1, 1), *r2 = req(&kv, 2, a, 2, 1, 2),
                  *r3 = req(&kv, 3, a, 2, 1, 1);
  admit(&kv, r1);
  cr_assert_eq(admit(&kv, r2), 0, "another tenant's salt misses");
  cr_assert_eq(admit(&kv, r3), 16, "the same tenant hits");
  drop(r1), drop(r2), drop(r3);
  kvsim_kvcache_fini(&kv);
}

Test(kvcache, allocation_fails_without_side_effects_when_full) {
  kvsim_kvcache_t kv;
  make(&kv, 5, false, 0); /* 4 usable blocks = 16 tokens */
  kvsim_segment_t a[] = {{5, 12}};
  kvsim_request_t *r1 = req(&kv, 1, a, 1, 1, 0), *r2 = req(&kv, 2, a, 1, 1, 0);
  admit(&kv, r1);
  cr_assert_eq(kvsim_pool_num_free(&kv.pool), 1, "3 blocks held, 1 free");
  cr_assert(!kvsim_kvcache_allocate(&kv, r2, 0, 12, 0), "12 tokens do not fit in 1 block");
  cr_assert_eq(kvsim_pool_num_free(&kv.pool), 1, "a failed allocation takes nothing");
  cr_assert_eq(r2->blocks[0].len, 0, "and gives the request nothing");
  cr_assert(kvsim_kvcache_allocate(&kv, r1, 0, 1, 0), "the 13th token needs the free block");
  cr_assert_eq(r1->blocks[0].len, 4, "r1 grew to 4 blocks");
  check(&kv);
  drop(r1), drop(r2);
  kvsim_kvcache_fini(&kv);
}

Test(kvcache, evicted_prefix_no_longer_hits_and_eviction_is_tail_first) {
  kvsim_kvcache_t kv;
  make(&kv, 5, true, 0); /* 4 usable blocks */
  kvsim_segment_t a[] = {{5, 12}}, c[] = {{8, 4}};
  kvsim_request_t *r1 = req(&kv, 1, a, 1, 1, 0);
  admit(&kv, r1);
  kvsim_kvcache_free(&kv, r1); /* blocks 3,2,1 go to the tail in that order */
  /* A 4-token request takes the never-used block 4 first, then block 3 (r1's tail). */
  kvsim_request_t *r2 = req(&kv, 2, c, 1, 1, 0), *r3 = req(&kv, 3, c, 1, 1, 0);
  admit(&kv, r2);
  admit(&kv, r3);
  kvsim_request_t *r4 = req(&kv, 4, a, 1, 1, 0);
  cr_assert_eq(kvsim_kvcache_lookup(&kv, r4, false), 8,
               "r1's first two blocks survive: the tail block was evicted first");
  drop(r1), drop(r2), drop(r3), drop(r4);
  kvsim_kvcache_fini(&kv);
}

Test(kvcache, sliding_window_frees_blocks_behind_the_window) {
  kvsim_kvcache_t kv;
  make(&kv, 64, false, 8); /* window of 8 tokens = 2 blocks */
  kvsim_segment_t a[] = {{5, 4}};
  kvsim_request_t *r = req(&kv, 1, a, 1, 100, 0);
  admit(&kv, r);
  for (int step = 0; step < 40; step++) {
    r->num_tokens++;
    cr_assert(kvsim_kvcache_allocate(&kv, r, 0, 1, 0), "decode step %d fits", step);
    r->num_computed++;
    check(&kv);
    int64_t held = kvsim_kvcache_held(&kv, r);
    cr_assert_leq(held, 4, "step %d: a sliding layer holds only the window (+ partial blocks), held %lld",
                  step, (long long)held);
  }
  cr_assert_eq(r->blocks[0].len, 11, "the table still spans the whole context (44 tokens)");
  cr_assert_geq(r->blocks[0].num_skipped, 8, "leading blocks replaced by the null block");
  kvsim_kvcache_free(&kv, r);
  cr_assert_eq(kvsim_pool_num_free(&kv.pool), 63, "everything back");
  drop(r);
  kvsim_kvcache_fini(&kv);
}

/* A manager over a pool of `blocks` blocks of 4 tokens, one full-attention
 * group, max_model_len 64, prefix caching off: counted unless `walk`. */
static void make_uncached(kvsim_kvcache_t *kv, int32_t blocks, bool walk) {
  kvsim_plan_t pl;
  memset(&pl, 0, sizeof pl);
  pl.p.engine = KVSIM_PLAN_V1;
  pl.p.block_size = 4;
  pl.p.max_model_len = 64;
  pl.num_groups = 1;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_kvcache_init(kv, &pl, blocks, false, &err), KVSIM_OK, "init: %s", err.msg);
  if (walk)
    cr_assert_eq(kvsim_kvcache_walk_blocks(kv, &err), KVSIM_OK, "walk: %s", err.msg);
  cr_assert_eq(kv->pool.counted, !walk, "the pool is %s", walk ? "walked" : "counted");
}

Test(kvcache, only_an_uncached_single_full_group_counts_blocks) {
  kvsim_kvcache_t kv;
  make(&kv, 16, false, 0);
  cr_assert(kv.pool.counted, "prefix caching off, one full group: counted");
  cr_assert_null(kv.pool.blocks, "a counted pool allocates no per-block arrays");
  kvsim_kvcache_fini(&kv);
  make(&kv, 16, true, 0);
  cr_assert(!kv.pool.counted, "prefix caching on reuses blocks by id: walked");
  kvsim_kvcache_fini(&kv);
  make(&kv, 16, false, 8);
  cr_assert(!kv.pool.counted, "a sliding window puts null blocks in a table: walked");
  kvsim_kvcache_fini(&kv);
  make(&kv, 16, false, 0);
  kvsim_cpu_tier_t cpu;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_cpu_tier_init(&cpu, 8, 100, 1, 0, true, &err), KVSIM_OK, "cpu tier: %s",
               err.msg);
  cr_assert_eq(kvsim_kvcache_set_offload(&kv, &cpu, 1, &err), KVSIM_OK, "offload: %s", err.msg);
  cr_assert(!kv.pool.counted, "offloading stores blocks by id: walked");
  cr_assert_eq(kvsim_pool_num_free(&kv.pool), 15,
               "the walked pool starts as full as the counted one");
  kvsim_kvcache_fini(&kv);
  kvsim_cpu_tier_fini(&cpu);
}

/* Side by side, a counted and a walked manager take the same seeded
 * random admissions (with lookahead), decode steps (some past
 * max_model_len), finishes and preemptions, the pools small enough to
 * refuse: every answer, table length, held count and free count agree. */
Test(kvcache, counted_and_walked_accounting_agree) {
  enum { NR = 12, OPS = 6000 };
  kvsim_kvcache_t kv[2];
  make_uncached(&kv[0], 41, false);
  make_uncached(&kv[1], 41, true);
  kvsim_request_t rq[2][NR];
  memset(rq, 0, sizeof rq);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  int64_t refused = 0, grown = 0;
  for (int op = 0; op < OPS; op++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
    const int i = (int)(x % NR);
    const int64_t a = (int64_t)((x >> 8) % 24), la = (int64_t)((x >> 16) % 4);
    const int what = (int)((x >> 24) % 8);
    int rc[2] = {1, 1};
    for (int m = 0; m < 2; m++) {
      kvsim_request_t *r = &rq[m][i];
      if (r->blocks[0].len == 0 && r->num_computed == 0) { /* waiting: admit a prompt */
        rc[m] = kvsim_kvcache_allocate(&kv[m], r, 0, a + 1, la);
        if (rc[m] > 0)
          r->num_computed = a + 1;
      } else if (what == 0) {
        kvsim_kvcache_free(&kv[m], r);
        r->num_computed = 0;
      } else if (what == 1) {
        cr_assert_eq(kvsim_kvcache_free_preempted(&kv[m], r), KVSIM_OK, "preempt");
        r->num_computed = 0;
      } else { /* decode rows, one to three tokens, some with lookahead */
        const int64_t n = 1 + what % 3;
        rc[m] = what & 1 ? kvsim_kvcache_allocate_running(&kv[m], r, n)
                         : kvsim_kvcache_allocate(&kv[m], r, 0, n, la);
        if (rc[m] > 0)
          r->num_computed += n;
      }
    }
    const kvsim_request_t *c = &rq[0][i], *w = &rq[1][i];
    cr_assert_eq(rc[0], rc[1], "op %d: counted %d, walked %d", op, rc[0], rc[1]);
    cr_assert_eq(c->blocks[0].len, w->blocks[0].len, "op %d: request %d's table", op, i);
    cr_assert_eq(kvsim_kvcache_held(&kv[0], c), kvsim_kvcache_held(&kv[1], w), "op %d: held", op);
    cr_assert_eq(kvsim_pool_num_free(&kv[0].pool), kvsim_pool_num_free(&kv[1].pool), "op %d: free",
                 op);
    cr_assert_eq(kvsim_pool_refs(&kv[0].pool), kvsim_pool_refs(&kv[1].pool), "op %d: references",
                 op);
    refused += rc[0] == 0;
    grown += c->blocks[0].len > 4;
    check(&kv[0]);
    if (op % 64 == 0)
      check(&kv[1]);
  }
  cr_assert_gt(refused, 50, "the pool ran full (%lld refusals)", (long long)refused);
  cr_assert_gt(grown, 500, "tables grew past a few blocks (%lld)", (long long)grown);
  cr_assert_null(rq[0][0].blocks[0].ids, "the counted tables never held ids");
  for (int i = 0; i < NR; i++)
    for (int m = 0; m < 2; m++)
      kvsim_kvcache_free(&kv[m], &rq[m][i]), free(rq[m][i].blocks[0].ids);
  cr_assert_eq(kvsim_pool_num_free(&kv[0].pool), 40, "every block back");
  kvsim_kvcache_fini(&kv[0]);
  kvsim_kvcache_fini(&kv[1]);
}

/* An anonymous request (no prefix identity) of `prompt` tokens. */
static kvsim_request_t *anon_req(kvsim_kvcache_t *kv, uint64_t id, int64_t prompt) {
  kvsim_request_t *r = calloc(1, sizeof *r);
  r->spec.id = id;
  r->spec.prompt_tokens = prompt;
  r->spec.output_tokens = 8;
  r->num_prompt = r->num_tokens = prompt;
  cr_assert_eq(kvsim_kvcache_prepare(kv, r), KVSIM_OK, "prepare");
  cr_assert(r->anon, "no segments, no offloading: anonymous");
  return r;
}

/* One decode row of n tokens. */
static void decode_n(kvsim_kvcache_t *kv, kvsim_request_t *r, int64_t n) {
  r->num_tokens += n;
  cr_assert_eq(kvsim_kvcache_allocate(kv, r, 0, n, 0), 1, "the decode row fits");
  r->num_computed += n;
}

/* An anonymous request's full blocks count as cached while it holds them
 * and once released (their marks wait for the release in a one-group
 * table), a preempted one finds its own blocks again, and the blocks it
 * hit are not marked over: the cached-free count and the evictions are
 * those of marking each block as it fills. */
Test(kvcache, anonymous_blocks_are_cached_as_they_fill) {
  kvsim_kvcache_t kv;
  make(&kv, 64, true, 0); /* blocks of 4 tokens */
  kvsim_request_t *r = anon_req(&kv, 1, 10);
  admit(&kv, r);
  cr_assert(kvsim_kvcache_block_cached(&kv, r, 0, 0) && kvsim_kvcache_block_cached(&kv, r, 0, 1),
            "the prompt's two full blocks are cached");
  cr_assert(!kvsim_kvcache_block_cached(&kv, r, 0, 2), "its partial block is not");
  decode_n(&kv, r, 2);
  cr_assert(kvsim_kvcache_block_cached(&kv, r, 0, 2), "two decoded tokens fill the third");
  kvsim_kvcache_free(&kv, r);
  cr_assert_eq(kv.pool.num_cached_free, 3, "its three blocks are free and cached (%d)",
               kv.pool.num_cached_free);
  check(&kv);

  kvsim_request_t *p = anon_req(&kv, 2, 9);
  admit(&kv, p);
  cr_assert_eq(kv.pool.evictions, 0, "the never-used blocks go first");
  cr_assert_eq(kvsim_kvcache_free_preempted(&kv, p), KVSIM_OK, "preempt");
  p->num_computed = 0;
  cr_assert_eq(kv.pool.num_cached_free, 5, "its two full blocks join the cache (%d)",
               kv.pool.num_cached_free);
  const int64_t hit = kvsim_kvcache_lookup(&kv, p, true);
  cr_assert_eq(hit, 8, "the resumed request finds its two full blocks");
  cr_assert_eq(kvsim_kvcache_allocate(&kv, p, hit, p->num_tokens - hit, 0), 1, "resume");
  p->num_computed = p->num_tokens;
  decode_n(&kv, p, 3);
  cr_assert(kvsim_kvcache_block_cached(&kv, p, 0, 2),
            "the block after the hit fills and is cached");
  kvsim_kvcache_free(&kv, p);
  cr_assert_eq(kv.pool.num_cached_free, 6, "both requests' full blocks are free and cached (%d)",
               kv.pool.num_cached_free);
  check(&kv);

  kvsim_request_t *big = anon_req(&kv, 3, 63 * 4);
  cr_assert_eq(kvsim_kvcache_allocate(&kv, big, 0, 63 * 4, 0), 1, "the whole pool");
  cr_assert_eq(kv.pool.evictions, 6, "taking every block evicts the six cached ones (%lld)",
               (long long)kv.pool.evictions);
  kvsim_kvcache_free(&kv, big);
  check(&kv);
  drop(r), drop(p), drop(big);
  kvsim_kvcache_fini(&kv);
}

/* The free queue's first n blocks, head first. */
static int32_t queue_head(const kvsim_pool_t *p, kvsim_block_id *out, int32_t n) {
  int32_t k = 0;
  for (kvsim_block_id b = p->head; b >= 0 && k < n; b = kvsim_pool_next(p, b))
    out[k++] = b;
  return k;
}

static bool in_table(const kvsim_block_id *ids, int32_t n, kvsim_block_id b) {
  for (int32_t t = 0; t < n; t++)
    if (ids[t] == b)
      return true;
  return false;
}

/* A prompt's blocks (past its hits) come off the queue's head in order,
 * after the free hit blocks were taken out of it (touched first); and a
 * one-token row at a block's start gets the same block from
 * kvsim_kvcache_take_next as from kvsim_kvcache_allocate: two managers
 * over the same seeded random admissions (shared prefixes, anonymous
 * prompts), decode rows, finishes and preemptions, one taking blocks
 * through take_next where it can, compared record by record. */
Test(kvcache, runs_and_next_blocks_come_off_the_queue_in_order) {
  enum { NR = 10, OPS = 5000, BLOCKS = 48 };
  static const kvsim_segment_t shared[2] = {{500, 20}, {501, 13}};
  kvsim_kvcache_t kv[2];
  make(&kv[0], BLOCKS, true, 0);
  make(&kv[1], BLOCKS, true, 0);
  kvsim_request_t rq[2][NR];
  kvsim_segment_t segs[NR][2];
  memset(rq, 0, sizeof rq);
  uint64_t x = 0x2545f4914f6cdd1dull;
  int64_t taken = 0, runs = 0, hits = 0;
  for (int op = 0; op < OPS; op++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
    const int i = (int)(x % NR);
    const int what = (int)((x >> 24) % 8);
    kvsim_request_t *a = &rq[0][i], *b = &rq[1][i];
    if (a->blocks[0].len == 0 && a->num_computed == 0) { /* waiting: admit its prompt */
      if (a->spec.id == 0) { /* a new request: a shared prefix and its own text, or anonymous */
        const int64_t own = 1 + (int64_t)((x >> 32) % 30);
        const int n = (x >> 40) % 3 ? 2 : 0;
        segs[i][0] = shared[(x >> 44) & 1];
        segs[i][1] = (kvsim_segment_t){1000 + (uint64_t)op, own};
        for (int m = 0; m < 2; m++) {
          kvsim_request_t *r = &rq[m][i];
          r->spec.id = (uint64_t)op + 1;
          r->spec.segments = n ? segs[i] : NULL;
          r->spec.num_segments = n;
          r->spec.prompt_tokens = r->num_prompt = r->num_tokens = n ? segs[i][0].len + own : own;
          r->spec.output_tokens = 1 << 20;
          cr_assert_eq(kvsim_kvcache_prepare(&kv[m], r), KVSIM_OK, "prepare");
        }
      }
      kvsim_block_id q[BLOCKS];
      const int32_t nq = queue_head(&kv[0].pool, q, BLOCKS);
      int32_t refs[BLOCKS];
      for (int32_t k = 0; k < BLOCKS; k++)
        refs[k] = kvsim_pool_ref(&kv[0].pool, k);
      int rc[2];
      int64_t hit = 0;
      for (int m = 0; m < 2; m++) {
        kvsim_request_t *r = &rq[m][i];
        hit = kvsim_kvcache_lookup(&kv[m], r, r->num_preemptions > 0);
        rc[m] = kvsim_kvcache_allocate(&kv[m], r, hit, r->num_tokens - hit, 0);
        if (rc[m] > 0) {
          r->num_computed = r->num_tokens;
          r->num_tokens++; /* its first token sampled */
        }
      }
      cr_assert_eq(rc[0], rc[1], "op %d: admission", op);
      if (rc[0] > 0) {
        /* Hits first, then the queue's head less the free hits, in order. */
        const int32_t h = (int32_t)(hit / 4);
        int32_t k = 0;
        for (int32_t j = h; j < a->blocks[0].len; j++, k++) {
          while (k < nq && refs[q[k]] == 0 && in_table(a->blocks[0].ids, h, q[k]))
            k++;
          cr_assert_lt(k, nq, "op %d: more blocks than the queue held", op);
          cr_assert_eq(a->blocks[0].ids[j], q[k], "op %d: block %d is the queue's next", op, j);
        }
        runs += a->blocks[0].len - h > 1;
        hits += h > 0;
      }
    } else if (what == 0) {
      for (int m = 0; m < 2; m++) {
        kvsim_kvcache_free(&kv[m], &rq[m][i]);
        free(rq[m][i].blocks[0].ids), free(rq[m][i].hashes), free(rq[m][i].segs);
        memset(&rq[m][i], 0, sizeof rq[m][i]);
      }
    } else if (what == 1) {
      for (int m = 0; m < 2; m++) {
        kvsim_request_t *r = &rq[m][i];
        cr_assert_eq(kvsim_kvcache_free_preempted(&kv[m], r), KVSIM_OK, "preempt");
        r->num_computed = 0;
        r->num_tokens--; /* recomputed with its outputs but the last */
        r->num_preemptions++;
      }
    } else { /* a decode row: take_next where it applies, else allocate */
      int rc0 = kvsim_kvcache_take_next(&kv[0], a);
      taken += rc0;
      if (!rc0)
        rc0 = kvsim_kvcache_allocate_running(&kv[0], a, 1);
      const int rc1 = kvsim_kvcache_allocate_running(&kv[1], b, 1);
      cr_assert_eq(rc0, rc1, "op %d: the decode row's allocation", op);
      if (rc0 > 0)
        for (int m = 0; m < 2; m++)
          rq[m][i].num_computed++, rq[m][i].num_tokens++;
    }
    cr_assert_eq(a->blocks[0].len, b->blocks[0].len, "op %d: request %d's table", op, i);
    for (int32_t k = 0; k < a->blocks[0].len; k++)
      cr_assert_eq(a->blocks[0].ids[k], b->blocks[0].ids[k], "op %d: request %d's block %d", op, i, k);
    const kvsim_pool_t *p = &kv[0].pool, *o = &kv[1].pool;
    cr_assert(p->head == o->head && p->tail == o->tail && p->num_free == o->num_free &&
                  p->num_cached_free == o->num_cached_free && p->evictions == o->evictions,
              "op %d: the queues' ends and counters", op);
    cr_assert_eq(memcmp(p->blocks, o->blocks, BLOCKS * sizeof *p->blocks), 0, "op %d: the records",
                 op);
    if (op % 50 == 0)
      check(&kv[0]);
  }
  cr_assert_gt(taken, 100, "take_next gave blocks (%lld)", (long long)taken);
  cr_assert_gt(runs, 100, "prompts took runs of blocks (%lld)", (long long)runs);
  cr_assert_gt(hits, 100, "prompts hit the cache (%lld)", (long long)hits);
  for (int i = 0; i < NR; i++)
    for (int m = 0; m < 2; m++) {
      kvsim_kvcache_free(&kv[m], &rq[m][i]);
      free(rq[m][i].blocks[0].ids), free(rq[m][i].hashes), free(rq[m][i].segs);
    }
  kvsim_kvcache_fini(&kv[0]);
  kvsim_kvcache_fini(&kv[1]);
}

/* The chain of block hashes, by the rule (core/blockhash.h), for the
 * segments of a request: block k folds its parent with each piece it
 * covers. Returns the full blocks. */
static int32_t model_hashes(const kvsim_segment_t *segs, int32_t n, int64_t bs, uint64_t *out,
                            int32_t cap) {
  uint64_t x = KVSIM__HASH_NONE;
  int32_t nh = 0, seg = 0;
  int64_t off = 0;
  while (nh < cap) {
    int64_t need = bs;
    while (need > 0) {
      if (seg >= n)
        return nh;
      int64_t take = segs[seg].len - off;
      take = take > need ? need : take;
      x = kvsim__hash_piece(x, segs[seg].id, off, take);
      need -= take;
      off += take;
      if (off == segs[seg].len)
        seg++, off = 0;
    }
    out[nh++] = x = kvsim__hash_seal(x);
  }
  return nh;
}

/* Requests that start with the same segment copy the hashes of its
 * blocks from the manager's memo (memory/hashmemo.h): over 3,000 seeded
 * random requests (first segments from a few ids, of every length, some
 * shorter than a block; hashed at a lookup, in prefill chunks and while
 * decoding, and at preemption), every hash a request holds is the
 * chain's. */
Test(kvcache, shared_first_segments_hash_as_the_chain) {
  enum { NR = 3000, CAP = 64 };
  kvsim_kvcache_t kv;
  make(&kv, 4096, true, 0);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  int64_t copied = 0;
  for (int i = 0; i < NR; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    kvsim_segment_t segs[3];
    const int n = 1 + (int)(x % 3);
    segs[0] = (kvsim_segment_t){300 + (x >> 8) % 5, (int64_t)((x >> 16) % 70)};
    for (int k = 1; k < n; k++)
      segs[k] = (kvsim_segment_t){100000 + (uint64_t)i * 4 + (uint64_t)k, 1 + (int64_t)((x >> (20 + 6 * k)) % 30)};
    int64_t prompt = 0;
    for (int k = 0; k < n; k++)
      prompt += segs[k].len;
    if (prompt < 2)
      continue;
    kvsim_request_t *r = req(&kv, (uint64_t)i + 1, segs, n, 8 + (int64_t)((x >> 40) % 20), 0);
    int32_t kept = 0;
    const bool memo = kvsim__hmemo_get(kv.hash_memo, segs[0].id, &kept) && kept > 0;
    const int64_t hit = kvsim_kvcache_lookup(&kv, r, false);
    /* The prompt in chunks of 1 to 8 tokens, then some decode rows. */
    int64_t done = hit;
    while (done < r->num_tokens) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      int64_t c = 1 + (int64_t)(x % 8);
      c = c > r->num_tokens - done ? r->num_tokens - done : c;
      cr_assert_eq(kvsim_kvcache_allocate(&kv, r, done == hit ? hit : 0, c, 0), 1, "request %d", i);
      r->num_computed = done += c;
    }
    for (int d = (int)(x >> 50) % 9; d > 0; d--) {
      r->num_tokens++;
      cr_assert_eq(kvsim_kvcache_allocate(&kv, r, 0, 1, 0), 1, "request %d decodes", i);
      r->num_computed++;
    }
    uint64_t want[CAP + 64];
    kvsim_segment_t all[4];
    memcpy(all, segs, (size_t)n * sizeof *segs);
    all[n] = (kvsim_segment_t){kvsim_output_segment_id(r->spec.id), r->spec.output_tokens};
    const int32_t nm = model_hashes(all, n + 1, 4, want, CAP + 64);
    cr_assert_leq(r->num_hashes, nm, "request %d: no more hashes than full blocks", i);
    for (int32_t k = 0; k < r->num_hashes; k++)
      cr_assert_eq(r->hashes[k], want[k], "request %d: block %d's hash", i, k);
    copied += memo && segs[0].len >= 4;
    if (i % 2)
      cr_assert_eq(kvsim_kvcache_free_preempted(&kv, r), KVSIM_OK, "preempt");
    else
      kvsim_kvcache_free(&kv, r);
    drop(r);
  }
  cr_assert_gt(copied, 1000, "requests found their first segment's hashes kept (%lld)", (long long)copied);
  check(&kv);
  kvsim_kvcache_fini(&kv);
}

/* The prefix walk of one full-attention group (kvcache_lookup.c, its
 * inline probe) against the chain's rule read through the pool's public
 * lookup: the hit is the longest run of blocks from the first whose keys
 * (the block hash salted by the tenant) the map holds, and hit_ids holds
 * those blocks and, where the run stops inside the prompt, the miss (-1).
 * Seeded random prompts over three shared first segments, two tenants,
 * preemptions of anonymous requests (their blocks hashed), releases and
 * evictions in a small pool. */
Test(kvcache, single_group_walk_is_the_chain_rule) {
  enum { N = 40, OPS = 1500 };
  kvsim_kvcache_t kv;
  make(&kv, 48, true, 0);
  kvsim_segment_t segs[N][2];
  kvsim_request_t *live[N] = {0};
  uint64_t x = 977;
  int64_t hits = 0, misses_inside = 0;
  for (int op = 0; op < OPS; op++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const int i = (int)(x % N);
    if (live[i]) { /* release it, sometimes as a preemption */
      if ((x >> 8) & 1)
        cr_assert_eq(kvsim_kvcache_free_preempted(&kv, live[i]), KVSIM_OK, "preempt");
      else
        kvsim_kvcache_free(&kv, live[i]);
      drop(live[i]);
      live[i] = NULL;
      continue;
    }
    kvsim_request_t *r;
    if ((x >> 9) % 4 == 0) {
      r = anon_req(&kv, (uint64_t)op, 4 + (int64_t)((x >> 12) % 40));
    } else {
      segs[i][0] = (kvsim_segment_t){500 + (x >> 12) % 3, 4 + (int64_t)((x >> 16) % 24)};
      segs[i][1] = (kvsim_segment_t){100000 + (uint64_t)op, 1 + (int64_t)((x >> 22) % 12)};
      r = req(&kv, (uint64_t)op, segs[i], 2, 4, (int32_t)((x >> 28) % 2));
    }
    const int64_t hit = kvsim_kvcache_lookup(&kv, r, false);
    const int32_t L = kv.hit_blocks;
    cr_assert_eq(hit, (int64_t)L * kv.block_size, "op %d: hit tokens", op);
    if (!r->anon) {
      /* the model: the chain read through kvsim_pool_lookup */
      const int32_t avail = (int32_t)((r->num_tokens - 1) / kv.block_size);
      int32_t m = 0;
      while (m < avail && kvsim_pool_lookup(&kv.pool, kvsim__kvcache_block_key(r, m, 0)) > 0)
        m++;
      cr_assert_eq(L, m, "op %d: hit %d blocks, the chain %d", op, L, m);
      for (int32_t k = 0; k < L; k++)
        cr_assert_eq(kv.hit_ids[k], kvsim_pool_lookup(&kv.pool, kvsim__kvcache_block_key(r, k, 0)),
                     "op %d: hit block %d", op, k);
      if (L < avail) {
        cr_assert_eq(kv.hit_ids[L], -1, "op %d: the miss is recorded", op);
        misses_inside++;
      }
      hits += L > 0;
    }
    if (kvsim_kvcache_allocate(&kv, r, hit, r->num_tokens - hit, 0) == 1) {
      r->num_computed = r->num_tokens;
      live[i] = r;
    } else {
      kvsim_kvcache_free(&kv, r);
      drop(r);
    }
    check(&kv);
  }
  cr_assert_gt(hits, 100, "lookups that hit (%lld)", (long long)hits);
  cr_assert_gt(misses_inside, 100, "runs that stop inside the prompt (%lld)", (long long)misses_inside);
  cr_assert_gt(kv.pool.evictions, 50, "evictions (%lld)", (long long)kv.pool.evictions);
  for (int i = 0; i < N; i++)
    if (live[i]) {
      kvsim_kvcache_free(&kv, live[i]);
      drop(live[i]);
    }
  kvsim_kvcache_fini(&kv);
}
