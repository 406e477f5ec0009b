/* vllm-v0 profile: V0's scheduler rules in isolation (prefill-first, whole
 * prompts, watermark, recompute and swap preemption, swap-in, the chunked
 * policy), then end-to-end runs with the invariants checked every step. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/engine.h"
#include "kvsim/sched.h"
#include "sched_harness.h"

typedef struct opts {
  int32_t blocks; /* pool blocks, the null block included */
  int64_t budget, max_seqs;
  double watermark;
  bool swap, chunked;
  int64_t cpu_blocks;
} opts_t;

/* A V0 plan (no sliding-window freeing). */
static void setup(env_t *e, opts_t o) {
  env_setup(e, (env_opts_t){.profile = "vllm-v0", .engine = KVSIM_PLAN_V0, .blocks = o.blocks,
                            .budget = o.budget, .max_seqs = o.max_seqs, .watermark = o.watermark,
                            .swap = o.swap, .chunked = o.chunked, .cpu_blocks = o.cpu_blocks});
}

Test(sched_v0, a_step_with_prefills_is_prefill_only) {
  env_t e;
  setup(&e, (opts_t){.blocks = 101, .budget = 100, .max_seqs = 8});
  kvsim_request_t *a = add(&e, 0, 8, 10);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 8, "a's whole prompt");
  finish_step(&e);
  kvsim_request_t *b = add(&e, 1, 8, 10);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, b), 8, "b's prefill is scheduled");
  cr_assert_eq(tokens_of(&e, a), 0, "a does not decode in a prefill step");
  cr_assert_eq(e.step.reqs.n, 1, "only the prefill");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 1, "with nothing to admit, a decodes");
  cr_assert_eq(tokens_of(&e, b), 1, "and so does b");
  teardown_env(&e);
}

Test(sched_v0, prompts_are_never_chunked_and_stop_at_the_budget) {
  env_t e;
  setup(&e, (opts_t){.blocks = 101, .budget = 16, .max_seqs = 8});
  kvsim_request_t *a = add(&e, 0, 10, 5), *b = add(&e, 1, 10, 5);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 10, "a fits the 16-token budget");
  cr_assert_eq(tokens_of(&e, b), 0, "b's 10 tokens do not fit the 6 left: no chunk");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, b), 10, "b runs whole in the next step");
  cr_assert_eq(tokens_of(&e, a), 0, "prefill-first: a waits");
  teardown_env(&e);
}

Test(sched_v0, running_requests_count_against_max_num_seqs) {
  env_t e;
  setup(&e, (opts_t){.blocks = 101, .budget = 100, .max_seqs = 2});
  kvsim_request_t *a = add(&e, 0, 4, 10), *b = add(&e, 1, 4, 10), *c = add(&e, 2, 4, 10);
  schedule(&e);
  cr_assert(tokens_of(&e, a) == 4 && tokens_of(&e, b) == 4, "two prompts admitted");
  cr_assert_eq(tokens_of(&e, c), 0, "the third exceeds max_num_seqs");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, c), 0, "still 2 running: c waits");
  cr_assert_eq(e.step.reqs.n, 2, "a and b decode");
  teardown_env(&e);
}

Test(sched_v0, the_watermark_holds_back_admission_both_ways) {
  /* 100 usable blocks; a holds 90 (360 tokens); b needs 5 of the 10 left. */
  for (int with = 0; with < 2; with++) {
    env_t e;
    setup(&e, (opts_t){.blocks = 101, .budget = 1000, .max_seqs = 8, .watermark = with ? 0.06 : 0});
    cr_assert_eq(kvsim_pool_usable(&e.kv.pool), 100, "100 usable blocks");
    kvsim_request_t *a = add(&e, 0, 360, 2);
    schedule(&e);
    finish_step(&e);
    kvsim_request_t *b = add(&e, 1, 20, 2);
    schedule(&e);
    if (with)
      cr_assert_eq(tokens_of(&e, b), 0, "10 free - 5 needed < 6 watermark blocks: LATER");
    else
      cr_assert_eq(tokens_of(&e, b), 20, "without a watermark the 5 blocks are taken");
    (void)a;
    teardown_env(&e);
  }
}

