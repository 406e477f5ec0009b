/* contiguous profile: Orca-style iteration-level batching with contiguous
 * reservations in isolation (Max / Oracle / Pow2 sizes, first fit and
 * external fragmentation, joining and leaving every step, budget), then
 * end-to-end runs against vllm-v1 with the invariants checked. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/engine.h"
#include "kvsim/sched.h"
#include "sched_harness.h"

/* max_model_len 64 (16 blocks); `blocks` includes the null block. */
static void setup(env_t *e, const char *profile, int32_t blocks, int64_t budget, int64_t max_seqs,
                  bool oracle) {
  env_setup(e, (env_opts_t){.profile = profile, .engine = KVSIM_PLAN_V0, .blocks = blocks,
                            .budget = budget, .max_seqs = max_seqs, .max_model_len = 64,
                            .oracle = oracle});
}

Test(sched_contiguous, reservations_are_max_oracle_or_pow2) {
  struct {
    const char *profile;
    bool oracle;
    int64_t tokens;
  } cases[] = {{"contiguous", false, 64}, {"contiguous", true, 24}, {"contiguous-pow2", false, 32}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    env_t e;
    setup(&e, cases[k].profile, 101, 100, 8, cases[k].oracle);
    kvsim_request_t *a = add(&e, 0, 13, 8); /* 21 tokens in all */
    schedule(&e);
    cr_assert_eq(a->reserved_tokens, cases[k].tokens, "case %zu: %lld reserved, want %lld", k,
                 (long long)a->reserved_tokens, (long long)cases[k].tokens);
    cr_assert_eq(kvsim_kvcache_held(&e.kv, a), cases[k].tokens / 4, "case %zu: the blocks back it",
                 k);
    teardown_env(&e);
  }
}

Test(sched_contiguous, requests_join_and_leave_every_step) {
  env_t e;
  setup(&e, "contiguous", 101, 100, 8, false);
  kvsim_request_t *a = add(&e, 0, 8, 2);
  schedule(&e);
  finish_step(&e);
  kvsim_request_t *b = add(&e, 1, 6, 3);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 1, "a decodes");
  cr_assert_eq(tokens_of(&e, b), 6, "b's whole prompt joins the same step");
  finish_step(&e);
  cr_assert_eq(a->status, KVSIM_REQ_FINISHED, "a leaves after its 2 tokens");
  cr_assert_eq(kvsim_kvcache_held(&e.kv, a), 0, "its reservation is freed at once");
  cr_assert_eq(kvsim_pool_num_free(&e.kv.pool), 100 - 16, "only b's 16 blocks remain reserved");
  cr_assert_eq(e.s->num_preemptions, 0, "nothing is ever preempted");
  teardown_env(&e);
}

Test(sched_contiguous, first_fit_leaves_external_fragmentation) {
  env_t e;
  /* 24 usable blocks, oracle sizes: a, b, c take 8 blocks each. */
  setup(&e, "contiguous", 25, 1000, 8, true);
  kvsim_request_t *a = add(&e, 0, 28, 2), *b = add(&e, 1, 28, 4), *c = add(&e, 2, 28, 2);
  kvsim_request_t *d = add(&e, 3, 44, 4); /* 48 tokens = 12 blocks */
  kvsim_request_t *f = add(&e, 4, 4, 4);  /* 2 blocks */
  schedule(&e);
  cr_assert_eq(tokens_of(&e, d), 0, "the space is full");
  finish_step(&e);
  schedule(&e);
  finish_step(&e);
  cr_assert(a->status == KVSIM_REQ_FINISHED && c->status == KVSIM_REQ_FINISHED, "a and c are done");
  schedule(&e);
  cr_assert_eq(kvsim_pool_num_free(&e.kv.pool), 16, "16 blocks free in total");
  cr_assert_eq(tokens_of(&e, d), 0, "but in two gaps of 8: d's 12 do not fit");
  cr_assert_eq(tokens_of(&e, f), 0, "head-of-line: f waits behind d");
  cr_assert_eq(tokens_of(&e, b), 1, "b keeps decoding");
  while (b->status != KVSIM_REQ_FINISHED) {
    finish_step(&e);
    if (b->status != KVSIM_REQ_FINISHED)
      schedule(&e);
  }
  schedule(&e);
  cr_assert_eq(tokens_of(&e, d), 44, "with b gone the space is one extent: d fits");
  cr_assert_eq(tokens_of(&e, f), 4, "and f behind it");
  teardown_env(&e);
}

