#include <criterion/criterion.h>
#include <string.h>

#include "kvsim/perf.h"
#include "kvsim/sched.h"
#include "sched_harness.h"

/* The sums of rows (c, n), against kvsim_batch_shape_add's doubles. */
static void expect_rows_match(int64_t window, const int64_t (*rows)[2], int count) {
  kvsim_step_sums_t s;
  memset(&s, 0, sizeof s);
  s.window = window;
  kvsim_step_sums_begin(&s);
  kvsim_batch_shape_t b;
  memset(&b, 0, sizeof b);
  for (int i = 0; i < count; i++) {
    kvsim_step_sums_row(&s, rows[i][0], rows[i][1]);
    kvsim_batch_shape_add(&b, rows[i][0], rows[i][1], window);
  }
  cr_assert(s.on && !s.big);
  cr_assert_eq(s.window, window, "begin keeps the window");
  cr_assert_eq((int64_t)s.seqs, b.num_seqs);
  cr_assert_eq((int64_t)s.pseqs, b.num_prefill_seqs);
  cr_assert_eq((int64_t)s.newt, b.new_tokens);
  cr_assert_eq((int64_t)s.pft, b.prefill_tokens);
  cr_assert_eq((double)s.af, b.attn_full);
  cr_assert_eq((double)s.as, b.attn_sliding, "window %lld", (long long)window);
  cr_assert_eq((double)s.kf, b.kv_read_full);
  cr_assert_eq((double)s.ks, b.kv_read_sliding, "window %lld", (long long)window);
  cr_assert_eq((double)s.df, b.decode_keys_full);
  cr_assert_eq((double)s.ds, b.decode_keys_sliding, "window %lld", (long long)window);
}

Test(step_sums, rows_sum_as_the_double_shape_does) {
  /* First chunks, later chunks, decodes, a one-token prompt, rows across
   * the window's edge. */
  static const int64_t rows[][2] = {{0, 512}, {512, 300}, {4000, 1}, {0, 1}, {1, 1},
                                    {4095, 1}, {100, 4000}, {7, 9}, {4096, 1}, {2000, 2500}};
  const int n = (int)(sizeof rows / sizeof rows[0]);
  expect_rows_match(0, rows, n);
  expect_rows_match(4096, rows, n);
  expect_rows_match(1000, rows, n);
}

Test(step_sums, decode_rows_at_once_equal_the_rows_one_by_one) {
  static const int64_t ctx[] = {1, 15, 16, 17, 4000, 123456};
  kvsim_step_sums_t one, all;
  memset(&one, 0, sizeof one);
  memset(&all, 0, sizeof all);
  kvsim_step_sums_begin(&one);
  kvsim_step_sums_begin(&all);
  int64_t sum = 0;
  for (int i = 0; i < 6; i++) {
    kvsim_step_sums_row(&one, ctx[i], 1);
    sum += ctx[i];
  }
  kvsim_step_sums_row(&all, 50, 700); /* a prefill row beside them */
  kvsim_step_sums_row(&one, 50, 700);
  kvsim_step_sums_decode(&all, 6, sum, 123456);
  cr_assert_eq(memcmp(&one, &all, sizeof one), 0, "the same sums, the same largest row");
  kvsim_step_sums_decode(&all, 0, 0, 1 << 30);
  cr_assert_eq(all.maxcn, one.maxcn, "no rows: nothing changes");
}

Test(step_sums, a_row_past_int32_tokens_is_big) {
  kvsim_step_sums_t s;
  memset(&s, 0, sizeof s);
  kvsim_step_sums_begin(&s);
  kvsim_step_sums_row(&s, (int64_t)INT32_MAX + 1, 1);
  cr_assert(s.big, "the engine must sum this step in doubles");
}

/* Whether the profile's sums are what the engine's walk over the step's
 * rows gives (the largest row: at most the bound the profile gave). */
static bool sums_are_walked(const kvsim_step_t *st) {
  kvsim_step_sums_t w;
  memset(&w, 0, sizeof w);
  w.window = st->sums.window;
  kvsim_step_sums_begin(&w);
  for (int32_t i = 0; i < st->reqs.n; i++)
    kvsim_step_sums_row(&w, st->reqs.v[i]->num_computed, st->reqs.v[i]->step_new);
  if (st->sums.maxcn < w.maxcn)
    return false;
  w.maxcn = st->sums.maxcn;
  return memcmp(&w, &st->sums, sizeof w) == 0;
}

Test(step_sums, vllm_v1_keeps_the_sums_of_every_step_it_schedules) {
  env_t e;
  env_setup(&e, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = 200,
                             .budget = 24, .max_seqs = 8, .policy = KVSIM_POLICY_FCFS,
                             .chunked = true});
  /* Prefills, chunks cut by the budget, then decodes beside new prompts. */
  for (int i = 0; i < 5; i++)
    add_prio(&e, i, 10 + 3 * i, 6, 0);
  int decode_steps = 0;
  for (int step = 0; step < 12; step++) {
    schedule(&e);
    cr_assert(e.step.sums.on, "step %d: the profile summed its rows", step);
    cr_assert(sums_are_walked(&e.step), "step %d: the sums are the walk's", step);
    decode_steps += e.step.sums.pseqs == 0 && e.step.sums.seqs > 0;
    finish_step(&e);
  }
  cr_assert_gt(decode_steps, 0, "some steps decoded only");
  teardown_env(&e);
}

Test(step_sums, a_scheduled_row_preempted_hands_the_step_back_to_the_walk) {
  env_t e;
  /* 6 usable blocks of 4 = 24 tokens. The priority policy preempts the
   * lowest priority, here the first running request, after it was
   * scheduled in the step. */
  env_setup(&e, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = 7,
                             .budget = 100, .max_seqs = 8, .policy = KVSIM_POLICY_PRIORITY,
                             .chunked = true});
  add_prio(&e, 0, 2, 100, 9); /* one block, room for two decodes */
  schedule(&e);
  finish_step(&e);
  add_prio(&e, 1, 20, 100, 0); /* the other five */
  int off = 0;
  for (int i = 0; i < 20 && !off; i++) {
    schedule(&e);
    if (e.step.sums.on)
      cr_assert(sums_are_walked(&e.step), "step %d: the sums are the walk's", i);
    else
      off = e.step.num_preempted;
    finish_step(&e);
  }
  cr_assert_gt(off, 0, "a preemption took a scheduled row out and turned the sums off");
  teardown_env(&e);
}
