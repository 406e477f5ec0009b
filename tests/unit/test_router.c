/* The cluster router's rules (sim/src/engine/router.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "engine/router.h"

static kvsim__router_t make(kvsim_router kind, int32_t n, int64_t imbalance) {
  kvsim__router_t rt;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__router_init(&rt, kind, n, imbalance, &err), KVSIM_OK, "init: %s", err.msg);
  return rt;
}

static uint64_t key_of(uint64_t first_segment, int32_t tenant) {
  kvsim_segment_t segs[2] = {{first_segment, 800}, {0x4000000000000000ull | 99, 120}};
  return kvsim__router_prefix_key(segs, 2, tenant);
}

Test(router, names_round_trip) {
  const char *names[] = {"round_robin", "least_loaded", "least_kv", "prefix_affinity"};
  for (int i = 0; i < 4; i++) {
    kvsim_router r = KVSIM_ROUTER_ROUND_ROBIN;
    cr_assert_eq(kvsim__router_parse(names[i], &r), KVSIM_OK, "%s parses", names[i]);
    cr_assert_str_eq(kvsim_router_name(r), names[i], "%s prints back as itself", names[i]);
  }
  kvsim_router r = KVSIM_ROUTER_LEAST_KV;
  cr_assert_eq(kvsim__router_parse("random", &r), KVSIM_EINVAL, "an unknown router is refused");
  cr_assert_eq(r, KVSIM_ROUTER_LEAST_KV, "a refused name leaves the value alone");
}

Test(router, round_robin_takes_turns_and_counts) {
  kvsim__router_t rt = make(KVSIM_ROUTER_ROUND_ROBIN, 3, 0);
  cr_assert_not(kvsim__router_needs_load(&rt), "round robin reads no loads");
  for (int i = 0; i < 7; i++)
    cr_assert_eq(kvsim__router_pick(&rt, 0, NULL), i % 3, "request %d goes to replica %d", i, i % 3);
  cr_assert_eq(rt.routed[0], 3, "replica 0 got 3 of 7");
  cr_assert_eq(rt.routed[1] + rt.routed[2], 4, "the others got the rest");
  kvsim__router_fini(&rt);
}

Test(router, least_kv_picks_the_emptiest) {
  kvsim__router_t rt = make(KVSIM_ROUTER_LEAST_KV, 4, 0);
  cr_assert(kvsim__router_needs_load(&rt), "least_kv reads the loads");
  /* Replica 2 holds the fewest blocks for its size (10/200 = 5 %) though
   * it runs the most requests and holds more blocks than replica 1. */
  kvsim__router_load_t l[4] = {{1, 50, 100}, {1, 8, 100}, {9, 10, 200}, {0, 70, 100}};
  cr_assert_eq(kvsim__router_pick(&rt, 0, l), 2, "lowest used/usable wins, not fewest requests");
  l[1].used_blocks = 5; /* 5 % as well: the tie goes to the lower index */
  cr_assert_eq(kvsim__router_pick(&rt, 0, l), 1, "a tie in usage goes to the lower index");
  kvsim__router_load_t z[4] = {{0, 0, 100}, {0, 0, 100}, {0, 0, 100}, {0, 0, 100}};
  cr_assert_eq(kvsim__router_pick(&rt, 0, z), 0, "all empty: replica 0");
  kvsim__router_fini(&rt);
}

Test(router, least_loaded_counts_requests) {
  kvsim__router_t rt = make(KVSIM_ROUTER_LEAST_LOADED, 3, 0);
  kvsim__router_load_t l[3] = {{4, 0, 100}, {2, 90, 100}, {2, 1, 100}};
  cr_assert_eq(kvsim__router_pick(&rt, 0, l), 1, "fewest requests, first of the tied");
  kvsim__router_fini(&rt);
}

Test(router, prefix_key_is_the_first_segment_and_tenant) {
  cr_assert_eq(kvsim__router_prefix_key(NULL, 0, 0), 0u, "no segments: no identity");
  uint64_t a = key_of(7, 0);
  kvsim_segment_t longer[4] = {{7, 800}, {11, 50}, {12, 300}, {13, 40}};
  cr_assert_eq(kvsim__router_prefix_key(longer, 4, 0), a,
               "a later turn repeating the same opening has the same key");
  cr_assert_neq(key_of(8, 0), a, "another opening, another key");
  cr_assert_neq(key_of(7, 1), a, "another tenant (cache salt) cannot share: another key");
  cr_assert_neq(a, 0u, "a prompt with identity never has key 0");
}

