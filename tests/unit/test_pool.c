#include <criterion/criterion.h>

#include "kvsim/pool.h"

static void check(const kvsim_pool_t *p) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_pool_check(p, &err), KVSIM_OK, "pool invariant broken: %s", err.msg);
}

Test(pool, null_block_is_reserved_and_usage_excludes_it) {
  kvsim_pool_t p;
  kvsim_err err;
  cr_assert_eq(kvsim_pool_init(&p, 5, &err), KVSIM_OK, "init: %s", err.msg);
  cr_assert_eq(kvsim_pool_usable(&p), 4, "4 usable blocks of 5 (block 0 is the null block)");
  cr_assert_eq(kvsim_pool_num_free(&p), 4, "all usable blocks free at start");
  kvsim_block_id b[4];
  kvsim_pool_alloc(&p, 4, b);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(b[i], i + 1, "blocks handed out in id order from 1, got %d at %d", b[i], i);
  cr_assert_float_eq(kvsim_pool_usage(&p), 1.0, 1e-12, "usage = 1 - free/(blocks-1) = 1");
  kvsim_pool_release(&p, b[0]);
  cr_assert_float_eq(kvsim_pool_usage(&p), 0.75, 1e-12, "one of four free: usage 0.75");
  check(&p);
  kvsim_pool_fini(&p);
}

Test(pool, too_small_pool_is_an_error) {
  kvsim_pool_t p;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_pool_init(&p, 1, &err), KVSIM_ENOFIT, "a pool of only the null block cannot serve");
  cr_assert(strstr(err.msg, "null block") != NULL, "message says why: %s", err.msg);
}

Test(pool, freed_blocks_go_to_the_tail_and_keep_their_hash) {
  kvsim_pool_t p;
  kvsim_err err;
  kvsim_pool_init(&p, 6, &err);
  kvsim_block_id b[5];
  kvsim_pool_alloc(&p, 3, b); /* 1, 2, 3 */
  kvsim_pool_cache(&p, b[0], 111);
  kvsim_pool_cache(&p, b[1], 222);
  /* A request frees tail-first: 3, then 2, then 1. */
  kvsim_pool_release(&p, b[2]);
  kvsim_pool_release(&p, b[1]);
  kvsim_pool_release(&p, b[0]);
  cr_assert_eq(p.num_cached_free, 2, "two freed blocks still carry a hash");
  cr_assert_eq(kvsim_pool_lookup(&p, 222), 2, "a freed block stays findable in the cache");
  check(&p);
  /* Free queue order: 4, 5 (never used), then 3, 2, 1 in release order. */
  kvsim_block_id got[5];
  kvsim_pool_alloc(&p, 4, got);
  int want[] = {4, 5, 3, 2};
  for (int i = 0; i < 4; i++)
    cr_assert_eq(got[i], want[i], "LRU order at %d: got %d want %d", i, got[i], want[i]);
  cr_assert_eq(kvsim_pool_lookup(&p, 222), -1, "reallocating block 2 evicted its hash");
  cr_assert_eq(kvsim_pool_lookup(&p, 111), 1, "block 1 (the prefix) survives longer");
  cr_assert_eq(p.evictions, 1, "one cached block was evicted");
  check(&p);
  kvsim_pool_fini(&p);
}

Test(pool, touch_takes_a_cached_free_block_out_of_the_queue) {
  kvsim_pool_t p;
  kvsim_err err;
  kvsim_pool_init(&p, 4, &err);
  kvsim_block_id b[3];
  kvsim_pool_alloc(&p, 1, b);
  kvsim_pool_cache(&p, b[0], 7);
  kvsim_pool_release(&p, b[0]);
  cr_assert_eq(kvsim_pool_num_free(&p), 3, "released block is free");
  kvsim_pool_touch(&p, b[0]);
  cr_assert_eq(kvsim_pool_num_free(&p), 2, "touch removed it from the free queue");
  cr_assert_eq(kvsim_pool_ref(&p, b[0]), 1, "touch took a reference");
  kvsim_pool_touch(&p, b[0]);
  cr_assert_eq(kvsim_pool_ref(&p, b[0]), 2, "a second user shares it by reference");
  kvsim_pool_release(&p, b[0]);
  cr_assert_eq(kvsim_pool_num_free(&p), 2, "still held by one user");
  check(&p);
  kvsim_pool_fini(&p);
}

