/* Routing rules of the cluster (router.h). */
#include "engine/router.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/arith.h"

static const char *const names[] = {"round_robin", "least_loaded", "least_kv", "prefix_affinity"};

const char *kvsim_router_name(kvsim_router r) {
  return (unsigned)r < sizeof names / sizeof *names ? names[r] : "unknown";
}

int kvsim__router_parse(const char *name, kvsim_router *out) {
  for (unsigned i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(name, names[i])) {
      *out = (kvsim_router)i;
      return KVSIM_OK;
    }
  return KVSIM_EINVAL;
}

typedef struct point {
  uint64_t key;
  int32_t rep;
} point_t;

static int point_cmp(const void *a, const void *b) {
  const point_t *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->rep < y->rep ? -1 : x->rep > y->rep; /* ties: deterministic */
}

/* The ring: KVSIM__ROUTER_RING_POINTS pseudo-random points per replica,
 * from splitmix64 seeded by the replica index, sorted. A key belongs to
 * the first point at or after it (wrapping). Adding a replica moves only
 * the keys its points take over, the property production-stack relies on
 * when endpoints come and go (routing_logic.py _update_hash_ring). */
static int build_ring(kvsim__router_t *rt, kvsim_err *err) {
  int64_t n = (int64_t)rt->nrep * KVSIM__ROUTER_RING_POINTS;
  point_t *pts = kvsim__malloc((size_t)n * sizeof *pts);
  rt->ring_keys = kvsim__malloc((size_t)n * sizeof *rt->ring_keys);
  rt->ring_rep = kvsim__malloc((size_t)n * sizeof *rt->ring_rep);
  if (!pts || !rt->ring_keys || !rt->ring_rep) {
    kvsim__free(pts);
    return kvsim_err_set(err, KVSIM_ENOMEM, "router: out of memory for a ring of %lld points",
                         (long long)n);
  }
  int64_t k = 0;
  for (int32_t i = 0; i < rt->nrep; i++) {
    uint64_t state = kvsim__mix64(UINT64_C(0x726f75746572) ^ (uint64_t)i);
    for (int j = 0; j < KVSIM__ROUTER_RING_POINTS; j++)
      pts[k++] = (point_t){kvsim__splitmix64(&state), i};
  }
  qsort(pts, (size_t)n, sizeof *pts, point_cmp);
  for (int64_t j = 0; j < n; j++) {
    rt->ring_keys[j] = pts[j].key;
    rt->ring_rep[j] = pts[j].rep;
  }
  rt->ring_n = n;
  kvsim__free(pts);
  return KVSIM_OK;
}

int kvsim__router_init(kvsim__router_t *rt, kvsim_router kind, int32_t nrep, int64_t imbalance,
                       kvsim_err *err) {
  memset(rt, 0, sizeof *rt);
  rt->kind = kind;
  rt->nrep = nrep;
  rt->imbalance = imbalance;
  rt->routed = kvsim__calloc((size_t)nrep, sizeof *rt->routed);
  if (!rt->routed)
    return kvsim_err_set(err, KVSIM_ENOMEM, "router: out of memory for %d replicas", nrep);
  if (kind == KVSIM_ROUTER_PREFIX_AFFINITY && nrep > 1)
    return build_ring(rt, err);
  return KVSIM_OK;
}

void kvsim__router_fini(kvsim__router_t *rt) {
  kvsim__free(rt->tree);
  kvsim__free(rt->routed);
  kvsim__free(rt->ring_keys);
  kvsim__free(rt->ring_rep);
  memset(rt, 0, sizeof *rt);
}

bool kvsim__router_needs_load(const kvsim__router_t *rt) {
  return rt->nrep > 1 && rt->kind != KVSIM_ROUTER_ROUND_ROBIN;
}

uint64_t kvsim__router_prefix_key(const kvsim_segment_t *segs, int32_t nsegs, int32_t tenant) {
  if (!segs || nsegs <= 0)
    return 0;
  uint64_t k = kvsim__mix64(kvsim__mix64(segs[0].id) ^ (uint64_t)(uint32_t)tenant);
  return k ? k : 1; /* 0 means "no identity" */
}

static int32_t least_loaded(const kvsim__router_load_t *l, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (l[i].requests < l[best].requests)
      best = i;
  return best;
}

/* used_a / usable_a < used_b / usable_b, exactly (no rounding ties). */
static bool emptier(const kvsim__router_load_t *a, const kvsim__router_load_t *b) {
  int64_t ua = a->usable_blocks > 0 ? a->usable_blocks : 1;
  int64_t ub = b->usable_blocks > 0 ? b->usable_blocks : 1;
  /* Block counts are int32 (pool.h): the products fit in int64. */
  return a->used_blocks * ub < b->used_blocks * ua;
}

static int32_t least_kv(const kvsim__router_load_t *l, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (emptier(&l[i], &l[best]))
      best = i;
  return best;
}

/* The order the tree keeps: whether replica a's row is strictly better
 * than b's (least_kv by usage, the others by requests: prefix_affinity's
 * fallback is least_loaded). */
