/* A replica's time-series row: the allocation waste it samples (one pass
 * of integer sums for the commonest pool) against the request-by-request
 * terms, mid-step and between steps, with implicit decode on. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/replica.h"
#include "kvsim/engine.h"
#include "kvsim/perf.h"
#include "kvsim/scenario.h"

/* Llama-3.2-1B on an L4, fp16 cache, 16-token blocks. */
static const char *const scenario_fmt =
    "{ \"seed\": 3, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" },"
    "  \"engine\": { \"profile\": \"vllm-v1\", \"num_gpu_blocks_override\": %d, \"block_size\": 16,"
    "    \"max_model_len\": 1024 },"
    "  \"workload\": { \"synthetic\": { \"requests\": 1, \"arrival\": { \"process\": \"poisson\", \"rate\": 2 },"
    "    \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 30 },"
    "    \"output_tokens\": { \"dist\": \"fixed\", \"value\": 10 } } } }";

/* The waste terms request by request (waste_paged's rule). */
static void expect_waste(const kvsim__replica_t *rep, const kvsim_plan_t *pl, const kvsim_sample_t *s,
                         int step) {
  const int64_t bs = pl->p.block_size, bb = pl->block_bytes, per_tok = bb / bs;
  int64_t alloc = 0, token = 0, unused = 0, frag = 0;
  for (int32_t i = 0; i < rep->sched->running.n; i++) {
    const kvsim_request_t *r = rep->sched->running.v[i];
    const int64_t live = r->blocks[0].len;
    int64_t t = r->num_computed + r->step_new;
    t = t > live * bs ? live * bs : t;
    const int64_t needed = (t + bs - 1) / bs;
    alloc += live * bb;
    token += t * per_tok;
    unused += (live - needed) * bb;
    frag += (needed * bs - t) * per_tok;
  }
  cr_assert_eq(s->kv_allocated_bytes, alloc, "step %d: allocated", step);
  cr_assert_eq(s->kv_token_bytes, token, "step %d: token bytes", step);
  cr_assert_eq(s->kv_reserved_unused_bytes, unused, "step %d: unused", step);
  cr_assert_eq(s->kv_internal_frag_bytes, frag, "step %d: fragmentation", step);
}

#define NREQ 16

/* Two replicas of the scenario over the same requests: `a` schedules
 * every row explicitly, `b` may advance decode rows implicitly. */
typedef struct twin {
  kvsim_scenario_t sc;
  kvsim_resolved_t res;
  kvsim_perf_t perf;
  kvsim__replica_t rep[2];
  kvsim_request_t reqs[2][NREQ];
} twin_t;

static void sample_both(twin_t *t, kvsim_time_ns now, int step) {
  kvsim_err err = {0};
  kvsim_sample_t s[2];
  for (int k = 0; k < 2; k++)
    cr_assert_eq(kvsim__replica_sample(&t->rep[k], &t->res.plan, now, false, &s[k], &err), KVSIM_OK,
                 "%s", err.msg);
  /* The request-by-request terms of the explicit replica, and the same
   * row from the implicit one (its counts synced). */
  expect_waste(&t->rep[0], &t->res.plan, &s[0], step);
  cr_assert_eq(memcmp(&s[0], &s[1], sizeof s[0]), 0, "step %d: the same row", step);
}

/* nreq requests, one every 5 steps, over a pool of `blocks`; returns the
 * preemptions. */
static int64_t run_twin(int32_t blocks, int nreq, int steps) {
  static twin_t t;
  memset(&t, 0, sizeof t);
  kvsim_err err = {0};
  char scenario[1024];
  snprintf(scenario, sizeof scenario, scenario_fmt, blocks);
  cr_assert_eq(kvsim_scenario_parse(scenario, "inline", ".", NULL, 0, &t.sc, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_resolve(&t.sc, &t.res, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(t.res.plan.block_bytes % 16, 0, "a whole number of bytes per token");
  cr_assert_eq(kvsim_perf_init(&t.perf, &t.sc.model, &t.sc.gpu, &t.res.plan, &err), KVSIM_OK, "%s", err.msg);
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(kvsim__replica_init(&t.rep[k], 0, &t.sc, &t.res, &err), KVSIM_OK, "%s", err.msg);
    t.rep[k].sched->implicit_ok = k == 1;
  }
  kvsim_time_ns now = 0;
  int implicit = 0, finished = 0;
  kvsim_reqvec_t done = {0};
  for (int step = 0; step < steps; step++) {
    const int i = step / 5;
    if (step % 5 == 0 && i < nreq)
      for (int k = 0; k < 2; k++) {
        kvsim_request_t *r = &t.reqs[k][i];
        r->spec.id = (uint64_t)i;
        /* Prompts 7 to 352 tokens, some a whole number of blocks. */
        r->spec.prompt_tokens = r->num_prompt = r->num_tokens = i % 4 == 3 ? 16 * i : 7 + 23 * i;
        r->spec.output_tokens = 40 + 9 * i;
        r->arrival = now;
        r->first_scheduled = r->first_token = r->last_token = r->finish = KVSIM_TIME_NEVER;
        r->status = KVSIM_REQ_WAITING;
        cr_assert_eq(kvsim__replica_add(&t.rep[k], r, now, &err), KVSIM_OK, "%s", err.msg);
      }
    kvsim_time_ns dt[2];
    for (int k = 0; k < 2; k++)
      cr_assert_eq(kvsim__replica_start_step(&t.rep[k], &t.perf, NULL, 0, now, &dt[k], &err), KVSIM_OK,
                   "%s", err.msg);
    cr_assert_eq(dt[0], dt[1], "step %d: the same step time", step);
    if (dt[0] < 0)
      break;
    implicit += t.rep[1].step.implicit_rows > 0;
    sample_both(&t, now, step); /* mid-step: the step's tokens count */
    now += dt[0];
    for (int k = 0; k < 2; k++) {
      done.n = 0;
      cr_assert_eq(kvsim__replica_end_step(&t.rep[k], now, &done, &err), KVSIM_OK, "%s", err.msg);
      finished += k == 0 ? (int)done.n : 0;
    }
    sample_both(&t, now, step);
  }
  cr_assert_gt(implicit, 10, "steps ran implicit decode");
  cr_assert_gt(finished, 0, "requests finished");
  const int64_t preempted = t.rep[0].sched->num_preemptions;
  kvsim_reqvec_fini(&done);
  for (int k = 0; k < 2; k++) {
    kvsim_sched_t *s = t.rep[k].sched;
    while (s->running.n > 0)
      kvsim_kvcache_free(&t.rep[k].kv, s->running.v[--s->running.n]);
    kvsim__replica_fini(&t.rep[k]);
    for (int i = 0; i < nreq; i++) {
      for (int g = 0; g < KVSIM_MAX_KV_GROUPS; g++)
        free(t.reqs[k][i].blocks[g].ids);
      free(t.reqs[k][i].hashes);
      free(t.reqs[k][i].segs);
    }
  }
  kvsim_scenario_fini(&t.sc);
  return preempted;
}

Test(replica_sample, waste_sums_equal_the_request_terms) {
  run_twin(400, 6, 120);
}

/* More requests than the pool holds: the cohort dissolves and forms
 * again around preemptions; its sums stay the request-by-request ones. */
Test(replica_sample, waste_sums_equal_the_request_terms_in_a_pool_that_preempts) {
  cr_assert_gt(run_twin(60, NREQ, 400), 0, "the pool preempted");
}