Test(pool, cache_map_survives_heavy_churn) {
  kvsim_pool_t p;
  kvsim_err err;
  kvsim_pool_init(&p, 64, &err);
  kvsim_block_id b[63];
  uint64_t next_hash = 1000;
  for (int round = 0; round < 200; round++) {
    kvsim_pool_alloc(&p, 63, b);
    for (int i = 0; i < 63; i++)
      kvsim_pool_cache(&p, b[i], next_hash++ * 0x9e3779b97f4a7c15ull);
    for (int i = 62; i >= 0; i--)
      kvsim_pool_release(&p, b[i]);
    check(&p);
  }
  cr_assert_eq(p.map_used, 63u, "exactly the 63 live hashes remain mapped, got %u", p.map_used);
  cr_assert_eq(kvsim_pool_lookup(&p, (next_hash - 1) * 0x9e3779b97f4a7c15ull), b[62],
               "the newest hash maps to its block");
  kvsim_pool_fini(&p);
}

Test(pool, counted_pool_is_its_free_count) {
  kvsim_pool_t p;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_pool_init_counted(&p, 1, &err), KVSIM_ENOFIT,
               "the same size check as a walked pool");
  cr_assert_eq(kvsim_pool_init_counted(&p, 9, &err), KVSIM_OK, "init: %s", err.msg);
  cr_assert(p.counted && !p.blocks, "no per-block arrays");
  cr_assert_eq(kvsim_pool_num_free(&p), 8, "8 usable blocks free");
  kvsim_pool_take(&p, 5);
  kvsim_pool_take(&p, 3);
  cr_assert_eq(kvsim_pool_refs(&p), 8, "every usable block taken");
  cr_assert_float_eq(kvsim_pool_usage(&p), 1.0, 1e-12, "full");
  kvsim_pool_give(&p, 3);
  cr_assert_float_eq(kvsim_pool_usage(&p), 5.0 / 8.0, 1e-12, "5 of 8 in use");
  check(&p);
  kvsim_pool_give(&p, 6); /* one more than taken */
  cr_assert_neq(kvsim_pool_check(&p, &err), KVSIM_OK, "more free blocks than usable is caught");
  kvsim_pool_fini(&p);
}

Test(pool, refs_of_a_walked_pool_sum_its_references) {
  kvsim_pool_t p;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_pool_init(&p, 6, &err), KVSIM_OK, "init: %s", err.msg);
  kvsim_block_id b[3];
  kvsim_pool_alloc(&p, 3, b);
  kvsim_pool_touch(&p, b[1]);
  cr_assert_eq(kvsim_pool_refs(&p), 4, "three blocks, one shared");
  kvsim_pool_fini(&p);
}

/* The free queues of two walked pools, head to tail, and their counters. */
static void same_queue(const kvsim_pool_t *a, const kvsim_pool_t *b, int op) {
  cr_assert_eq(a->num_free, b->num_free, "op %d: free %d vs %d", op, a->num_free, b->num_free);
  cr_assert_eq(a->num_cached_free, b->num_cached_free, "op %d: cached free", op);
  cr_assert_eq(a->evictions, b->evictions, "op %d: evictions", op);
  int32_t x = a->head, y = b->head;
  for (; x >= 0 && y >= 0; x = kvsim_pool_next(a, x), y = kvsim_pool_next(b, y))
    cr_assert_eq(x, y, "op %d: the queues' orders differ at %d / %d", op, x, y);
  cr_assert(x < 0 && y < 0, "op %d: the queues' lengths differ", op);
}

