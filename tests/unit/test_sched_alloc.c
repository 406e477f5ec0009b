/* Out of memory in the middle of a step, for every profile: with the
 * failing-allocator hook set to refuse the n-th allocation (n = 0, 1, 2,
 * ... at every step, so that every allocation point of the step is hit in
 * turn) the step returns KVSIM_ENOMEM, no request is lost (each is in
 * exactly one of waiting, running, the profile's held list, finished), the
 * pool's invariants hold (used + free = usable, the free queue's links,
 * every ref count equals the tables holding the block), and once the hook
 * is reset the run goes on to finish every request. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/sched.h"
#include "sched_harness.h"

#define NREQ 12

/* Where request i is: 0 nowhere, else the number of places it is in. */
static void check_state(env_t *e, const bool *finished, const char *profile, int step, int n) {
  int seen[NREQ] = {0};
  kvsim_sched_t *s = e->s;
  for (int32_t i = 0; i < s->waiting.n; i++)
    seen[kvsim_waitq_at(&s->waiting, i)->spec.id]++;
  for (int64_t i = 0; i < s->running.n; i++)
    seen[s->running.v[i]->spec.id]++;
  kvsim_request_t *const *held = NULL;
  int32_t nheld = s->ops->held ? s->ops->held(s, &held) : 0;
  for (int32_t i = 0; i < nheld; i++)
    if (held[i]->status == KVSIM_REQ_SWAPPED) /* static's placeholders are reported already */
      seen[held[i]->spec.id]++;
  for (int i = 0; i < NREQ; i++) {
    seen[i] += finished[i];
    cr_assert_eq(seen[i], 1, "%s step %d, failing allocation %d: request %d is in %d places", profile,
                 step, n, i, seen[i]);
  }
  /* Pool: its own walk, then ref counts against the holders' tables. */
  kvsim_err err = {0};
  const kvsim_pool_t *p = &e->kv.pool;
  cr_assert_eq(kvsim_pool_check(p, &err), KVSIM_OK, "%s step %d, failing %d: %s", profile, step, n,
               err.msg);
  int32_t *holders = calloc((size_t)p->num_blocks, sizeof *holders);
  cr_assert_not_null(holders, "holders");
  int tables = e->kv.num_groups + (e->kv.residual_blocks ? 1 : 0);
  int64_t held_blocks = 0;
  for (int64_t i = 0; i < s->running.n + nheld; i++) {
    const kvsim_request_t *r = i < s->running.n ? s->running.v[i] : held[i - s->running.n];
    for (int g = 0; g < tables; g++) {
      held_blocks += r->blocks[g].len;
      for (int32_t k = 0; !p->counted && k < r->blocks[g].len; k++)
        holders[r->blocks[g].ids[k]]++;
    }
  }
  /* A counted pool (no prefix cache) has no ids: the tables add up to it. */
  if (p->counted)
    cr_assert_eq(held_blocks + kvsim_pool_num_free(p), kvsim_pool_usable(p),
                 "%s step %d, failing %d: tables hold %lld blocks, the counted pool %d free of %d",
                 profile, step, n, (long long)held_blocks, kvsim_pool_num_free(p),
                 kvsim_pool_usable(p));
  for (int32_t i = 0; i < s->waiting.n; i++)
    cr_assert_eq(kvsim_waitq_at(&s->waiting, i)->blocks[0].len, 0,
                 "%s step %d, failing %d: a waiting request holds blocks", profile, step, n);
  for (int32_t b = 1; !p->counted && b < p->num_blocks; b++)
    cr_assert_eq(holders[b], kvsim_pool_ref(p, b),
                 "%s step %d, failing %d: block %d has ref %d, %d holders", profile, step, n, b,
                 kvsim_pool_ref(p, b), holders[b]);
  free(holders);
  cr_assert_eq(e->cpu.swap_used + e->cpu.cached <= e->cpu.num_blocks, true, "CPU tier within capacity");
}

/* Drives a profile to the end, failing each step's allocations in turn,
 * and checks the hook met more than `min_failures` allocation points. */