Test(sched_contiguous, the_budget_and_max_num_seqs_bound_each_step) {
  env_t e;
  setup(&e, "contiguous", 101, 10, 2, false);
  kvsim_request_t *a = add(&e, 0, 6, 5), *b = add(&e, 1, 6, 5), *c = add(&e, 2, 2, 5);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 6, "a fits the 10-token budget");
  cr_assert_eq(tokens_of(&e, b), 0, "b's 6 do not fit the 4 left (no chunking)");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, b), 6, "b joins next to a's decode: 7 tokens");
  cr_assert_eq(tokens_of(&e, c), 0, "max_num_seqs = 2");
  teardown_env(&e);
}

Test(sched_contiguous, a_prompt_over_the_budget_runs_alone) {
  env_t e;
  setup(&e, "contiguous", 101, 8, 4, false);
  kvsim_request_t *a = add(&e, 0, 20, 2);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 20, "alone in its step, or it would never run");
  teardown_env(&e);
}

/* End to end: the same traffic through vllm-v1 and contiguous. */

typedef struct capture {
  int64_t finished;
  int32_t ids[1024];
} capture_t;

static int on_request(void *ctx, const kvsim_request_t *r) {
  capture_t *c = ctx;
  cr_assert_lt(r->spec.id, 1024u, "small ids");
  c->ids[r->spec.id]++;
  if (r->status == KVSIM_REQ_FINISHED)
    c->finished++;
  return 0;
}

static void run_profile(const char *profile, bool oracle, int replicas, kvsim_run_stats_t *st) {
  char text[2048];
  snprintf(text, sizeof text,
           "{ \"seed\": 9, \"model\": \"llama-3.1-8b\","
           "  \"hardware\": { \"gpu\": \"h100-sxm\", \"replicas\": %d },"
           "  \"engine\": { \"profile\": \"%s\", \"oracle_lengths\": %s, \"max_model_len\": 2048,"
           "    \"num_gpu_blocks_override\": 1200 },"
           "  \"workload\": { \"synthetic\": { \"requests\": 300,"
           "     \"arrival\": { \"process\": \"poisson\", \"rate\": 6 },"
           "     \"prompt_tokens\": { \"dist\": \"uniform\", \"min\": 20, \"max\": 600 },"
           "     \"output_tokens\": { \"dist\": \"uniform\", \"min\": 1, \"max\": 500 } } } }",
           replicas, profile, oracle ? "true" : "null"); /* null: the default, any profile */
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK,
               "scenario: %s", err.msg);
  capture_t c;
  memset(&c, 0, sizeof c);
  kvsim_sink_t sink = {&c, NULL, on_request, NULL, NULL};
  kvsim_run_opts_t opts = {.check_invariants = true};
  cr_assert_eq(kvsim_run(&sc, &opts, &sink, st, &err), KVSIM_OK, "run: %s", err.msg);
  kvsim_scenario_fini(&sc);
  for (int i = 0; i < 300; i++)
    cr_assert_eq(c.ids[i], 1, "%s: request %d reported exactly once (%d)", profile, i, c.ids[i]);
  cr_assert_eq(c.finished, 300, "%s: every request finishes", profile);
}

Test(sched_contiguous, end_to_end_reservations_hold_far_fewer_real_tokens_than_paging) {
  kvsim_run_stats_t mx, orc, p2, v1;
  run_profile("contiguous", false, 2, &mx);
  run_profile("contiguous", true, 2, &orc);
  run_profile("contiguous-pow2", false, 2, &p2);
  run_profile("vllm-v1", false, 2, &v1);
  cr_assert_gt(v1.kv_token_fraction_mean, 0.9, "paging: over 90 %% real tokens (%f)",
               v1.kv_token_fraction_mean);
  cr_assert_lt(mx.kv_token_fraction_mean, 0.5, "max_model_len reservations: under half (%f)",
               mx.kv_token_fraction_mean);
  cr_assert_gt(orc.kv_token_fraction_mean, mx.kv_token_fraction_mean,
               "oracle wastes less than max");
  cr_assert_gt(p2.kv_token_fraction_mean, mx.kv_token_fraction_mean, "pow2 wastes less than max");
  cr_assert_lt(orc.kv_token_fraction_mean, v1.kv_token_fraction_mean,
               "even the oracle reserves output not yet generated");
  cr_assert_eq(mx.preemptions, 0, "reservations never preempt");
}