static bool better(const kvsim__router_t *rt, int32_t a, int32_t b) {
  const kvsim__router_load_t *l = rt->tracked;
  return rt->kind == KVSIM_ROUTER_LEAST_KV ? emptier(&l[a], &l[b]) : l[a].requests < l[b].requests;
}

/* The winner of two subtrees: the left one (lower indices) unless the
 * right one is strictly better, as the scans above keep the first best. */
static int32_t winner(const kvsim__router_t *rt, int32_t left, int32_t right) {
  if (left < 0 || right < 0)
    return left < 0 ? right : left;
  return better(rt, right, left) ? right : left;
}

int kvsim__router_track(kvsim__router_t *rt, const kvsim__router_load_t *loads, kvsim_err *err) {
  if (!kvsim__router_needs_load(rt))
    return KVSIM_OK;
  int32_t m = 1;
  while (m < rt->nrep)
    m *= 2;
  int32_t *tree = kvsim__malloc(2 * (size_t)m * sizeof *tree);
  if (!tree)
    return kvsim_err_set(err, KVSIM_ENOMEM, "router: out of memory for %d replicas' loads",
                         rt->nrep);
  rt->tree = tree;
  rt->tree_m = m;
  rt->tracked = loads;
  for (int32_t i = 0; i < m; i++)
    tree[m + i] = i < rt->nrep ? i : -1;
  for (int32_t k = m - 1; k >= 1; k--)
    tree[k] = winner(rt, tree[2 * k], tree[2 * k + 1]);
  return KVSIM_OK;
}

void kvsim__router_update(kvsim__router_t *rt, int32_t i, const kvsim__router_load_t *old) {
  if (!rt->tree)
    return;
  const kvsim__router_load_t *l = &rt->tracked[i];
  /* Most of a replica's events leave its request count alone. */
  if (l->requests == old->requests &&
      (rt->kind != KVSIM_ROUTER_LEAST_KV ||
       (l->used_blocks == old->used_blocks && l->usable_blocks == old->usable_blocks)))
    return;
  for (int32_t k = (rt->tree_m + i) / 2; k >= 1; k /= 2)
    rt->tree[k] = winner(rt, rt->tree[2 * k], rt->tree[2 * k + 1]);
}

/* The least-loaded (by the kind's order) replica: the tree's root when
 * tracking, else a scan. */
static int32_t best_of(const kvsim__router_t *rt, const kvsim__router_load_t *l) {
  if (rt->tree && l == rt->tracked)
    return rt->tree[1];
  return rt->kind == KVSIM_ROUTER_LEAST_KV ? least_kv(l, rt->nrep) : least_loaded(l, rt->nrep);
}

/* The replica owning `key` on the ring: the first point >= key. */
static int32_t ring_owner(const kvsim__router_t *rt, uint64_t key) {
  int64_t lo = 0, hi = rt->ring_n; /* first index with ring_keys >= key */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (rt->ring_keys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return rt->ring_rep[lo == rt->ring_n ? 0 : lo];
}

/* prefix_affinity follows vLLM production-stack's session router
 * (src/vllm_router/routers/routing_logic.py, SessionRouter.route_request):
 * a consistent-hash ring over the endpoints, keyed by what identifies the
 * cached context, and the least-loaded endpoint (_qps_routing there, the
 * fewest requests here) for a request that carries no key. The key here is
 * the prompt's first segment instead of a session header, so shared
 * system prompts stick as well as sessions. The router adds one guard that
 * the session router lacks: a replica whose load exceeds the least-loaded
 * one's by more than `imbalance` requests is passed over for the
 * least-loaded one, so that a popular prefix cannot pile its queue on one
 * replica while others idle (the balance check of SGLang's cache-aware
 * router, balance_abs_threshold, plays the same part). */
static int32_t prefix_affinity(kvsim__router_t *rt, uint64_t key, const kvsim__router_load_t *l) {
  int32_t least = best_of(rt, l);
  if (!key) {
    rt->no_identity++;
    return least;
  }
  int32_t owner = ring_owner(rt, key);
  if (l[owner].requests - l[least].requests > rt->imbalance) {
    rt->fallbacks++;
    return least;
  }
  rt->affinity_hits++;
  return owner;
}

int32_t kvsim__router_pick(kvsim__router_t *rt, uint64_t key, const kvsim__router_load_t *loads) {
  int32_t i = 0;
  if (rt->nrep > 1) {
    switch (rt->kind) {
    case KVSIM_ROUTER_LEAST_LOADED:
    case KVSIM_ROUTER_LEAST_KV:
      i = best_of(rt, loads);
      break;
    case KVSIM_ROUTER_PREFIX_AFFINITY:
      i = prefix_affinity(rt, key, loads);
      break;
    default:
      i = rt->rr;
      rt->rr = (rt->rr + 1) % rt->nrep;
      break;
    }
  }
  rt->routed[i]++;
  return i;
}