static void run_failing_n(env_opts_t o, int64_t min_failures) {
  env_t e;
  env_setup(&e, o);
  /* Shared 16-token prefix, then a unique prompt: hashes and hits. */
  kvsim_segment_t segs[NREQ][2];
  for (int i = 0; i < NREQ; i++) {
    kvsim_request_t *r = &e.reqs[i];
    int64_t prompt = 16 + 8 * (i % 5), output = 40 + 13 * i;
    segs[i][0] = (kvsim_segment_t){1, 16};
    segs[i][1] = (kvsim_segment_t){kvsim_unique_segment_id((uint64_t)i), prompt - 16};
    r->spec.segments = segs[i];
    r->spec.num_segments = 2;
    add(&e, i, prompt, output);
  }
  bool finished[NREQ] = {false};
  int64_t failures = 0, done = 0;
  for (int step = 0; done < NREQ; step++) {
    cr_assert_lt(step, 20000, "%s: the run ends", o.profile);
    int rc;
    for (int n = 0;; n++) {
      cr_assert_lt(n, 10000, "%s step %d: some allocation budget lets the step through", o.profile, step);
      e.step.reqs.n = 0;
      e.step.num_preempted = 0;
      e.step.num_tokens = 0;
      e.step.extra_ns = 0;
      kvsim__alloc_fail_after(n);
      rc = e.s->ops->schedule(e.s, e.now, &e.step);
      int64_t refused = kvsim__alloc_failures();
      kvsim__alloc_fail_after(-1);
      if (rc == KVSIM_OK) {
        cr_assert_eq(refused, 0, "%s step %d: a refused allocation is reported", o.profile, step);
        break;
      }
      cr_assert_eq(rc, KVSIM_ENOMEM, "%s step %d, failing %d: ENOMEM (got %d)", o.profile, step, n, rc);
      cr_assert_gt(refused, 0, "%s step %d: ENOMEM only when refused", o.profile, step);
      failures++;
      for (int64_t i = 0; i < e.step.reqs.n; i++)
        e.step.reqs.v[i]->step_new = 0; /* the replica discards a failed step so */
      check_state(&e, finished, o.profile, step, n);
    }
    e.now += 10;
    for (int n = 0;; n++) {
      e.done.n = 0;
      kvsim__alloc_fail_after(n);
      rc = e.s->ops->update(e.s, e.now, &e.step, &e.done);
      kvsim__alloc_fail_after(-1);
      if (rc == KVSIM_OK)
        break;
      cr_assert_eq(rc, KVSIM_ENOMEM, "%s step %d: update ENOMEM (got %d)", o.profile, step, rc);
      failures++;
      check_state(&e, finished, o.profile, step, n);
    }
    for (int64_t i = 0; i < e.done.n; i++) {
      cr_assert(!finished[e.done.v[i]->spec.id], "%s: request reported finished once", o.profile);
      finished[e.done.v[i]->spec.id] = true;
      done++;
    }
    check_state(&e, finished, o.profile, step, -1);
  }
  cr_assert_gt(failures, min_failures, "%s: the hook hit allocation points (%lld)", o.profile,
               (long long)failures);
  for (int i = 0; i < NREQ; i++)
    cr_assert_eq(e.reqs[i].num_output, e.reqs[i].spec.output_tokens, "%s: request %d has all its output",
                 o.profile, i);
  teardown_env(&e);
}

/* Without prefix caching the pools here are walked (`.walk`): a block
 * table that grows is an allocation point, which a counted pool's table
 * (its length) never is. The _counted tests run the counted pool, whose
 * only allocation points are the schedulers' own. */
static void run_failing(env_opts_t o) { run_failing_n(o, 10); }

/* 60 usable blocks of 4 tokens: the longest request (231 tokens) fits alone, twelve preempt each other. */
Test(sched_alloc, vllm_v1_prefix_caching) {
  run_failing((env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = 61, .budget = 64,
                           .max_seqs = 8, .chunked = true, .prefix = true});
}

