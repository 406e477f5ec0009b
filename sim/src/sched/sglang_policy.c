/* The sglang profile's queue orders (python/sglang/srt/managers/
 * schedule_policy.py SchedulePolicy): fcfs, lpm (longest cached prefix,
 * FCFS past 128 waiting or without the radix cache), lof (longest output
 * first), random (a seeded shuffle). */
#include <stdbool.h>
#include <string.h>

#include "core/alloc.h"
#include "core/arith.h"
#include "sched/sglang.h"

/* A prefix match without the lookup's side effects (LPM's sort key):
 * the KV manager's counters are put back. */
static int64_t probe(kvsim_kvcache_t *kv, kvsim_request_t *r) {
  int64_t q = kv->queries, h = kv->hits, pq = kv->preempted_queries, ph = kv->preempted_hits;
  int64_t eq = kv->ext_queries, eh = kv->ext_hits, lost = kv->isolation_lost;
  int64_t hit = kvsim_kvcache_lookup(kv, r, r->num_preemptions > 0);
  kv->queries = q, kv->hits = h, kv->preempted_queries = pq, kv->preempted_hits = ph;
  kv->ext_queries = eq, kv->ext_hits = eh, kv->isolation_lost = lost;
  kv->hit_req = NULL;
  return hit;
}

static uint64_t next_rand(sgl_t *v) { return kvsim__splitmix64(&v->rng); }

/* Insertion sort by descending key, stable (queues are short for LPM and
 * the order is mostly kept for LOF). */
static void sort_desc(kvsim_request_t **r, int64_t *k, int64_t n) {
  for (int64_t i = 1; i < n; i++) {
    kvsim_request_t *x = r[i];
    int64_t kx = k[i], j = i;
    for (; j > 0 && k[j - 1] < kx; j--)
      r[j] = r[j - 1], k[j] = k[j - 1];
    r[j] = x, k[j] = kx;
  }
}

/* schedule_policy.py IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD and
 * IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD (both 32 tokens). */
#define IN_BATCH_CHECK 32
#define IN_BATCH_DEPRIORITIZE 32

/* Prompt tokens two requests share from the start (their content
 * segments), at most the shorter prompt less its last token
 * (adjust_max_prefix_ids). Prompts without identity share nothing. */
static int64_t common_prefix(const kvsim_request_t *a, const kvsim_request_t *b) {
  if (a->anon || b->anon)
    return 0;
  int64_t t = 0;
  for (int32_t k = 0; k < a->num_segs && k < b->num_segs; k++) {
    const kvsim_segment_t *x = &a->segs[k], *y = &b->segs[k];
    if (x->id != y->id)
      break;
    t += x->len < y->len ? x->len : y->len;
    if (x->len != y->len)
      break;
  }
  int64_t cap = (a->num_prompt < b->num_prompt ? a->num_prompt : b->num_prompt) - 1;
  return t < cap ? t : cap;
}

/* In-batch prefix caching (SchedulePolicy._compute_prefix_matches): in
 * queue order, a request with at most 32 cached tokens that shares at
 * least 32 with a request already in the waiting queue's simulated tree
 * is deprioritized (sorted last), so that the first one's prefill caches
 * the prefix for it; the others enter the tree. */
static void in_batch_deprioritize(kvsim_request_t *const *r, int64_t *keys, int32_t n) {
  bool in_tree[LPM_MAX_QUEUE];
  for (int32_t i = 0; i < n; i++) {
    in_tree[i] = false;
    if (keys[i] > IN_BATCH_CHECK)
      continue;
    int64_t shared = 0;
    for (int32_t j = 0; j < i && shared < IN_BATCH_DEPRIORITIZE; j++)
      if (in_tree[j]) {
        int64_t c = common_prefix(r[i], r[j]);
        shared = c > shared ? c : shared;
      }
    if (shared >= IN_BATCH_DEPRIORITIZE)
      keys[i] = -1;
    else
      in_tree[i] = true;
  }
}

/* The waiting queue in the active policy's order (SchedulePolicy.calc_priority). */
int kvsim__sgl_policy_order(sgl_t *v, int *policy) {
  kvsim_sched_t *s = &v->s;
  int32_t n = s->waiting.n;
  *policy = kvsim__sgl_opts(s)->policy;
  if (*policy == SGL_LPM && (n > LPM_MAX_QUEUE || !s->cfg.enable_prefix_caching))
    *policy = SGL_FCFS; /* _determine_active_policy / _validate_and_adjust_policy */
  if (*policy == SGL_FCFS)
    return KVSIM_OK;
  if (kvsim_reqvec_reserve(&v->order, n) < 0)
    return KVSIM_ENOMEM;
  if (n > v->keys_cap) {
    int64_t *k = kvsim__realloc(v->keys, (size_t)n * sizeof *k);
    if (!k)
      return KVSIM_ENOMEM;
    v->keys = k, v->keys_cap = n;
  }
  for (int32_t i = 0; i < n; i++) {
    kvsim_request_t *r = kvsim_waitq_at(&s->waiting, i);
    v->order.v[i] = r;
    if (*policy == SGL_LPM) {
      int64_t hit = probe(s->kv, r);
      if (hit < 0)
        return (int)hit;
      v->keys[i] = hit;
    } else {
      v->keys[i] = *policy == SGL_LOF ? r->spec.output_tokens : 0;
    }
  }
  v->order.n = n;
  if (*policy == SGL_LPM)
    in_batch_deprioritize(v->order.v, v->keys, n);
  if (*policy == SGL_RANDOM) /* random.shuffle */
    for (int32_t i = n - 1; i > 0; i--) {
      int32_t j = (int32_t)(next_rand(v) % (uint64_t)(i + 1));
      kvsim_request_t *t = v->order.v[i];
      v->order.v[i] = v->order.v[j], v->order.v[j] = t;
    }
  else
    sort_desc(v->order.v, v->keys, n);
  return KVSIM_OK;
}