Test(sched_v0, a_prompt_within_the_watermark_of_the_whole_pool_runs_alone) {
  env_t e;
  /* 100 usable blocks, 10 watermark blocks: 96 blocks is NEVER for V0. */
  setup(&e, (opts_t){.blocks = 101, .budget = 1000, .max_seqs = 8, .watermark = 0.1});
  kvsim_request_t *a = add(&e, 0, 4, 3);
  schedule(&e);
  finish_step(&e);
  kvsim_request_t *big = add(&e, 1, 384, 2);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, big), 0, "not while a holds blocks");
  finish_step(&e);
  schedule(&e);
  finish_step(&e);
  cr_assert_eq(a->status, KVSIM_REQ_FINISHED, "a is done");
  schedule(&e);
  cr_assert_eq(tokens_of(&e, big), 384, "into the empty pool");
  teardown_env(&e);
}

/* Two requests fill 6 usable blocks; the decode that needs a 7th block
 * preempts. Returns a, b through the pointers. */
static void fill_and_preempt(env_t *e, kvsim_request_t **a, kvsim_request_t **b) {
  *a = add(e, 0, 12, 100); /* 3 blocks */
  *b = add(e, 1, 12, 100); /* 3 blocks */
  schedule(e);
  finish_step(e);
  /* 12 computed, 13 tokens: decoding token 13 needs a 4th block each. */
  schedule(e);
}

Test(sched_v0, recompute_preempts_the_last_running_request) {
  env_t e;
  setup(&e, (opts_t){.blocks = 7, .budget = 100, .max_seqs = 8});
  kvsim_request_t *a, *b;
  fill_and_preempt(&e, &a, &b);
  cr_assert_eq(e.step.num_preempted, 1, "one preemption");
  cr_assert_eq(b->status, KVSIM_REQ_WAITING, "the last running request (b) is the victim");
  cr_assert_eq(b->num_computed, 0, "recompute: its KV is gone");
  cr_assert_eq(b->num_tokens, 13, "its generated token is kept for the recompute");
  cr_assert_eq(tokens_of(&e, a), 1, "a decodes into b's freed blocks");
  cr_assert_eq(kvsim_waitq_peek(&e.s->waiting), b, "b waits at the front");
  cr_assert_eq(e.s->num_preemptions, 1, "counted");
  cr_assert_eq(held_count(&e), 0, "nothing swapped");
  finish_step(&e);
  teardown_env(&e);
}

Test(sched_v0, swap_moves_the_victim_to_the_cpu_and_back) {
  env_t e;
  setup(&e, (opts_t){.blocks = 7, .budget = 100, .max_seqs = 8, .swap = true, .cpu_blocks = 64});
  kvsim_request_t *a, *b;
  fill_and_preempt(&e, &a, &b);
  cr_assert_eq(b->status, KVSIM_REQ_SWAPPED, "b is swapped out");
  cr_assert_eq(b->swapped_blocks, 3, "its 3 blocks");
  cr_assert_eq(b->num_computed, 12, "its computed tokens are kept");
  cr_assert_eq(kvsim_kvcache_held(&e.kv, b), 0, "no GPU blocks left");
  cr_assert_eq(e.cpu.swap_used, 3, "3 CPU blocks in use");
  cr_assert_eq(e.cpu.bytes_to_cpu, 3 << 20, "3 MiB copied out");
  cr_assert_eq(e.s->num_swapped, 1, "one request swapped");
  cr_assert_eq(held_count(&e), 1, "exposed through the held op");
  cr_assert_eq(e.step.extra_ns, kvsim_cpu_tier_transfer_ns(&e.cpu, 3),
               "the step waits for the copy");
  cr_assert_eq(e.s->waiting.n, 0, "a swapped request does not wait for recompute");
  finish_step(&e);
  /* While b is swapped, a newcomer is not admitted even though it fits. */
  kvsim_request_t *c = add(&e, 2, 4, 1);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, c), 0, "swapped requests go before new prefills");
  cr_assert_eq(tokens_of(&e, b), 0, "b needs 4 blocks, 2 free: not yet");
  finish_step(&e);
  /* a finishes eventually; then b comes back. */
  a->spec.output_tokens = a->num_output + 1;
  schedule(&e);
  finish_step(&e);
  cr_assert_eq(a->status, KVSIM_REQ_FINISHED, "a is done");
  schedule(&e);
  cr_assert_eq(b->status, KVSIM_REQ_RUNNING, "b is swapped back in");
  cr_assert_eq(tokens_of(&e, b), 1, "and decodes in the same step");
  cr_assert_eq(b->num_computed, 12, "from where it stopped");
  cr_assert_eq(kvsim_kvcache_held(&e.kv, b), 4, "its 3 blocks back plus one for the new token");
  cr_assert_eq(e.cpu.swap_used, 0, "the CPU blocks are released");
  cr_assert_eq(e.cpu.bytes_to_gpu, 3 << 20, "3 MiB copied in");
  cr_assert_eq(e.s->num_swapped, 0, "nothing swapped");
  cr_assert_gt(e.step.extra_ns, 0, "the step waits for the copy in");
  finish_step(&e);
  teardown_env(&e);
}