Test(sched_alloc, vllm_v1_priority) {
  run_failing((env_opts_t){.walk = true,
                           .profile = "vllm-v1",
                           .engine = KVSIM_PLAN_V1,
                           .blocks = 61,
                           .budget = 64,
                           .max_seqs = 8,
                           .chunked = true,
                           .policy = KVSIM_POLICY_PRIORITY});
}

Test(sched_alloc, vllm_v0_swap) {
  run_failing((env_opts_t){.walk = true,
                           .profile = "vllm-v0",
                           .engine = KVSIM_PLAN_V0,
                           .blocks = 61,
                           .budget = 256,
                           .max_seqs = 8,
                           .swap = true,
                           .cpu_blocks = 20});
}

Test(sched_alloc, vllm_v0_chunked_recompute) {
  run_failing((env_opts_t){.profile = "vllm-v0", .engine = KVSIM_PLAN_V0, .blocks = 61, .budget = 24,
                           .max_seqs = 8, .chunked = true, .prefix = true, .cpu_blocks = 0});
}

Test(sched_alloc, static_batches) {
  run_failing((env_opts_t){.walk = true,
                           .profile = "static",
                           .engine = KVSIM_PLAN_V0,
                           .blocks = 129,
                           .budget = 256,
                           .max_seqs = 4,
                           .max_model_len = 256});
}

Test(sched_alloc, contiguous_oracle) {
  run_failing((env_opts_t){.walk = true,
                           .profile = "contiguous",
                           .engine = KVSIM_PLAN_V0,
                           .blocks = 129,
                           .budget = 256,
                           .max_seqs = 8,
                           .max_model_len = 256,
                           .oracle = true});
}

Test(sched_alloc, sglang_retraction) {
  /* 60 usable pages of 4 tokens: admission by reservation, retraction. */
  run_failing((env_opts_t){.profile = "sglang", .engine = KVSIM_PLAN_SGLANG, .blocks = 61,
                           .budget = 64, .max_seqs = 8, .chunked = true, .prefix = true});
}

/* tgi reserves whole requests (the longest needs 58 of 60 blocks). */
Test(sched_alloc, tgi_chunked_prefix) {
  run_failing((env_opts_t){.profile = "tgi", .engine = KVSIM_PLAN_TGI, .blocks = 61, .budget = 64,
                           .max_seqs = 8, .chunked = true, .prefix = true});
}

Test(sched_alloc, tgi_waiting_served_ratio) {
  run_failing((env_opts_t){.walk = true,
                           .profile = "tgi",
                           .engine = KVSIM_PLAN_TGI,
                           .blocks = 61,
                           .budget = 256,
                           .max_seqs = 8});
}

Test(sched_alloc, hf_dynamic_rows) {
  run_failing((env_opts_t){.walk = true,
                           .profile = "hf-transformers",
                           .engine = KVSIM_PLAN_HF,
                           .blocks = 129,
                           .budget = 256,
                           .max_seqs = 4,
                           .max_model_len = 256});
}

Test(sched_alloc, hf_static_rows) {
  run_failing((env_opts_t){.walk = true,
                           .profile = "hf-transformers",
                           .engine = KVSIM_PLAN_HF,
                           .blocks = 129,
                           .budget = 256,
                           .max_seqs = 4,
                           .max_model_len = 256,
                           .engine_json = "{\"cache\": \"static\"}"});
}

Test(sched_alloc, vllm_v1_priority_counted) {
  run_failing_n((env_opts_t){.profile = "vllm-v1",
                             .engine = KVSIM_PLAN_V1,
                             .blocks = 61,
                             .budget = 64,
                             .max_seqs = 8,
                             .chunked = true,
                             .policy = KVSIM_POLICY_PRIORITY},
                2);
}

Test(sched_alloc, vllm_v0_swap_counted) {
  run_failing_n((env_opts_t){.profile = "vllm-v0",
                             .engine = KVSIM_PLAN_V0,
                             .blocks = 61,
                             .budget = 256,
                             .max_seqs = 8,
                             .swap = true,
                             .cpu_blocks = 20},
                2);
}
