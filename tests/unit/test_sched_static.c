/* static profile: FasterTransformer-style batches in isolation (slots,
 * padded prefill, finished members keeping their slot until the batch
 * ends), then end-to-end runs with the invariants checked every step. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/engine.h"
#include "kvsim/sched.h"
#include "sched_harness.h"

/* max_model_len 32 (8 blocks a slot); `blocks` includes the null block. */
static void setup(env_t *e, int32_t blocks, int64_t max_seqs) {
  env_setup(e, (env_opts_t){.profile = "static", .engine = KVSIM_PLAN_V0, .blocks = blocks,
                            .budget = 64, .max_seqs = max_seqs, .max_model_len = 32});
}

Test(sched_static, a_batch_takes_as_many_slots_as_the_pool_holds) {
  env_t e;
  setup(&e, 25, 8); /* 24 usable blocks = 3 slots of 8 */
  kvsim_request_t *r[5];
  for (int i = 0; i < 5; i++)
    r[i] = add(&e, i, 4, 2);
  schedule(&e);
  cr_assert_eq(e.s->running.n, 3, "min(max_num_seqs 8, 24 blocks / 8 per slot) = 3 members");
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(r[i]->reserved_tokens, 32, "member %d reserves max_model_len", i);
    cr_assert_eq(kvsim_kvcache_held(&e.kv, r[i]), 8, "member %d holds its slot's 8 blocks", i);
  }
  cr_assert_eq(kvsim_pool_num_free(&e.kv.pool), 0, "the pool is all reservation");
  cr_assert_eq(r[3]->status, KVSIM_REQ_WAITING, "the fourth waits for the next batch");
  teardown_env(&e);
}

Test(sched_static, max_num_seqs_caps_the_batch) {
  env_t e;
  setup(&e, 101, 2);
  for (int i = 0; i < 4; i++)
    add(&e, i, 4, 2);
  schedule(&e);
  cr_assert_eq(e.s->running.n, 2, "max_num_seqs = 2 although 12 slots would fit");
  teardown_env(&e);
}

Test(sched_static, the_prefill_is_padded_to_the_longest_prompt) {
  env_t e;
  setup(&e, 25, 8);
  kvsim_request_t *a = add(&e, 0, 4, 3), *b = add(&e, 1, 10, 3);
  schedule(&e);
  cr_assert_eq(e.step.num_tokens, 20, "2 members x 10 tokens: padding is computed");
  cr_assert_eq(tokens_of(&e, a), 4, "a's own tokens");
  cr_assert_eq(tokens_of(&e, b), 10, "b's own tokens");
  cr_assert_eq(e.step.reqs.n, 3, "a placeholder carries a's 6 tokens of padding");
  finish_step(&e);
  cr_assert_eq(a->num_computed, 4, "padding is not a's KV");
  cr_assert_eq(b->num_computed, 10, "b's prompt");
  cr_assert(a->first_token == 10 && b->first_token == 10, "first tokens at the end of the prefill");
  cr_assert_eq(e.s->prompt_tokens_total, 14, "real prompt tokens only");
  teardown_env(&e);
}

Test(sched_static, finished_members_keep_their_slot_until_the_batch_ends) {
  env_t e;
  setup(&e, 25, 8);
  kvsim_request_t *a = add(&e, 0, 4, 1), *b = add(&e, 1, 4, 3);
  schedule(&e);
  finish_step(&e);
  cr_assert_eq(a->status, KVSIM_REQ_FINISHED, "a's only token came with the prefill");
  cr_assert_eq(e.done.n, 1, "a is reported at its own last token");
  cr_assert_eq(a->finish, 10, "its finish time is its last token's");
  cr_assert_eq(kvsim_kvcache_held(&e.kv, a), 0, "the request object gives its blocks up");
  cr_assert_eq(held_count(&e), 1, "a placeholder holds a's slot");
  cr_assert_eq(kvsim_pool_num_free(&e.kv.pool), 8, "a's 8 blocks stay reserved (24 - 2 slots)");
  kvsim_request_t *c = add(&e, 2, 4, 1);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, c), 0, "no joining a running batch");
  cr_assert_eq(tokens_of(&e, b), 1, "b decodes");
  cr_assert_eq(e.step.reqs.n, 2, "a's slot is still computed (batch position)");
  finish_step(&e);
  schedule(&e);
  finish_step(&e);
  cr_assert_eq(b->status, KVSIM_REQ_FINISHED, "the longest member is done");
  cr_assert_eq(held_count(&e), 0, "the batch ended: slots released");
  cr_assert_eq(kvsim_pool_num_free(&e.kv.pool), 24, "all memory free");
  schedule(&e);
  cr_assert_eq(tokens_of(&e, c), 4, "the next batch starts with c");
  teardown_env(&e);
}

/* End to end. */

typedef struct capture {
  int64_t finished;
  int32_t ids[1024];
  double ttft_sum;
} capture_t;

static int on_request(void *ctx, const kvsim_request_t *r) {
  capture_t *c = ctx;
  cr_assert_lt(r->spec.id, 1024u, "small ids");
  c->ids[r->spec.id]++;
  if (r->status == KVSIM_REQ_FINISHED) {
    c->finished++;
    c->ttft_sum += (double)(r->first_token - r->arrival);
    cr_assert_geq(r->finish, r->first_token, "finish after the first token");
  }
  return 0;
}

static void run_static(int replicas, capture_t *c, kvsim_run_stats_t *st) {
  char text[2048];
  snprintf(text, sizeof text,
           "{ \"seed\": 5, \"model\": \"llama-3.1-8b\","
           "  \"hardware\": { \"gpu\": \"h100-sxm\", \"replicas\": %d },"
           "  \"engine\": { \"profile\": \"static\", \"max_model_len\": 2048, "
           "\"num_gpu_blocks_override\": 1024 },"
           "  \"workload\": { \"synthetic\": { \"requests\": 200,"
           "     \"arrival\": { \"process\": \"poisson\", \"rate\": 8 },"
           "     \"prompt_tokens\": { \"dist\": \"uniform\", \"min\": 20, \"max\": 900 },"
           "     \"output_tokens\": { \"dist\": \"uniform\", \"min\": 1, \"max\": 600 } } } }",
           replicas);
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK,
               "scenario: %s", err.msg);
  memset(c, 0, sizeof *c);
  kvsim_sink_t sink = {c, NULL, on_request, NULL, NULL};
  kvsim_run_opts_t opts = {.check_invariants = true};
  cr_assert_eq(kvsim_run(&sc, &opts, &sink, st, &err), KVSIM_OK, "run: %s", err.msg);
  kvsim_scenario_fini(&sc);
  for (int i = 0; i < 200; i++)
    cr_assert_eq(c->ids[i], 1, "request %d reported exactly once (%d)", i, c->ids[i]);
  cr_assert_eq(c->finished, 200, "every request finishes");
}

Test(sched_static, end_to_end_batches_keep_the_invariants_and_show_the_reservation) {
  capture_t c, d;
  kvsim_run_stats_t st, sd;
  run_static(2, &c, &st);
  cr_assert_eq(st.preemptions, 0, "static batching never preempts");
  cr_assert_lt(st.kv_token_fraction_mean, 0.6, "max_model_len slots hold few real tokens (%f)",
               st.kv_token_fraction_mean);
  cr_assert_gt(st.kv_reserved_unused_bytes_mean, 0, "the reservation shows as reserved-unused");
  run_static(2, &d, &sd);
  cr_assert_eq(st.steps, sd.steps, "deterministic: same steps");
  cr_assert_eq(c.ttft_sum, d.ttft_sum, "deterministic: same latencies");
}