Test(sched_v0, a_full_cpu_tier_falls_back_to_recompute) {
  env_t e;
  setup(&e, (opts_t){.blocks = 7, .budget = 100, .max_seqs = 8, .swap = true, .cpu_blocks = 2});
  kvsim_request_t *a, *b;
  fill_and_preempt(&e, &a, &b);
  cr_assert_eq(b->status, KVSIM_REQ_WAITING, "3 blocks do not fit 2 CPU blocks: recompute");
  cr_assert_eq(b->num_computed, 0, "recomputed from scratch");
  cr_assert_eq(e.cpu.swap_used, 0, "nothing in the CPU tier");
  cr_assert_eq(e.step.extra_ns, 0, "no copy to wait for");
  teardown_env(&e);
}

Test(sched_v0, nothing_is_swapped_in_during_a_step_with_a_preemption) {
  env_t e;
  /* 9 usable blocks: a, b, c take 3 each. */
  setup(&e, (opts_t){.blocks = 10, .budget = 100, .max_seqs = 8, .swap = true, .cpu_blocks = 64});
  kvsim_request_t *a = add(&e, 0, 12, 100), *b = add(&e, 1, 12, 100), *c = add(&e, 2, 12, 100);
  schedule(&e);
  finish_step(&e);
  schedule(&e); /* each needs a 4th block: c is swapped (3 free), a and b decode */
  cr_assert_eq(c->status, KVSIM_REQ_SWAPPED, "c swapped out");
  cr_assert_eq(tokens_of(&e, c), 0, "and not swapped back in the same step");
  cr_assert_eq(e.step.num_preempted, 1, "one preemption");
  (void)a;
  (void)b;
  finish_step(&e);
  teardown_env(&e);
}

Test(sched_v0, chunked_policy_decodes_first_then_chunks_new_prompts) {
  env_t e;
  setup(&e, (opts_t){.blocks = 101, .budget = 12, .max_seqs = 8, .chunked = true});
  kvsim_request_t *a = add(&e, 0, 8, 10);
  schedule(&e);
  finish_step(&e);
  kvsim_request_t *b = add(&e, 1, 40, 2);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 1, "a's decode comes first");
  cr_assert_eq(tokens_of(&e, b), 11, "b gets the 11 tokens left: a chunk");
  cr_assert_eq(kvsim_kvcache_held(&e.kv, b), 10, "V0 allocates the whole prompt's 10 blocks");
  finish_step(&e);
  cr_assert_eq(b->num_output, 0, "no token sampled mid-prompt");
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 1, "decodes still first");
  cr_assert_eq(tokens_of(&e, b), 11, "the next chunk");
  cr_assert_eq(e.s->running.v[0], a, "the running list keeps decodes ahead of prefills");
  teardown_env(&e);
}

Test(sched_v0, chunked_policy_requeues_victims_after_the_admissions) {
  env_t e;
  setup(&e, (opts_t){.blocks = 7, .budget = 100, .max_seqs = 8, .chunked = true});
  kvsim_request_t *a, *b;
  fill_and_preempt(&e, &a, &b);
  cr_assert_eq(b->status, KVSIM_REQ_WAITING, "b preempted by recompute");
  cr_assert_eq(tokens_of(&e, b), 0, "not re-admitted in the step that preempted it");
  cr_assert_eq(kvsim_waitq_peek(&e.s->waiting), b, "at the front for the next step");
  finish_step(&e);
  teardown_env(&e);
}

