/* LoRA at run time: the worker's two adapter LRUs (kvsim/lora.h) and the
 * vllm-v1 scheduler's max_loras limit per step. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/lora.h"
#include "kvsim/sched.h"
#include "sched_harness.h"

/* 2 GPU slots, a host cache of 3; 1 MB per slot over 1 GB/s with no
 * latency (1 ms a copy), 3.5 MB per checkpoint (1 ms from disk). */
static void cache(kvsim_lora_cache_t *c) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_lora_cache_init(c, 2, 3, 1000000, 3500000, 1.0, 0, &err), KVSIM_OK, "init: %s",
               err.msg);
}

Test(lora_cache, first_use_reads_from_disk_then_copies_into_a_slot) {
  kvsim_lora_cache_t c;
  cache(&c);
  kvsim_time_ns ns = 0;
  cr_assert_eq(kvsim_lora_cache_use(&c, 7, &ns), KVSIM_LORA_LOADED | KVSIM_LORA_FROM_DISK,
               "a new adapter comes from disk into a slot");
  cr_assert_eq(ns, 2000000, "1 ms from disk + 1 ms over the host link, got %lld", (long long)ns);
  cr_assert_eq(kvsim_lora_cache_use(&c, 7, &ns), KVSIM_LORA_HIT, "in a slot: nothing moves");
  cr_assert_eq(ns, 0, "a hit costs nothing");
  cr_assert_eq(c.loads, 1, "one slot load");
  cr_assert_eq(c.cpu_misses, 1, "one disk read");
  kvsim_lora_cache_fini(&c);
}

Test(lora_cache, slots_evict_their_lru_and_the_host_cache_keeps_it) {
  kvsim_lora_cache_t c;
  cache(&c);
  kvsim_time_ns ns;
  kvsim_lora_cache_use(&c, 1, &ns);
  kvsim_lora_cache_use(&c, 2, &ns);
  kvsim_lora_cache_use(&c, 1, &ns); /* 2 is now the slots' LRU */
  cr_assert_eq(kvsim_lora_cache_use(&c, 3, &ns), KVSIM_LORA_LOADED | KVSIM_LORA_FROM_DISK,
               "3 is new");
  cr_assert_eq(kvsim_lora_cache_use(&c, 1, &ns), KVSIM_LORA_HIT, "1 kept its slot (2 was the LRU)");
  cr_assert_eq(kvsim_lora_cache_use(&c, 2, &ns), KVSIM_LORA_LOADED,
               "2 lost its slot but is still in host memory: copied, not read");
  cr_assert_eq(ns, 1000000, "only the host-link copy, got %lld", (long long)ns);
  cr_assert_eq(c.loads, 4, "slot loads: 1, 2, 3, 2 again");
  cr_assert_eq(c.cpu_misses, 3, "disk reads: 1, 2, 3");
  kvsim_lora_cache_fini(&c);
}

Test(lora_cache, host_eviction_takes_the_adapter_out_of_its_slot_too) {
  kvsim_lora_cache_t c;
  cache(&c);
  kvsim_time_ns ns;
  kvsim_lora_cache_use(&c, 1, &ns);
  kvsim_lora_cache_use(&c, 2, &ns);
  kvsim_lora_cache_use(&c, 3, &ns); /* host: 1 2 3; slots: 2 3 */
  kvsim_lora_cache_use(&c, 4, &ns); /* host evicts 1; slots: 3 4 */
  cr_assert_eq(kvsim_lora_cache_use(&c, 1, &ns), KVSIM_LORA_LOADED | KVSIM_LORA_FROM_DISK,
               "1 left the host cache: read again");
  cr_assert_eq(c.cpu_n, 3, "the host cache stays at max_cpu_loras");
  cr_assert_eq(c.gpu_n, 2, "the slots stay at max_loras");
  /* Host: 3 4 1 (2 was its LRU); 2 must not linger in a slot. */
  for (int32_t i = 0; i < c.gpu_n; i++)
    cr_assert_neq(c.gpu_id[i], 2, "an adapter the host cache dropped holds no slot");
  kvsim_lora_cache_fini(&c);
}