/* Releasing a table at once (kvsim_pool_release_table) leaves the queue,
 * the counters and the cache as marking its first entries anonymous and
 * releasing it block by block, tail first, over seeded random tables with
 * shared, cached and null blocks. */
Test(pool, release_table_is_release_tail_first) {
  enum { NB = 48, NT = 6, OPS = 3000 };
  kvsim_pool_t p[2];
  kvsim_err err = {0};
  for (int m = 0; m < 2; m++)
    cr_assert_eq(kvsim_pool_init(&p[m], NB, &err), KVSIM_OK, "init: %s", err.msg);
  kvsim_block_id tab[2][NT][NB];
  int32_t len[NT] = {0};
  uint64_t x = 88172645463325252ull;
  int64_t shared = 0;
  for (int op = 0; op < OPS; op++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const int t = (int)(x % NT);
    const int32_t n = (int32_t)((x >> 8) % 7);
    for (int m = 0; m < 2; m++) {
      kvsim_pool_t *q = &p[m];
      if (len[t] == 0 && n > 0 && n + 1 <= q->num_free) {
        /* A table: a null block, n new blocks (some cached), maybe a
         * block of another table shared by reference. */
        tab[m][t][0] = KVSIM_NULL_BLOCK;
        kvsim_pool_alloc(q, n, &tab[m][t][1]);
        int32_t l = n + 1;
        for (int32_t k = 1; k < l; k++)
          if ((x >> (16 + k)) & 1)
            kvsim_pool_cache(q, tab[m][t][k], 1000 + (x >> 40) + (uint64_t)k);
        const int u = (t + 1) % NT;
        if (len[u] > 1 && ((x >> 30) & 1)) {
          kvsim_pool_touch(q, tab[m][u][1]);
          tab[m][t][l++] = tab[m][u][1];
          shared += m == 0;
        }
        if (m == 1)
          len[t] = l;
      } else if (len[t] > 0 && n < 3) {
        const int32_t upto = (int32_t)((x >> 44) % (uint64_t)(len[t] + 1));
        if (m == 0)
          kvsim_pool_release_table(q, tab[0][t], len[t], upto);
        else {
          for (int32_t k = 0; k < upto; k++)
            if (tab[1][t][k] != KVSIM_NULL_BLOCK)
              kvsim_pool_cache_anon(q, tab[1][t][k]);
          for (int32_t k = len[t] - 1; k >= 0; k--)
            if (tab[1][t][k] != KVSIM_NULL_BLOCK)
              kvsim_pool_release(q, tab[1][t][k]);
          len[t] = 0;
        }
      }
    }
    same_queue(&p[0], &p[1], op);
    check(&p[0]);
  }
  cr_assert_gt(shared, 20, "tables shared blocks (%lld)", (long long)shared);
  cr_assert_gt(p[0].evictions, 20, "allocation evicted cached blocks (%lld)",
               (long long)p[0].evictions);
  for (int m = 0; m < 2; m++)
    kvsim_pool_fini(&p[m]);
}

/* The per-block record against a model of the parallel arrays it
 * replaced (a reference count, a hash where 0 is none, and the free queue
 * as an ordered list): seeded random allocations, hashed, anonymous,
 * colliding and 0/1 hashes (in crowded map slots), touches, single and whole-table releases.
 * After every operation each block's count and cache state, the queue's
 * order, the counters and every cached hash's lookup must agree. */
enum { MB = 40, MQ = 64 };
typedef struct model {
  int32_t ref[MB];
  uint64_t hash[MB]; /* 0 = none, as the old array */
  int32_t q[MB], qn; /* the free queue, head first */
  uint64_t keys[MQ];
  int32_t vals[MQ], nk;
  int64_t evictions;
} model_t;

static uint64_t mkey(uint64_t h) { return h ? h : 1; }

static int model_find(const model_t *m, uint64_t key) {
  for (int i = 0; i < m->nk; i++)
    if (m->keys[i] == key)
      return i;
  return -1;
}