Test(router, prefix_affinity_sends_a_prefix_to_one_replica) {
  kvsim__router_t rt = make(KVSIM_ROUTER_PREFIX_AFFINITY, 4, 16);
  kvsim__router_load_t l[4] = {{3, 0, 100}, {3, 0, 100}, {3, 0, 100}, {3, 0, 100}};
  int32_t seen[4] = {0};
  for (uint64_t g = 0; g < 64; g++) {
    uint64_t k = key_of(g, 0);
    int32_t first = kvsim__router_pick(&rt, k, l);
    seen[first]++;
    /* Loads move, within the threshold: the prefix stays where it is. */
    for (int j = 0; j < 5; j++) {
      l[j % 4].requests = 3 + (int64_t)((g + (uint64_t)j) % 7);
      cr_assert_eq(kvsim__router_pick(&rt, k, l), first, "prefix %llu stays on replica %d",
                   (unsigned long long)g, first);
    }
  }
  for (int i = 0; i < 4; i++)
    cr_assert_gt(seen[i], 4, "64 prefixes spread over every replica (replica %d got %d)", i, seen[i]);
  cr_assert_eq(rt.affinity_hits, 64 * 6, "every pick followed the ring");
  cr_assert_eq(rt.fallbacks, 0, "no fallback within the threshold");
  kvsim__router_fini(&rt);
}

Test(router, prefix_affinity_falls_back_when_its_replica_is_behind) {
  kvsim__router_t rt = make(KVSIM_ROUTER_PREFIX_AFFINITY, 4, 8);
  uint64_t k = key_of(42, 0);
  kvsim__router_load_t l[4] = {{5, 0, 100}, {5, 0, 100}, {5, 0, 100}, {5, 0, 100}};
  int32_t owner = kvsim__router_pick(&rt, k, l);
  int32_t other = (owner + 1) % 4;
  for (int i = 0; i < 4; i++)
    l[i].requests = i == other ? 2 : 10;
  /* The owner is 8 ahead of the least-loaded: at the threshold, kept. */
  cr_assert_eq(kvsim__router_pick(&rt, k, l), owner, "exactly `imbalance` ahead still keeps it");
  l[owner].requests = 11; /* 9 ahead: too far behind */
  cr_assert_eq(kvsim__router_pick(&rt, k, l), other, "past the threshold: the least-loaded replica");
  cr_assert_eq(rt.fallbacks, 1, "one fallback counted");
  cr_assert_eq(kvsim__router_pick(&rt, 0, l), other, "no identity: the least-loaded replica");
  cr_assert_eq(rt.no_identity, 1, "one request without identity counted");
  cr_assert_eq(rt.routed[owner] + rt.routed[other], 4, "every pick counted in routed");
  kvsim__router_fini(&rt);
}

Test(router, one_replica_takes_everything) {
  kvsim__router_t rt = make(KVSIM_ROUTER_PREFIX_AFFINITY, 1, 0);
  cr_assert_not(kvsim__router_needs_load(&rt), "one replica: nothing to compare");
  cr_assert_eq(kvsim__router_pick(&rt, key_of(1, 0), NULL), 0, "the only replica");
  cr_assert_eq(rt.routed[0], 1, "counted");
  kvsim__router_fini(&rt);
}

Test(router, init_out_of_memory_is_an_error) {
  kvsim__router_t rt;
  kvsim_err err = {0};
  kvsim__alloc_fail_after(1); /* routed succeeds, the ring does not */
  int rc = kvsim__router_init(&rt, KVSIM_ROUTER_PREFIX_AFFINITY, 8, 0, &err);
  kvsim__alloc_fail_after(-1);
  cr_assert_eq(rc, KVSIM_ENOMEM, "a ring that cannot be allocated is KVSIM_ENOMEM");
  cr_assert(strstr(err.msg, "router"), "the message names the router: %s", err.msg);
  kvsim__router_fini(&rt);
}

static int parse_hw(const char *hw, kvsim_scenario_t *sc, kvsim_err *err) {
  char text[1024];
  snprintf(text, sizeof text,
           "{ \"name\": \"t\", \"model\": \"llama-3.1-8b\", \"hardware\": { \"replicas\": 4, %s },"
           "  \"workload\": { \"synthetic\": { \"requests\": 1,"
           "     \"arrival\": { \"process\": \"constant\", \"rate\": 1 },"
           "     \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 10 },"
           "     \"output_tokens\": { \"dist\": \"fixed\", \"value\": 1 } } } }",
           hw);
  return kvsim_scenario_parse(text, "scen.json", ".", NULL, 0, sc, err);
}

