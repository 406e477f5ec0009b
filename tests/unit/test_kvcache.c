#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/kvcache.h"

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
  cr_assert_eq(kv.pool.ref_cnt[r1->blocks[0].ids[0]], 2, "a shared block counts both holders");
  cr_assert_eq(kv.queries, 32, "queries count prompt tokens (16 + 16)");
  cr_assert_eq(kv.hits, 8, "hits count tokens");
  check(&kv);
  kvsim_kvcache_free(&kv, r1);
  cr_assert_eq(kv.pool.ref_cnt[r2->blocks[0].ids[0]], 1, "freeing one holder keeps the block");
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