static void model_unqueue(model_t *m, int32_t b) {
  int i = 0;
  while (m->q[i] != b)
    i++;
  for (; i + 1 < m->qn; i++)
    m->q[i] = m->q[i + 1];
  m->qn--;
}

static void model_alloc(model_t *m, int32_t b) {
  const uint64_t h = m->hash[b];
  if (h) {
    int i = h != KVSIM_ANON_HASH ? model_find(m, mkey(h)) : -1;
    if (i >= 0 && m->vals[i] == b) {
      m->keys[i] = m->keys[m->nk - 1];
      m->vals[i] = m->vals[--m->nk];
    }
    m->hash[b] = 0;
    m->evictions++;
  }
  m->ref[b] = 1;
  model_unqueue(m, b);
}

static void model_cache(model_t *m, int32_t b, uint64_t h) {
  if (model_find(m, mkey(h)) >= 0) {
    if (m->hash[b] == KVSIM_ANON_HASH)
      m->hash[b] = 0;
    return;
  }
  m->keys[m->nk] = mkey(h);
  m->vals[m->nk++] = b;
  m->hash[b] = h;
}

static void model_release(model_t *m, int32_t b) {
  if (--m->ref[b] == 0)
    m->q[m->qn++] = b;
}

static void same_as_model(const kvsim_pool_t *p, const model_t *m, int op) {
  int32_t cached = 0;
  for (int32_t b = 1; b < MB; b++) {
    cr_assert_eq(kvsim_pool_ref(p, b), m->ref[b], "op %d: block %d ref %d, model %d", op, b,
                 kvsim_pool_ref(p, b), m->ref[b]);
    const uint64_t h = m->hash[b];
    cr_assert_eq(kvsim_pool_cached(p, b), h != 0, "op %d: block %d cached", op, b);
    cr_assert_eq(kvsim_pool_anon(p, b), h == KVSIM_ANON_HASH, "op %d: block %d anonymous", op, b);
    if (h > KVSIM_ANON_HASH)
      cr_assert_eq(kvsim_pool_lookup(p, h), b, "op %d: block %d is found by its hash", op, b);
  }
  int32_t b = p->head, i = 0;
  for (; b >= 0 && i < m->qn; b = kvsim_pool_next(p, b), i++) {
    cr_assert_eq(b, m->q[i], "op %d: queue entry %d is %d, model %d", op, i, b, m->q[i]);
    cached += m->hash[b] != 0;
  }
  cr_assert(b < 0 && i == m->qn, "op %d: the queue's length differs from the model's", op);
  cr_assert_eq(p->num_free, m->qn, "op %d: free count", op);
  cr_assert_eq(p->num_cached_free, cached, "op %d: cached free count", op);
  cr_assert_eq(p->evictions, m->evictions, "op %d: evictions", op);
  for (int k = 0; k < m->nk; k++)
    cr_assert_eq(kvsim_pool_lookup(p, m->keys[k]), m->vals[k], "op %d: lookup of %llu", op,
                 (unsigned long long)m->keys[k]);
  check(p);
}