/* End to end. */

typedef struct capture {
  int64_t finished, other, swapped_seen;
  int32_t ids[1024];
  double ttft_sum;
} capture_t;

static int on_sample(void *ctx, const kvsim_sample_t *s) {
  capture_t *c = ctx;
  if (s->num_requests_swapped > c->swapped_seen)
    c->swapped_seen = s->num_requests_swapped;
  return 0;
}

static int on_request(void *ctx, const kvsim_request_t *r) {
  capture_t *c = ctx;
  cr_assert_lt(r->spec.id, 1024u, "small ids");
  c->ids[r->spec.id]++;
  if (r->status == KVSIM_REQ_FINISHED) {
    c->finished++;
    c->ttft_sum += (double)(r->first_token - r->arrival);
  } else {
    c->other++;
  }
  return 0;
}

static void run_v0(const char *mode, int replicas, int chunked, capture_t *c,
                   kvsim_run_stats_t *st) {
  char text[2048];
  snprintf(text, sizeof text,
           "{ \"seed\": 3, \"model\": \"llama-3.1-8b\","
           "  \"hardware\": { \"gpu\": \"h100-sxm\", \"replicas\": %d },"
           "  \"engine\": { \"profile\": \"vllm-v0\", \"max_model_len\": 4096, "
           "\"num_gpu_blocks_override\": 400,"
           "    \"preemption_mode\": \"%s\", \"swap_space\": 4, \"enable_chunked_prefill\": %s },"
           "  \"workload\": { \"synthetic\": { \"requests\": 300,"
           "     \"arrival\": { \"process\": \"poisson\", \"rate\": 4 },"
           "     \"prompt_tokens\": { \"dist\": \"uniform\", \"min\": 100, \"max\": 1000 },"
           "     \"output_tokens\": { \"dist\": \"uniform\", \"min\": 100, \"max\": 800 } } } }",
           replicas, mode, chunked ? "true" : "false");
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK,
               "scenario: %s", err.msg);
  memset(c, 0, sizeof *c);
  kvsim_sink_t sink = {c, on_sample, on_request, NULL, NULL};
  kvsim_run_opts_t opts = {.check_invariants = true};
  cr_assert_eq(kvsim_run(&sc, &opts, &sink, st, &err), KVSIM_OK, "run: %s", err.msg);
  kvsim_scenario_fini(&sc);
  for (int i = 0; i < 300; i++)
    cr_assert_eq(c->ids[i], 1, "request %d reported exactly once (%d)", i, c->ids[i]);
  cr_assert_eq(c->finished, 300, "every request finishes (%s)", mode);
}

Test(sched_v0, end_to_end_swap_moves_kv_out_and_back_and_loses_nothing) {
  capture_t sw, rc;
  kvsim_run_stats_t ssw, src;
  run_v0("swap", 1, 0, &sw, &ssw);
  cr_assert_gt(ssw.preemptions, 0, "the starved pool preempts");
  cr_assert_gt(ssw.cpu_bytes_to_cpu, 0, "KV was swapped out");
  cr_assert_eq(ssw.cpu_bytes_to_cpu, ssw.cpu_bytes_to_gpu, "everything swapped out came back");
  cr_assert_gt(ssw.transfer_wait_s, 0, "steps waited on the copies");
  cr_assert_gt(sw.swapped_seen, 0, "the time series saw swapped requests");
  run_v0("recompute", 1, 0, &rc, &src);
  cr_assert_eq(src.cpu_bytes_to_cpu, 0, "recompute moves nothing to the CPU");
  cr_assert_neq(sw.ttft_sum, rc.ttft_sum, "the two modes differ in latency");
}

Test(sched_v0, end_to_end_chunked_and_replicas_keep_the_invariants) {
  capture_t c;
  kvsim_run_stats_t st;
  run_v0("swap", 2, 1, &c, &st);
  cr_assert_gt(st.steps, 0, "it ran");
  capture_t d;
  kvsim_run_stats_t sd;
  run_v0("swap", 2, 1, &d, &sd);
  cr_assert_eq(st.steps, sd.steps, "deterministic: same steps");
  cr_assert_eq(c.ttft_sum, d.ttft_sum, "deterministic: same latencies");
}
