/* vllm-v1's implicit decode (sched/v1_implicit.c) against its explicit
 * loop: the same requests through two schedulers, one allowed to advance
 * its decode rows implicitly, must give the same steps, finishes and
 * counts. */
#include <criterion/criterion.h>
#include <string.h>

#include "kvsim/sched.h"
#include "sched_harness.h"

static void setup(env_t *e, int32_t blocks, bool prefix, bool implicit) {
  env_setup(e, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = blocks,
                            .budget = 24, .max_seqs = 8, .policy = KVSIM_POLICY_FCFS,
                            .chunked = true, .prefix = prefix, .max_model_len = 64});
  e->s->implicit_ok = implicit;
}

static void expect_same_requests(env_t *a, env_t *b, int step) {
  b->s->ops->sync(b->s);
  for (int i = 0; i < 16; i++) {
    const kvsim_request_t *x = &a->reqs[i], *y = &b->reqs[i];
    cr_assert_eq(x->status, y->status, "step %d, request %d: status", step, i);
    cr_assert_eq(x->num_computed, y->num_computed, "step %d, request %d: computed", step, i);
    cr_assert_eq(x->num_tokens, y->num_tokens, "step %d, request %d: tokens", step, i);
    cr_assert_eq(x->num_output, y->num_output, "step %d, request %d: outputs", step, i);
    cr_assert_eq(x->step_new, y->step_new, "step %d, request %d: step_new", step, i);
    cr_assert_eq(x->first_token, y->first_token, "step %d, request %d: first token", step, i);
    cr_assert_eq(x->finish, y->finish, "step %d, request %d: finish", step, i);
    cr_assert_eq(x->blocks[0].len, y->blocks[0].len, "step %d, request %d: blocks", step, i);
  }
}

/* Runs both schedulers over the same arrivals; returns the steps the
 * implicit one advanced rows without listing them. */
static int run_both(int32_t blocks, bool prefix) {
  env_t a, b;
  setup(&a, blocks, prefix, false);
  setup(&b, blocks, prefix, true);
  int fast = 0, preempted = 0, next = 0;
  for (int step = 0; step < 400; step++) {
    /* Arrivals: one every 7 steps, prompts 3 to 30, outputs 2 to 33. */
    if (step % 7 == 0 && next < 16) {
      add_prio(&a, next, 3 + (next * 11) % 28, 2 + (next * 13) % 32, 0);
      add_prio(&b, next, 3 + (next * 11) % 28, 2 + (next * 13) % 32, 0);
      next++;
    }
    schedule(&a);
    schedule(&b);
    cr_assert_eq(a.step.num_tokens, b.step.num_tokens, "step %d: tokens", step);
    cr_assert_eq(a.step.num_preempted, b.step.num_preempted, "step %d: preemptions", step);
    kvsim_step_sums_t x = a.step.sums, y = b.step.sums;
    x.maxcn = y.maxcn = 0; /* a bound, not a sum */
    cr_assert_eq(memcmp(&x, &y, sizeof x), 0, "step %d: the batch shape", step);
    cr_assert_eq(a.step.reqs.n, b.step.reqs.n + b.step.implicit_rows, "step %d: rows", step);
    fast += b.step.implicit_rows > 0;
    preempted += a.step.num_preempted;
    /* Mid-step, the synced counts and step_new are the explicit ones. */
    expect_same_requests(&a, &b, step);
    finish_step(&a);
    finish_step(&b);
    cr_assert_eq(a.done.n, b.done.n, "step %d: finished", step);
    for (int32_t i = 0; i < a.done.n; i++)
      cr_assert_eq(a.done.v[i]->spec.id, b.done.v[i]->spec.id, "step %d: finish order", step);
    cr_assert_eq(a.s->generation_tokens_total, b.s->generation_tokens_total, "step %d", step);
    cr_assert_eq(a.s->prompt_tokens_total, b.s->prompt_tokens_total, "step %d", step);
    cr_assert_eq(kvsim_pool_num_free(&a.kv.pool), kvsim_pool_num_free(&b.kv.pool), "step %d", step);
    expect_same_requests(&a, &b, step);
  }
  for (int i = 0; i < 16; i++)
    cr_assert_eq(a.reqs[i].status, KVSIM_REQ_FINISHED, "request %d finished", i);
  cr_assert_eq(blocks > 40, preempted == 0, "the small pool preempts, the large one does not");
  teardown_env(&a);
  teardown_env(&b);
  return fast;
}

Test(sched_v1_implicit, the_same_steps_as_the_explicit_loop_with_prefix_caching) {
  cr_assert_gt(run_both(200, true), 20, "most decode steps ran implicitly");
}

Test(sched_v1_implicit, the_same_steps_as_the_explicit_loop_without_prefix_caching) {
  cr_assert_gt(run_both(200, false), 20, "most decode steps ran implicitly");
}

Test(sched_v1_implicit, the_same_steps_in_a_pool_that_preempts) {
  cr_assert_gt(run_both(24, true), 0, "some steps ran implicitly between preemptions");
  cr_assert_gt(run_both(24, false), 0, "some steps ran implicitly between preemptions");
}

Test(sched_v1_implicit, not_allowed_means_every_row_listed) {
  env_t e;
  setup(&e, 200, true, false);
  add(&e, 0, 5, 30);
  add(&e, 1, 9, 30);
  for (int step = 0; step < 20; step++) {
    schedule(&e);
    cr_assert_eq(e.step.implicit_rows, 0, "step %d", step);
    finish_step(&e);
  }
  teardown_env(&e);
}