Test(pool, block_records_match_the_parallel_arrays_model) {
  kvsim_pool_t p;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_pool_init(&p, MB, &err), KVSIM_OK, "init: %s", err.msg);
  cr_assert_eq(sizeof(kvsim_pool_block_t), 16, "a block's record is 16 bytes, four to a line");
  model_t m = {0};
  for (int32_t b = 1; b < MB; b++)
    m.q[m.qn++] = b;
  m.ref[0] = 1;
  enum { NT = 5 };
  kvsim_block_id tab[NT][MB];
  int32_t len[NT] = {0};
  uint64_t x = 0x9E3779B97F4A7C15ull;
  int64_t hashed = 0, anon = 0, collided = 0;
  for (int op = 0; op < 4000; op++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const int t = (int)(x % NT);
    const int32_t n = (int32_t)((x >> 8) % 6) + 1;
    if (len[t] == 0 && n <= p.num_free) {
      kvsim_pool_alloc(&p, n, tab[t]);
      for (int32_t k = 0; k < n; k++) {
        cr_assert_eq(tab[t][k], m.q[0], "op %d: allocation takes the queue's head", op);
        model_alloc(&m, tab[t][k]);
      }
      len[t] = n;
      const int u = (int)((x >> 20) % NT);
      if (u != t && len[u] > 0 && ((x >> 24) & 1)) { /* share a block by reference */
        const int32_t b = tab[u][0];
        kvsim_pool_touch(&p, b);
        if (m.ref[b]++ == 0)
          model_unqueue(&m, b);
        tab[t][len[t]++] = b;
      }
    } else if (len[t] > 0 && (x >> 30) % 3 == 0) {
      /* Cache a held block: a hash from a small set (so that some are
       * cached already), now and then 0 or 1, or the anonymous mark. */
      const int32_t b = tab[t][(x >> 32) % (uint64_t)len[t]];
      const uint64_t v = (x >> 40) % 29;
      /* Hashes above 1 fall on three home slots of the map (multiples
       * of 256 apart), so evictions shift probe runs. */
      const uint64_t h = v <= 1 ? v : 2 + v % 3 + 256 * v;
      if (v == 28) {
        kvsim_pool_cache_anon(&p, b);
        if (m.hash[b] == 0)
          m.hash[b] = KVSIM_ANON_HASH;
        anon++;
      } else if (!kvsim_pool_cached(&p, b) || kvsim_pool_anon(&p, b)) {
        collided += model_find(&m, mkey(h)) >= 0;
        kvsim_pool_cache(&p, b, h);
        model_cache(&m, b, h);
        hashed++;
      }
    } else if (len[t] > 0) {
      const int32_t upto = (int32_t)((x >> 44) % (uint64_t)(len[t] + 1));
      if ((x >> 50) & 1)
        kvsim_pool_release_table(&p, tab[t], len[t], upto);
      else {
        for (int32_t k = 0; k < upto; k++)
          kvsim_pool_cache_anon(&p, tab[t][k]);
        for (int32_t k = len[t] - 1; k >= 0; k--)
          kvsim_pool_release(&p, tab[t][k]);
      }
      for (int32_t k = 0; k < upto; k++)
        if (m.hash[tab[t][k]] == 0)
          m.hash[tab[t][k]] = KVSIM_ANON_HASH;
      for (int32_t k = len[t] - 1; k >= 0; k--)
        model_release(&m, tab[t][k]);
      len[t] = 0;
    }
    same_as_model(&p, &m, op);
  }
  cr_assert_gt(hashed, 100, "blocks were hashed (%lld)", (long long)hashed);
  cr_assert_gt(collided, 20, "hashes collided with cached ones (%lld)", (long long)collided);
  cr_assert_gt(anon, 20, "blocks were marked anonymous (%lld)", (long long)anon);
  cr_assert_gt(m.evictions, 50, "allocation evicted cached blocks (%lld)", (long long)m.evictions);
  cr_assert_eq(p.map_mask, 255, "the map of this pool has 256 slots");
  kvsim_pool_fini(&p);
}

/* Two pools in the same state: block for block, the queue, the map's
 * answers for every key used, the counters. */
static void same_pool(const kvsim_pool_t *a, const kvsim_pool_t *b, const uint64_t *keys, int nkeys,
                      int op) {
  cr_assert_eq(memcmp(a->blocks, b->blocks, (size_t)a->num_blocks * sizeof *a->blocks), 0,
               "op %d: the records", op);
  cr_assert(a->head == b->head && a->tail == b->tail && a->num_free == b->num_free &&
                a->num_cached_free == b->num_cached_free && a->evictions == b->evictions &&
                a->map_used == b->map_used,
            "op %d: the queue's ends and the counters", op);
  for (int k = 0; k < nkeys; k++)
    cr_assert_eq(kvsim_pool_lookup(a, keys[k]), kvsim_pool_lookup(b, keys[k]), "op %d: key %d", op, k);
}

