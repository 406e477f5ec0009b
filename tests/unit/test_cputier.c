#include <criterion/criterion.h>

#include "kvsim/cputier.h"

static void check(const kvsim_cpu_tier_t *t) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_cpu_tier_check(t, &err), KVSIM_OK, "CPU tier invariant: %s", err.msg);
}

Test(cputier, transfer_time_is_latency_plus_bytes_over_link) {
  kvsim_cpu_tier_t t;
  kvsim_err err;
  /* 1 MB blocks over 10 GB/s with 10 us latency. */
  cr_assert_eq(kvsim_cpu_tier_init(&t, 100, 1000000, 10, 10, false, &err), KVSIM_OK, "init");
  cr_assert_float_eq(kvsim_cpu_tier_transfer_s(&t, 5), 10e-6 + 5e6 / 10e9, 1e-12, "5 blocks");
  cr_assert_float_eq(kvsim_cpu_tier_transfer_s(&t, 0), 0, 1e-15, "nothing to move costs nothing");
  kvsim_cpu_tier_fini(&t);
}

Test(cputier, swap_space_is_bounded_and_counts_bytes_both_ways) {
  kvsim_cpu_tier_t t;
  kvsim_err err;
  kvsim_cpu_tier_init(&t, 10, 100, 1, 0, false, &err);
  cr_assert(kvsim_cpu_tier_swap_out(&t, 6), "6 of 10 blocks fit");
  cr_assert(!kvsim_cpu_tier_swap_out(&t, 5), "5 more do not");
  cr_assert_eq(t.swap_used, 6, "a failed swap-out takes nothing");
  kvsim_cpu_tier_swap_in(&t, 6);
  cr_assert_eq(t.swap_used, 0, "swapped back in");
  cr_assert_eq(t.bytes_to_cpu, 600, "bytes out");
  cr_assert_eq(t.bytes_to_gpu, 600, "bytes in");
  check(&t);
  kvsim_cpu_tier_fini(&t);
}

Test(cputier, offload_cache_evicts_least_recently_used) {
  kvsim_cpu_tier_t t;
  kvsim_err err;
  kvsim_cpu_tier_init(&t, 3, 100, 1, 0, true, &err);
  kvsim_cpu_tier_store(&t, 11);
  kvsim_cpu_tier_store(&t, 22);
  kvsim_cpu_tier_store(&t, 33);
  cr_assert(kvsim_cpu_tier_lookup(&t, 11), "11 is cached (and now most recent)");
  kvsim_cpu_tier_store(&t, 44); /* evicts 22, the least recent */
  cr_assert(!kvsim_cpu_tier_lookup(&t, 22), "22 was evicted");
  cr_assert(kvsim_cpu_tier_lookup(&t, 11), "11 survived");
  cr_assert(kvsim_cpu_tier_lookup(&t, 33) && kvsim_cpu_tier_lookup(&t, 44), "33 and 44 cached");
  cr_assert_eq(t.evictions, 1, "one eviction");
  check(&t);
  /* Swap space takes capacity from the cache, never the other way. */
  cr_assert(kvsim_cpu_tier_swap_out(&t, 0) && t.cached == 3, "cache full");
  cr_assert(!kvsim_cpu_tier_swap_out(&t, 1), "no free block for swap while the cache fills it");
  kvsim_cpu_tier_fini(&t);
}
