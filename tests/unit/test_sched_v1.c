#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/sched.h"
#include "sched_harness.h"

static void setup(env_t *e, int32_t blocks, int64_t budget, int64_t max_seqs, kvsim_policy pol) {
  env_setup(e, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = blocks,
                            .budget = budget, .max_seqs = max_seqs, .policy = pol,
                            .chunked = true});
}

Test(sched_v1, token_budget_and_chunked_prefill) {
  env_t e;
  setup(&e, 64, 12, 8, KVSIM_POLICY_FCFS);
  kvsim_request_t *a = add_prio(&e, 0, 10, 3, 0), *b = add_prio(&e, 1, 10, 3, 0);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 10, "a's whole prompt fits the budget");
  cr_assert_eq(tokens_of(&e, b), 2, "b gets the remaining 2 tokens: a chunk");
  finish_step(&e);
  cr_assert_eq(a->num_output, 1, "a's prefill finished: first token sampled");
  cr_assert_eq(a->first_token, 10, "first token at the end of the step");
  cr_assert_eq(b->num_output, 0, "b is still in prefill");
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 1, "a decodes one token (running first)");
  cr_assert_eq(tokens_of(&e, b), 8, "b finishes its prompt");
  finish_step(&e);
  cr_assert_eq(b->num_output, 1, "b's first token");
  teardown_env(&e);
}

Test(sched_v1, requests_finish_after_their_output_and_free_their_blocks) {
  env_t e;
  setup(&e, 64, 100, 8, KVSIM_POLICY_FCFS);
  kvsim_request_t *a = add_prio(&e, 0, 8, 3, 0);
  for (int i = 0; i < 3; i++) {
    schedule(&e);
    finish_step(&e);
  }
  cr_assert_eq(a->status, KVSIM_REQ_FINISHED, "3 outputs after 3 steps (prefill + 2 decodes)");
  cr_assert_eq(e.done.n, 1, "reported as finished");
  cr_assert_eq(e.s->running.n, 0, "left the running list");
  cr_assert_eq(kvsim_pool_num_free(&e.kv.pool), 63, "its blocks are free");
  cr_assert_eq(e.s->generation_tokens_total, 3, "3 generated tokens counted");
  teardown_env(&e);
}

Test(sched_v1, preempts_the_last_running_request_and_admits_nothing_that_step) {
  env_t e;
  /* 6 usable blocks of 4 = 24 tokens. */
  setup(&e, 7, 100, 8, KVSIM_POLICY_FCFS);
  kvsim_request_t *a = add_prio(&e, 0, 8, 100, 0), *b = add_prio(&e, 1, 8, 100, 0);
  schedule(&e); /* a: 2 blocks, b: 2 blocks */
  finish_step(&e);
  kvsim_request_t *c = add_prio(&e, 2, 4, 2, 0);
  int preempted = 0;
  for (int i = 0; i < 12 && !preempted; i++) {
    schedule(&e);
    preempted = e.step.num_preempted;
    if (!preempted)
      finish_step(&e);
  }
  cr_assert_eq(preempted, 1, "running out of blocks preempts");
  cr_assert_eq(b->status, KVSIM_REQ_WAITING, "the newest running request (b) was the victim");
  cr_assert_eq(b->num_computed, 0, "recompute: computed tokens back to 0");
  cr_assert_eq(b->num_preemptions, 1, "counted on the request");
  cr_assert_eq(kvsim_waitq_peek(&e.s->waiting), b, "the victim goes to the FRONT of the queue");
  cr_assert_eq(tokens_of(&e, c), 0, "no admission in a step with a preemption");
  cr_assert_eq(a->status, KVSIM_REQ_RUNNING, "a kept running");
  cr_assert_eq(e.s->num_preemptions, 1, "scheduler counter");
  teardown_env(&e);
}

Test(sched_v1, waiting_queue_stops_at_the_first_request_that_does_not_fit) {
  env_t e;
  setup(&e, 9, 1000, 8, KVSIM_POLICY_FCFS); /* 8 usable blocks = 32 tokens */
  kvsim_request_t *a = add_prio(&e, 0, 20, 50, 0);
  schedule(&e);
  finish_step(&e);
  kvsim_request_t *big = add_prio(&e, 1, 16, 2, 0), *small = add_prio(&e, 2, 4, 2, 0);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 1, "a decodes");
  cr_assert_eq(tokens_of(&e, big), 0, "16 tokens (4 blocks) do not fit the 2 free blocks");
  cr_assert_eq(tokens_of(&e, small), 0, "head-of-line: the small one behind it waits too");
  teardown_env(&e);
}

Test(sched_v1, max_num_seqs_caps_the_running_set) {
  env_t e;
  setup(&e, 64, 1000, 2, KVSIM_POLICY_FCFS);
  for (int i = 0; i < 4; i++)
    add_prio(&e, i, 4, 5, 0);
  schedule(&e);
  cr_assert_eq(e.step.reqs.n, 2, "only max_num_seqs = 2 requests run");
  cr_assert_eq(e.s->waiting.n, 2, "the rest wait");
  teardown_env(&e);
}

Test(sched_v1, priority_preempts_lowest_priority_latest_arrival) {
  env_t e;
  setup(&e, 7, 100, 8, KVSIM_POLICY_PRIORITY);
  kvsim_request_t *lo = add_prio(&e, 0, 8, 100, 5);
  e.now = 1;
  kvsim_request_t *hi = add_prio(&e, 1, 8, 100, 0);
  schedule(&e);
  cr_assert_eq(e.s->running.v[0], hi, "the heap admits the higher priority (lower value) first");
  finish_step(&e);
  int preempted = 0;
  for (int i = 0; i < 12 && !preempted; i++) {
    schedule(&e);
    preempted = e.step.num_preempted;
    if (!preempted)
      finish_step(&e);
  }
  cr_assert_eq(preempted, 1, "blocks ran out");
  cr_assert_eq(lo->status, KVSIM_REQ_WAITING, "the low-priority request is the victim");
  cr_assert_eq(hi->status, KVSIM_REQ_RUNNING, "the high-priority one keeps running");
  teardown_env(&e);
}