/* Why implicit decode may take a block off the queue's head before a row
 * ahead of it in the step caches its own held block (sched/v1_implicit.c,
 * take_in_place): if the head carries no hash, the two commute (the
 * taking never reads or writes the prefix map, the caching touches only
 * the map and its held block). A hashed head is why the rule checks:
 * with the same key, the order decides which block the map keeps. Seeded
 * random pools (held, free, hashed, anonymous blocks; keys crowded
 * together), both orders from the same state. */
Test(pool, taking_an_unhashed_head_commutes_with_caching_a_held_block) {
  enum { N = 24, KEYS = 6 };
  const uint64_t keys[KEYS] = {11, 12, 13, 14, 15, 16};
  uint64_t x = 0x853c49e6748fea9bull;
  int commuted = 0, differed = 0;
  for (int op = 0; op < 3000; op++) {
    kvsim_pool_t p[2];
    for (int m = 0; m < 2; m++)
      cr_assert_eq(kvsim_pool_init(&p[m], N, NULL), KVSIM_OK, "init");
    /* A random history, the same in both. */
    kvsim_block_id held[N];
    int nheld = 0;
    for (int s = 0; s < 40; s++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const int what = (int)(x % 4);
      for (int m = 0; m < 2; m++) {
        kvsim_block_id b;
        if (what <= 1 && p[m].num_free > 0) {
          kvsim_pool_alloc(&p[m], 1, &b);
          if (m == 0)
            held[nheld++] = b;
        } else if (what == 2 && nheld > 0) {
          const int i = (int)((x >> 8) % (uint64_t)nheld);
          if (!kvsim_pool_cached(&p[m], held[i]))
            kvsim_pool_cache(&p[m], held[i], (x >> 16) % 3 ? keys[(x >> 20) % KEYS] : KVSIM_ANON_HASH);
        } else if (what == 3 && nheld > 0) {
          const int i = (int)((x >> 8) % (uint64_t)nheld);
          kvsim_pool_release(&p[m], held[i]);
          if (m == 1)
            held[i] = held[--nheld];
        }
      }
    }
    same_pool(&p[0], &p[1], keys, KEYS, op);
    if (p[0].num_free == 0 || nheld == 0)
      goto done;
    /* A held block not cached yet is cached under a key; the head is taken. */
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    kvsim_block_id b = -1;
    for (int i = 0; i < nheld && b < 0; i++)
      if (!kvsim_pool_cached(&p[0], held[(i + (int)(x % (uint64_t)nheld)) % nheld]))
        b = held[(i + (int)(x % (uint64_t)nheld)) % nheld];
    if (b < 0)
      goto done;
    const uint64_t key = keys[(x >> 12) % KEYS];
    const bool hashed_head = kvsim_pool_cached(&p[0], p[0].head) && !kvsim_pool_anon(&p[0], p[0].head);
    kvsim_block_id t0, t1;
    kvsim_pool_cache(&p[0], b, key);
    kvsim_pool_alloc(&p[0], 1, &t0);
    kvsim_pool_alloc(&p[1], 1, &t1);
    kvsim_pool_cache(&p[1], b, key);
    cr_assert_eq(t0, t1, "op %d: the same block taken", op);
    if (!hashed_head) {
      same_pool(&p[0], &p[1], keys, KEYS, op);
      commuted++;
    } else {
      differed += memcmp(p[0].blocks, p[1].blocks, (size_t)N * sizeof *p[0].blocks) != 0 ||
                  kvsim_pool_lookup(&p[0], key) != kvsim_pool_lookup(&p[1], key);
    }
  done:
    kvsim_pool_fini(&p[0]);
    kvsim_pool_fini(&p[1]);
  }
  cr_assert_gt(commuted, 500, "unhashed heads taken (%d)", commuted);
  cr_assert_gt(differed, 10, "a hashed head's key met the cached one: the orders differ (%d)", differed);
}