Test(router, scenario_keys) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(parse_hw("\"router\": \"least_kv\"", &sc, &err), KVSIM_OK, "least_kv: %s", err.msg);
  cr_assert_eq(sc.router, KVSIM_ROUTER_LEAST_KV, "least_kv parsed");
  cr_assert_eq(sc.router_imbalance, KVSIM_ROUTER_IMBALANCE_DEFAULT, "the default threshold");
  kvsim_scenario_fini(&sc);
  cr_assert_eq(parse_hw("\"router\": \"prefix_affinity\", \"router_imbalance\": 4", &sc, &err),
               KVSIM_OK, "prefix_affinity: %s", err.msg);
  cr_assert_eq(sc.router, KVSIM_ROUTER_PREFIX_AFFINITY, "prefix_affinity parsed");
  cr_assert_eq(sc.router_imbalance, 4, "the threshold given");
  kvsim_scenario_fini(&sc);

  cr_assert_eq(parse_hw("\"router_imbalance\": -1", &sc, &err), KVSIM_EINVAL, "negative refused");
  cr_assert(strstr(err.msg, "router_imbalance") && strstr(err.msg, "-1"),
            "the message names the key and value: %s", err.msg);
  kvsim_scenario_fini(&sc);
  cr_assert_eq(parse_hw("\"router\": \"random\"", &sc, &err), KVSIM_EINVAL, "unknown refused");
  cr_assert(strstr(err.msg, "hardware.router") && strstr(err.msg, "prefix_affinity"),
            "the message names the key and the choices: %s", err.msg);
  kvsim_scenario_fini(&sc);
}

/* A tracking router (the tournament tree) picks what a scanning one
 * picks, on rows changed one at a time at random, for every kind that
 * reads loads and replica counts that are and are not powers of two;
 * ties are frequent (few distinct values) and must go to the lower index. */
Test(router, tracked_tree_picks_as_the_scan_does) {
  const kvsim_router kinds[] = {KVSIM_ROUTER_LEAST_LOADED, KVSIM_ROUTER_LEAST_KV,
                                KVSIM_ROUTER_PREFIX_AFFINITY};
  const int32_t sizes[] = {2, 3, 7, 64, 100, 256};
  unsigned x = 99;
  for (int k = 0; k < 3; k++)
    for (int z = 0; z < 6; z++) {
      int32_t n = sizes[z];
      kvsim__router_t tracked = make(kinds[k], n, 2), scanned = make(kinds[k], n, 2);
      kvsim__router_load_t *l = kvsim__calloc((size_t)n, sizeof *l);
      kvsim__router_load_t *copy = kvsim__calloc((size_t)n, sizeof *copy);
      cr_assert(l && copy);
      for (int32_t i = 0; i < n; i++)
        l[i] = (kvsim__router_load_t){i % 3, i % 5, 100 + 100 * (i % 2)};
      kvsim_err err = {0};
      cr_assert_eq(kvsim__router_track(&tracked, l, &err), KVSIM_OK);
      cr_assert_not_null(tracked.tree, "a load-reading router keeps a tree");
      for (int step = 0; step < 3000; step++) {
        x = x * 1103515245u + 12345u;
        int32_t i = (int32_t)((x >> 8) % (unsigned)n);
        kvsim__router_load_t old = l[i];
        l[i].requests = (x >> 20) % 4;
        l[i].used_blocks = (x >> 24) % 6;
        kvsim__router_update(&tracked, i, &old);
        memcpy(copy, l, (size_t)n * sizeof *l);
        uint64_t key = (x & 1) ? key_of(x >> 4, 0) : 0;
        int32_t want = kvsim__router_pick(&scanned, key, copy);
        int32_t got = kvsim__router_pick(&tracked, key, l);
        cr_assert_eq(got, want, "%s, %d replicas, step %d: tree picks %d, scan %d",
                     kvsim_router_name(kinds[k]), n, step, got, want);
      }
      cr_assert_eq(tracked.fallbacks, scanned.fallbacks, "the same fallbacks");
      kvsim__free(l);
      kvsim__free(copy);
      kvsim__router_fini(&tracked);
      kvsim__router_fini(&scanned);
    }
}

Test(router, round_robin_tracks_nothing) {
  kvsim__router_t rt = make(KVSIM_ROUTER_ROUND_ROBIN, 4, 0);
  kvsim__router_load_t l[4] = {{0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {0, 0, 1}};
  kvsim_err err = {0};
  cr_assert_eq(kvsim__router_track(&rt, l, &err), KVSIM_OK);
  cr_assert_null(rt.tree, "round robin needs no tree");
  kvsim__router_update(&rt, 2, &l[2]); /* harmless */
  cr_assert_eq(kvsim__router_pick(&rt, 0, l), 0);
  kvsim__router_fini(&rt);
}
