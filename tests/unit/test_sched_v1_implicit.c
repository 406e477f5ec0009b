/* vllm-v1's implicit decode (sched/v1_implicit.c) against its explicit
 * loop: the same requests through two schedulers, one allowed to advance
 * its decode rows implicitly, must give the same steps, finishes and
 * counts. */
#include <criterion/criterion.h>
#include <string.h>

#include "kvsim/sched.h"
#include "kvsim/workload.h"
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
    /* Which blocks, and what the prefix cache knows of them: a block
     * filled in the cohort is marked when the row is brought up to date,
     * as the explicit loop marked it in the step that filled it. */
    if (a->kv.pool.counted)
      continue;
    for (int32_t k = 0; k < x->blocks[0].len; k++)
      cr_assert_eq(x->blocks[0].ids[k], y->blocks[0].ids[k], "step %d, request %d: block %d", step,
                   i, k);
    cr_assert_eq(x->blocks[0].anon_upto, y->blocks[0].anon_upto, "step %d, request %d: anon_upto",
                 step, i);
    cr_assert_eq(x->cached_blocks, y->cached_blocks, "step %d, request %d: cached blocks", step, i);
    cr_assert_eq(x->num_hashes, y->num_hashes, "step %d, request %d: hashes", step, i);
  }
  const kvsim_pool_t *p = &a->kv.pool, *q = &b->kv.pool;
  if (p->counted)
    return;
  cr_assert(p->head == q->head && p->tail == q->tail, "step %d: free queue ends", step);
  cr_assert(p->num_cached_free == q->num_cached_free && p->map_used == q->map_used &&
                p->evictions == q->evictions,
            "step %d: cache counters", step);
  cr_assert_eq(memcmp(p->blocks, q->blocks, (size_t)p->num_blocks * sizeof *p->blocks), 0,
               "step %d: every block's count, links and cache state", step);
}

/* Request i: prompt and output lengths, and whether its prompt has an
 * identity (two segments, the first shared by every such request), so
 * that its blocks carry hashes; without, it is anonymous. A request that
 * follows an earlier hashed one (a next turn, follows > 0: its index +
 * 1) repeats that one's prompt and the first tokens of its answer (its
 * output segment), then adds `prompt` tokens of its own: its blocks hash
 * as those the earlier one fills while it decodes. */
typedef struct arrival {
  int64_t prompt, output;
  bool hashed;
  int follows;
} arrival_t;

static const kvsim_segment_t shared_segs[2][2] = {{{7001, 8}, {7101, 40}}, {{7001, 8}, {7102, 40}}};

static void arrive(env_t *e, int i, arrival_t a) {
  kvsim_request_t *r = &e->reqs[i];
  static kvsim_segment_t segs[16][4];
  static int nsegs[16];
  r->spec.segments = NULL;
  r->spec.num_segments = 0;
  const kvsim_request_t *f = a.follows > 0 ? &e->reqs[a.follows - 1] : NULL;
  if (f && nsegs[a.follows - 1] > 0 && nsegs[a.follows - 1] <= 2) {
    const int n = nsegs[a.follows - 1];
    memcpy(segs[i], segs[a.follows - 1], (size_t)n * sizeof segs[i][0]);
    int64_t prompt = 0;
    for (int k = 0; k < n; k++)
      prompt += segs[i][k].len;
    const int64_t said = f->spec.output_tokens < 12 ? f->spec.output_tokens : 12;
    segs[i][n] = (kvsim_segment_t){kvsim_output_segment_id(f->spec.id), said};
    segs[i][n + 1] = (kvsim_segment_t){9000 + (uint64_t)i, a.prompt};
    nsegs[i] = n + 2;
    a.prompt += prompt + said;
    r->spec.segments = segs[i];
    r->spec.num_segments = nsegs[i];
  } else if (a.hashed) {
    /* The prompt's first 8 tokens shared, the rest its own (cut to it). */
    memcpy(segs[i], shared_segs[i & 1], 2 * sizeof segs[i][0]);
    segs[i][0].len = a.prompt < 8 ? a.prompt : 8;
    segs[i][1].len = a.prompt - segs[i][0].len;
    nsegs[i] = segs[i][1].len > 0 ? 2 : 1;
    r->spec.segments = segs[i];
    r->spec.num_segments = nsegs[i];
  } else {
    nsegs[i] = 0;
  }
  add_prio(e, i, a.prompt, a.output, 0);
}

/* Runs both schedulers over the same arrivals (one every `every` steps);
 * returns the steps the implicit one advanced rows without listing them. */
static int run_arrivals(int32_t blocks, bool prefix, const arrival_t *arr, int every) {
  env_t a, b;
  setup(&a, blocks, prefix, false);
  setup(&b, blocks, prefix, true);
  int fast = 0, preempted = 0, next = 0;
  for (int step = 0; step < 400; step++) {
    if (step % every == 0 && next < 16) {
      arrive(&a, next, arr[next]);
      arrive(&b, next, arr[next]);
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
  teardown_env(&a);
  teardown_env(&b);
  return preempted > 0 ? -fast : fast;
}

/* One every 7 steps, prompts 3 to 30, outputs 2 to 33, anonymous. */
static int run_both(int32_t blocks, bool prefix) {
  arrival_t arr[16];
  for (int i = 0; i < 16; i++)
    arr[i] = (arrival_t){3 + (i * 11) % 28, 2 + (i * 13) % 32, false, 0};
  int fast = run_arrivals(blocks, prefix, arr, 7);
  cr_assert_eq(blocks > 40, fast >= 0, "the small pool preempts, the large one does not");
  return fast < 0 ? -fast : fast;
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

/* Seeded random arrivals, anonymous and hashed requests mixed, pools from
 * tight (preempting) to roomy: the blocks each request holds, their
 * prefix-cache states and the free queue stay those of the explicit loop
 * after every step, mid-step too (the fills the cohort defers). */
Test(sched_v1_implicit, random_arrivals_give_the_same_blocks_and_marks) {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  int fast = 0;
  for (int run = 0; run < 120; run++) {
    arrival_t arr[16];
    for (int i = 0; i < 16; i++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const uint32_t v = (uint32_t)(x >> 33);
      arr[i] = (arrival_t){1 + v % 30, 1 + (v >> 8) % 30, run % 3 == 0 ? false : ((v >> 16) & 1),
                           0};
      if (run % 3 == 2 && i >= 1 && (v >> 20) % 2 == 0) {
        /* a next turn of an earlier request: short, its own text 1 to 4 */
        arr[i] = (arrival_t){1 + (v >> 24) % 4, 1 + (v >> 26) % 2, true, 1 + (int)((v >> 12) % (uint32_t)i)};
      } else if (run % 3 == 2) {
        arr[i].output = 12 + (v >> 8) % 18; /* long answers, to be followed while they last */
      }
    }
    const int32_t blocks = 18 + (run * 7) % 60;
    const int f = run_arrivals(blocks, run % 5 != 4, arr, 1 + run % 6);
    fast += f < 0 ? -f : f;
  }
  cr_assert_gt(fast, 500, "most runs advanced rows implicitly (%d steps)", fast);
}