/* kvsim_pool_alloc_one (the inline take of a decode row's next block)
 * against kvsim_pool_alloc(p, 1): two pools driven by the same seeded
 * random operations (multi-block takes, hashed and anonymous caching,
 * whole-table releases, touches; a small pool, so the queue empties and
 * its last block is taken), one taking single blocks each way. Every
 * record, the queue's ends, the counters and the map must stay equal. */
Test(pool, alloc_one_is_alloc_of_one) {
  enum { N = 16, KEYS = 8, OPS = 4000, MAXH = 12 };
  const uint64_t keys[KEYS] = {21, 22, 23, 24, 25, 26, 27, 28};
  kvsim_pool_t p[2];
  kvsim_err err = {0};
  for (int m = 0; m < 2; m++)
    cr_assert_eq(kvsim_pool_init(&p[m], N, &err), KVSIM_OK, "init: %s", err.msg);
  kvsim_block_id held[MAXH][N];
  int32_t hn[MAXH] = {0};
  int64_t ones = 0, hashed_heads = 0, emptied = 0;
  uint64_t x = 2463534242ull;
  for (int op = 0; op < OPS; op++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const int t = (int)(x % MAXH), kind = (int)((x >> 8) % 6);
    if (kind <= 1 && p[0].num_free > 0 && hn[t] < N) {
      /* a single block: the inline take on pool 0, the general one on 1 */
      hashed_heads += p[0].blocks[p[0].head].cached >= KVSIM_BLOCK_HASHED;
      const kvsim_block_id a = kvsim_pool_alloc_one(&p[0]);
      kvsim_block_id b;
      kvsim_pool_alloc(&p[1], 1, &b);
      cr_assert_eq(a, b, "op %d: block %d vs %d", op, a, b);
      held[t][hn[t]++] = a;
      ones++;
      emptied += p[0].num_free == 0;
    } else if (kind == 2 && hn[t] == 0) {
      const int32_t n = (int32_t)((x >> 16) % 4) + 1;
      if (n <= p[0].num_free) {
        for (int m = 0; m < 2; m++)
          kvsim_pool_alloc(&p[m], n, held[t]);
        hn[t] = n;
      }
    } else if (kind == 3 && hn[t] > 0) {
      const kvsim_block_id b = held[t][(x >> 20) % (uint64_t)hn[t]];
      const uint64_t h = (x >> 30) & 1 ? keys[(x >> 32) % KEYS] : KVSIM_ANON_HASH;
      for (int m = 0; m < 2; m++)
        if (!kvsim_pool_cached(&p[m], b))
          kvsim_pool_cache(&p[m], b, h);
    } else if (kind == 4 && hn[t] > 0) {
      const int32_t upto = (int32_t)((x >> 24) % (uint64_t)(hn[t] + 1));
      for (int m = 0; m < 2; m++)
        kvsim_pool_release_table(&p[m], held[t], hn[t], upto);
      hn[t] = 0;
    } else if (kind == 5) {
      const kvsim_block_id b = kvsim_pool_lookup(&p[0], keys[(x >> 36) % KEYS]);
      if (b > 0 && hn[t] < N) {
        for (int m = 0; m < 2; m++)
          kvsim_pool_touch(&p[m], b);
        held[t][hn[t]++] = b;
      }
    }
    same_pool(&p[0], &p[1], keys, KEYS, op);
    check(&p[0]);
  }
  cr_assert_gt(ones, 500, "single takes (%lld)", (long long)ones);
  cr_assert_gt(hashed_heads, 20, "hashed heads taken (%lld)", (long long)hashed_heads);
  cr_assert_gt(emptied, 20, "the queue emptied (%lld)", (long long)emptied);
  cr_assert_gt(p[0].evictions, 50, "evictions (%lld)", (long long)p[0].evictions);
  for (int m = 0; m < 2; m++)
    kvsim_pool_fini(&p[m]);
}
