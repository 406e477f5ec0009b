/* The cluster's router: which replica an arriving request goes to
 * (hardware.router). Internal to the engine: the run fills one load row
 * per replica and asks for a pick; the router keeps its own state (the
 * round-robin cursor, the consistent-hash ring) and counts what it did.
 *
 * - round_robin: replicas in turn.
 * - least_loaded: fewest requests running + waiting; ties by index.
 * - least_kv: lowest KV usage, used blocks / usable blocks (cached-but-free
 *   blocks count as free, like vllm:kv_cache_usage_perc); ties by index.
 * - prefix_affinity: the replica a consistent-hash ring assigns to the
 *   prompt's prefix key (kvsim__router_prefix_key), unless that replica's
 *   load exceeds the least-loaded replica's by more than the imbalance
 *   threshold; then, and for prompts without identity, least_loaded. */
#ifndef KVSIM_ENGINE_ROUTER_H
#define KVSIM_ENGINE_ROUTER_H

#include <stdbool.h>
#include <stdint.h>

#include "kvsim/error.h"
#include "kvsim/scenario.h"
#include "kvsim/workload.h"

/* Points per replica on the consistent-hash ring. More points spread the
 * keys more evenly over the replicas (the spread of a replica's share
 * shrinks as 1/sqrt(points)); 160 is what ketama rings (uhashring, used by
 * vLLM production-stack's SessionRouter) place per node: 40 hashes x 4. */
#define KVSIM__ROUTER_RING_POINTS 160

/* What the router sees of one replica when a request arrives. */
typedef struct kvsim__router_load {
  int64_t requests;     /* running + waiting */
  int64_t used_blocks;  /* blocks held by requests */
  int64_t usable_blocks;
} kvsim__router_load_t;

typedef struct kvsim__router {
  kvsim_router kind;
  int32_t nrep;
  int32_t rr;              /* round_robin's next replica */
  int64_t imbalance;       /* prefix_affinity's threshold, in requests */
  uint64_t *ring_keys;     /* sorted points of the ring (prefix_affinity) */
  int32_t *ring_rep;       /* the replica of each point */
  int64_t ring_n;
  int64_t *routed;         /* requests sent to each replica */
  int64_t affinity_hits;   /* prefix_affinity: sent to the ring's replica */
  int64_t fallbacks;       /* prefix_affinity: ring's replica too far behind */
  int64_t no_identity;     /* prefix_affinity: no prefix key, least-loaded */
  /* Tracking (kvsim__router_track): a tournament tree over the caller's
   * load rows, so that a pick reads the best replica at the root instead
   * of scanning every row. tree[1] is the root, tree[tree_m + i] replica
   * i's leaf, -1 a padding leaf. */
  const kvsim__router_load_t *tracked;
  int32_t *tree;
  int32_t tree_m;
} kvsim__router_t;

/* The router named `name` as a scenario spells it: KVSIM_OK, or
 * KVSIM_EINVAL (*out untouched) for an unknown name. */
int kvsim__router_parse(const char *name, kvsim_router *out);

/* Sets up a router over nrep >= 1 replicas; imbalance is prefix_affinity's
 * threshold (>= 0). Returns KVSIM_OK or KVSIM_ENOMEM (rt left empty, safe
 * to fini). */
int kvsim__router_init(kvsim__router_t *rt, kvsim_router kind, int32_t nrep, int64_t imbalance,
                       kvsim_err *err);
void kvsim__router_fini(kvsim__router_t *rt);

/* Whether kvsim__router_pick reads the load rows (round_robin does not,
 * so the run need not fill them). */
bool kvsim__router_needs_load(const kvsim__router_t *rt);

/* The prefix key of a prompt: a hash of its first segment (the unit that
 * prompts share: a system prompt, a multi-turn session's opening turn
 * that every later turn repeats, a Mooncake 512-token block) and its
 * tenant (cache salt: tenants never share blocks). 0 when the prompt has
 * no identity (no segments: it shares nothing). */
uint64_t kvsim__router_prefix_key(const kvsim_segment_t *segs, int32_t nsegs, int32_t tenant);

/* From now on the router keeps a tournament tree over `loads` (one row
 * per replica, owned by the caller, already filled): the caller calls
 * kvsim__router_update after each change of a row, and passes the same
 * array to kvsim__router_pick, which then reads the tree's root (the same
 * pick as the scan: the best row, ties by index) in O(1), an update
 * costing O(log replicas). For a run of many replicas whose rows change
 * only when their replica has an event. A no-op for kinds that read no
 * loads. KVSIM_OK or KVSIM_ENOMEM (the router keeps scanning). */
int kvsim__router_track(kvsim__router_t *rt, const kvsim__router_load_t *loads, kvsim_err *err);
/* Row i of the tracked loads was `old` and may have changed: the tree
 * replays its path when a field the kind orders by moved. */
void kvsim__router_update(kvsim__router_t *rt, int32_t i, const kvsim__router_load_t *old);

/* Picks the replica for a request with prefix key `key` (0 = none) given
 * one load row per replica (NULL allowed when !needs_load), and counts
 * it. Never fails. */
int32_t kvsim__router_pick(kvsim__router_t *rt, uint64_t key, const kvsim__router_load_t *loads);

#endif
