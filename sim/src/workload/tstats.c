/* Trace statistics for `kvsim trace stats`: counts, rate, burstiness,
 * length percentiles (GSL), and the trace's prefix reuse: the ideal hit
 * rate with an unbounded cache and the hit rate of pure LRU caches. A
 * request's blocks are taken in file order; a block is a hit while it
 * continues an unbroken run of already-seen keys from the prompt's start
 * (prefix caching as vLLM's block hashes chain a block to its parent);
 * every block is inserted after the lookup. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "core/alloc.h"
#include "core/arith.h"
#include "core/blockhash.h"
#include "core/ilist.h"
#include "core/vec.h"
#include "workload/wl.h"

/* ---- LRU: hash map + intrusive doubly linked list over fixed slots ------ */

int kvsim__lru_init(kvsim__lru_t *l, int64_t capacity) {
  memset(l, 0, sizeof *l);
  if (capacity < 1 || capacity > INT32_MAX / 2)
    return KVSIM_EINVAL;
  l->cap = capacity;
  l->key = kvsim__malloc((size_t)capacity * sizeof *l->key);
  l->prev = kvsim__malloc((size_t)capacity * sizeof *l->prev);
  l->next = kvsim__malloc((size_t)capacity * sizeof *l->next);
  if (!l->key || !l->prev || !l->next || kvsim__u64map_init(&l->map, capacity) < 0) {
    kvsim__lru_fini(l);
    return KVSIM_ENOMEM;
  }
  l->head = l->tail = -1;
  return 0;
}

void kvsim__lru_fini(kvsim__lru_t *l) {
  kvsim__free(l->key);
  kvsim__free(l->prev);
  kvsim__free(l->next);
  kvsim__u64map_fini(&l->map);
  memset(l, 0, sizeof *l);
}

/* The list keeps the most recent slot at its tail and evicts its head. */
static kvsim__ilist_t lru_list(kvsim__lru_t *l) {
  return (kvsim__ilist_t){l->prev, l->next, &l->head, &l->tail};
}

static void lru_touch(kvsim__lru_t *l, int32_t i) {
  if (l->tail == i)
    return;
  kvsim__ilist_unlink(lru_list(l), i);
  kvsim__ilist_push_tail(lru_list(l), i);
}

int64_t kvsim__lru_request(kvsim__lru_t *l, const uint64_t *ids, int32_t n) {
  int64_t hits = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t slot = kvsim__u64map_get(&l->map, ids[i]);
    if (slot < 0)
      break;
    lru_touch(l, slot);
    hits++;
  }
  for (int32_t i = 0; i < n; i++) {
    int32_t slot = kvsim__u64map_get(&l->map, ids[i]);
    if (slot >= 0) {
      lru_touch(l, slot);
      continue;
    }
    if (l->size == l->cap) {
      slot = l->head;
      kvsim__ilist_unlink(lru_list(l), slot);
      kvsim__u64map_del(&l->map, l->key[slot]);
    } else {
      slot = (int32_t)l->size++;
    }
    l->key[slot] = ids[i];
    kvsim__u64map_put(&l->map, ids[i], slot);
    kvsim__ilist_push_tail(lru_list(l), slot);
  }
  l->hits += hits;
  l->lookups += n;
  return hits;
}

/* ---- prefix blocks ------------------------------------------------------------ */

static int grow_blocks(uint64_t **keys, int64_t **toks, int32_t *cap, int64_t need) {
  if (need <= *cap)
    return 0;
  if (need > KVSIM__MAX_PREFIX_BLOCKS)
    return KVSIM_EINVAL;
  /* Both arrays share one capacity; kvsim__grow leaves each as it was on
   * failure. */
  int64_t ck = *cap, ct = *cap;
  if (kvsim__grow((void **)keys, &ck, need, sizeof **keys) < 0 ||
      kvsim__grow((void **)toks, &ct, need, sizeof **toks) < 0)
    return KVSIM_ENOMEM;
  *cap = (int32_t)(ck < ct ? ck : ct);
  return 0;
}