/* The scheduler: 2 slots, 4 waiting requests of adapters 1, 2, 3, 1. */
static void lora_env(env_t *e, kvsim_lora_cache_t *c) {
  env_setup(e, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = 64,
                            .budget = 100, .max_seqs = 8, .chunked = true});
  e->s->cfg.max_loras = 2;
  cache(c);
  e->s->lora = c;
}

Test(lora_sched, a_third_adapter_is_skipped_and_a_later_request_of_a_running_one_admitted) {
  env_t e;
  kvsim_lora_cache_t c;
  lora_env(&e, &c);
  const int32_t ids[4] = {1, 2, 3, 1};
  kvsim_request_t *r[4];
  for (int i = 0; i < 4; i++) {
    e.reqs[i].spec.lora = ids[i];
    r[i] = add(&e, i, 8, 2);
  }
  e.step.lora_ns = 0;
  schedule(&e);
  cr_assert_eq(tokens_of(&e, r[0]), 8, "adapter 1 admitted");
  cr_assert_eq(tokens_of(&e, r[1]), 8, "adapter 2 admitted");
  cr_assert_eq(tokens_of(&e, r[2]), 0, "adapter 3 would be a third: skipped (max_loras 2)");
  cr_assert_eq(tokens_of(&e, r[3]), 8, "a request of adapter 1 behind it is admitted");
  cr_assert_eq(kvsim_waitq_peek(&e.s->waiting), r[2], "the skipped request keeps the queue's head");
  cr_assert_eq(e.s->lora_skips, 1, "one skip counted");
  cr_assert_eq(c.loads, 2, "two adapters loaded for the step");
  cr_assert_eq(e.step.lora_ns, 4000000, "two disk reads and copies, got %lld",
               (long long)e.step.lora_ns);
  finish_step(&e);
  e.step.lora_ns = 0;
  schedule(&e);
  cr_assert_eq(tokens_of(&e, r[2]), 0, "adapters 1 and 2 still run: 3 still waits");
  finish_step(&e); /* every running request has its 2 tokens */
  cr_assert_eq(e.s->running.n, 0, "all three finished");
  e.step.lora_ns = 0;
  schedule(&e);
  cr_assert_eq(tokens_of(&e, r[2]), 8, "slots free: adapter 3 runs");
  cr_assert_eq(c.loads, 3, "adapter 3 loaded, evicting a slot");
  teardown_env(&e);
  kvsim_lora_cache_fini(&c);
}

Test(lora_sched, base_model_requests_are_never_held_back) {
  env_t e;
  kvsim_lora_cache_t c;
  lora_env(&e, &c);
  const int32_t ids[4] = {1, 2, 3, 0};
  kvsim_request_t *r[4];
  for (int i = 0; i < 4; i++) {
    e.reqs[i].spec.lora = ids[i];
    r[i] = add(&e, i, 8, 2);
  }
  schedule(&e);
  cr_assert_eq(tokens_of(&e, r[2]), 0, "the third adapter is skipped");
  cr_assert_eq(tokens_of(&e, r[3]), 8, "a base-model request is not limited by max_loras");
  teardown_env(&e);
  kvsim_lora_cache_fini(&c);
}

Test(lora_sched, without_lora_the_head_of_line_rule_is_unchanged) {
  env_t e;
  env_setup(&e, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = 64,
                             .budget = 100, .max_seqs = 8, .chunked = true});
  kvsim_request_t *r[3];
  for (int i = 0; i < 3; i++) {
    e.reqs[i].spec.lora = i + 1; /* ignored: LoRA off */
    r[i] = add(&e, i, 8, 2);
  }
  schedule(&e);
  for (int i = 0; i < 3; i++)
    cr_assert_eq(tokens_of(&e, r[i]), 8, "request %d admitted with LoRA off", i);
  teardown_env(&e);
}