int kvsim__prefix_blocks(const kvsim_req_spec_t *spec, int64_t block, bool raw_ids,
                         uint64_t **keys, int64_t **toks, int32_t *cap, int32_t *n) {
  *n = 0;
  bool aligned = raw_ids && spec->num_segments > 0;
  for (int32_t i = 0; aligned && i < spec->num_segments; i++)
    aligned = i + 1 < spec->num_segments ? spec->segments[i].len == block
                                         : spec->segments[i].len <= block;
  if (aligned) {
    if (grow_blocks(keys, toks, cap, spec->num_segments) < 0)
      return KVSIM_ENOMEM;
    for (int32_t i = 0; i < spec->num_segments; i++) {
      (*keys)[i] = spec->segments[i].id;
      (*toks)[i] = spec->segments[i].len;
    }
    *n = spec->num_segments;
    return 0;
  }
  kvsim_segment_t own = {kvsim_unique_segment_id(spec->id), spec->prompt_tokens};
  const kvsim_segment_t *seg = spec->num_segments > 0 ? spec->segments : &own;
  int32_t nseg = spec->num_segments > 0 ? spec->num_segments : 1;
  if (block < 1)
    return KVSIM_EINVAL;
  /* ceil(prompt / block) without prompt + block overflowing. */
  int64_t nblocks = spec->prompt_tokens / block + (spec->prompt_tokens % block != 0);
  if (nblocks > KVSIM__MAX_PREFIX_BLOCKS)
    return KVSIM_EINVAL;
  if (grow_blocks(keys, toks, cap, nblocks) < 0)
    return KVSIM_ENOMEM;
  /* The simulator's chain (core/blockhash.h), the last partial block
   * included, each key salted with the tenant as the cache keys it. */
  uint64_t h = KVSIM__HASH_NONE;
  const uint64_t tenant_salt = kvsim__tenant_salt(spec->tenant);
  int32_t si = 0;
  int64_t off = 0;
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t left = block, used = 0;
    while (left > 0 && si < nseg) {
      int64_t take = seg[si].len - off < left ? seg[si].len - off : left;
      h = kvsim__hash_piece(h, seg[si].id, off, take);
      off += take;
      left -= take;
      used += take;
      if (off == seg[si].len) {
        si++;
        off = 0;
      }
    }
    h = kvsim__hash_seal(h);
    (*keys)[b] = h ^ tenant_salt;
    (*toks)[b] = used;
  }
  *n = (int32_t)nblocks;
  return 0;
}

/* ---- the summary -------------------------------------------------------------------- */

static void len_stats(double *v, int64_t n, kvsim_len_stats_t *o) {
  memset(o, 0, sizeof *o);
  if (n == 0)
    return;
  gsl_sort(v, 1, (size_t)n);
  o->mean = gsl_stats_mean(v, 1, (size_t)n);
  o->p50 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.50);
  o->p90 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.90);
  o->p99 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.99);
  o->min = v[0];
  o->max = v[n - 1];
}

typedef kvsim__vec(double) dvec;

/* Prefix reuse over the trace: every block key seen so far (the ideal,
 * unbounded cache) and the LRU caches of the asked capacities. */
typedef struct reuse {
  int64_t block;
  kvsim__u64map_t seen;
  kvsim__lru_t lru[KVSIM_TRACE_MAX_LRU];
  uint64_t *keys;
  int64_t *toks;
  int32_t kcap;
} reuse_t;

static void reuse_fini(reuse_t *u) {
  kvsim__free(u->keys);
  kvsim__free(u->toks);
  for (int k = 0; k < KVSIM_TRACE_MAX_LRU; k++)
    if (u->lru[k].key || u->lru[k].map.keys)
      kvsim__lru_fini(&u->lru[k]);
  if (u->seen.keys)
    kvsim__u64map_fini(&u->seen);
}

static int reuse_init(reuse_t *u, const kvsim_trace_stats_t *st, kvsim_err *err) {
  if (kvsim__u64map_init(&u->seen, 1 << 16) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "trace stats: out of memory");
  for (int i = 0; i < st->nlru; i++) {
    int rc = kvsim__lru_init(&u->lru[i], st->lru_capacity[i]);
    if (rc < 0)
      return kvsim_err_set(err, rc, "--lru-blocks: bad capacity %lld", (long long)st->lru_capacity[i]);
  }
  return KVSIM_OK;
}

/* One request's blocks: the ideal hit (the run of seen keys from the
 * prompt's start), then every key inserted, then each LRU cache. */
static int reuse_add(reuse_t *u, const kvsim_req_spec_t *spec, bool raw_ids, kvsim_trace_stats_t *st,
                     kvsim_err *err) {
  int32_t nk = 0;
  int rc = kvsim__prefix_blocks(spec, u->block, raw_ids, &u->keys, &u->toks, &u->kcap, &nk);
  if (rc == KVSIM_EINVAL)
    return kvsim_err_set(err, rc, "request %llu: %lld prompt tokens are more than %d prefix blocks of %lld tokens",
                         (unsigned long long)spec->id, (long long)spec->prompt_tokens,
                         KVSIM__MAX_PREFIX_BLOCKS, (long long)u->block);
  if (rc < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "trace stats: out of memory");
  int32_t i = 0;
  bool ok = true;
  while (i < nk && kvsim__u64map_get(&u->seen, u->keys[i]) >= 0) {
    st->ideal_hit_blocks++;
    ok = ok && kvsim__add_i64(st->ideal_hit_tokens, u->toks[i], &st->ideal_hit_tokens);
    i++;
  }
  for (int32_t j = 0; j < nk; j++) {
    ok = ok && kvsim__add_i64(st->tokens, u->toks[j], &st->tokens);
    if (kvsim__u64map_get(&u->seen, u->keys[j]) < 0 && kvsim__u64map_put(&u->seen, u->keys[j], 0) < 0)
      return kvsim_err_set(err, KVSIM_ENOMEM, "trace stats: out of memory");
  }
  if (!ok)
    return kvsim_err_set(err, KVSIM_EINVAL, "request %llu: the trace's prompt tokens add up to more than %lld",
                         (unsigned long long)spec->id, (long long)INT64_MAX);
  st->blocks += nk;
  for (int k = 0; k < st->nlru; k++)
    st->lru_hits[k] += kvsim__lru_request(&u->lru[k], u->keys, nk);
  return KVSIM_OK;
}

static void reuse_rates(const reuse_t *u, kvsim_trace_stats_t *st) {
  st->distinct_blocks = u->seen.count;
  st->ideal_hit_rate_blocks = st->blocks ? (double)st->ideal_hit_blocks / st->blocks : 0;
  st->ideal_hit_rate_tokens = st->tokens ? (double)st->ideal_hit_tokens / st->tokens : 0;
  for (int k = 0; k < st->nlru; k++)
    st->lru_hit_rate[k] = st->blocks ? (double)st->lru_hits[k] / st->blocks : 0;
}

/* Span, rate, the busiest second and the inter-arrival gaps of n >= 1
 * sorted arrival times (arr is overwritten with the gaps). */
static void arrival_stats(double *arr, int64_t n, kvsim_trace_stats_t *st) {
  st->first_s = arr[0];
  st->last_s = arr[n - 1];
  st->duration_s = arr[n - 1] - arr[0];
  st->rate_rps = st->duration_s > 0 ? (double)n / st->duration_s : 0;
  int64_t run = 0, bin = -1;
  for (int64_t i = 0; i < n; i++) {
    int64_t b = (int64_t)floor(arr[i] - arr[0]);
    run = b == bin ? run + 1 : 1;
    bin = b;
    if (run > st->peak_1s)
      st->peak_1s = run;
  }
  if (n < 2)
    return;
  for (int64_t i = 0; i + 1 < n; i++) {
    arr[i] = arr[i + 1] - arr[i];
    if (arr[i] > st->max_gap_s)
      st->max_gap_s = arr[i];
  }
  st->interarrival_mean_s = gsl_stats_mean(arr, 1, (size_t)(n - 1));
  /* Population standard deviation over the mean (the CV of workloads/README.md,
   * "kvsim trace"). */
  double sd = sqrt(gsl_stats_variance_with_fixed_mean(arr, 1, (size_t)(n - 1), st->interarrival_mean_s));
  st->interarrival_cv = st->interarrival_mean_s > 0 ? sd / st->interarrival_mean_s : 0;
}

int kvsim_trace_stats(kvsim_source_t *src, bool raw_ids, kvsim_trace_stats_t *st, kvsim_err *err) {
  int64_t pb = st->prefix_block;
  int nlru = st->nlru < 0 ? 0 : st->nlru > KVSIM_TRACE_MAX_LRU ? KVSIM_TRACE_MAX_LRU : st->nlru;
  int64_t caps[KVSIM_TRACE_MAX_LRU];
  memcpy(caps, st->lru_capacity, sizeof caps);
  memset(st, 0, sizeof *st);
  st->prefix_block = pb;
  st->nlru = pb > 0 ? nlru : 0;
  memcpy(st->lru_capacity, caps, sizeof caps);
  st->arrivals = kvsim__source_has_arrivals(src);
  /* A length table has no prompt content: no reuse to count. */
  if (pb > 0 && !st->arrivals)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--prefix-block-size: a length table has no prompt content (no hash ids "
                         "or text): prefix reuse cannot be computed");

  dvec arrv = {0}, prv = {0}, outv = {0};
  int64_t n = 0;
  reuse_t u;
  memset(&u, 0, sizeof u);
  u.block = pb;
  int rc = pb > 0 ? reuse_init(&u, st, err) : KVSIM_OK;
  kvsim_req_spec_t spec;
  while (rc == KVSIM_OK && (rc = kvsim_source_next(src, &spec, err)) == KVSIM_SOURCE_REQUEST) {
    if (kvsim__vec_push(&arrv, kvsim_time_to_s(spec.arrival)) < 0 ||
        kvsim__vec_push(&prv, (double)spec.prompt_tokens) < 0 ||
        kvsim__vec_push(&outv, (double)spec.output_tokens) < 0) {
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "trace stats: out of memory");
      break;
    }
    n++;
    if (pb > 0 && (rc = reuse_add(&u, &spec, raw_ids, st, err)) < 0)
      break;
    kvsim_source_on_finish(src, &spec, spec.arrival, spec.output_tokens);
    rc = KVSIM_OK;
  }
  if (rc >= 0) {
    rc = 0;
    st->requests = n;
    st->skipped = kvsim_source_skipped(src);
    st->clipped = kvsim_source_clipped(src);
    if (n > 0) {
      arrival_stats(arrv.v, n, st);
      len_stats(prv.v, n, &st->prompt);
      len_stats(outv.v, n, &st->output);
    }
    if (!st->arrivals) {
      st->first_s = st->last_s = st->duration_s = st->rate_rps = NAN;
      st->interarrival_mean_s = st->interarrival_cv = st->max_gap_s = NAN;
      st->peak_1s = -1;
    }
    if (pb > 0)
      reuse_rates(&u, st);
  }
  kvsim__vec_free(&arrv);
  kvsim__vec_free(&prv);
  kvsim__vec_free(&outv);
  reuse_fini(&u);
  return rc;
}
