/* SGLang's EAGLE (sim/src/memory/spec_sglang.c, plan_sglang.c,
 * sched/sglang.c): the start-up accounting of Llama-3.1-70B at TP 4 with
 * its EAGLE-3 head written out by hand, SGLang's tree defaults and
 * errors, and the scheduler's verify steps and per-request decode slots. */
#include <criterion/criterion.h>

#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"
#include "kvsim/spec.h"
#include "sched_harness.h"

static const char *const eagle3 =
    "{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.3-Instruct-70B\"}";

/* The sglang plan of Llama-3.1-70B on 4 x H100 at context 32768, with
 * `spec` (NULL: none), an explicit fraction (0: automatic) and a tree. */
static int plan_with(const char *spec, double mfs, int steps, int topk, int drafts, int page,
                     kvsim_plan_t *pl, kvsim_err *err) {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_err e = {0};
  cr_assert_eq(kvsim_model_load("llama-3.1-70b", &m, &e), KVSIM_OK, "model: %s", e.msg);
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &g, &e), KVSIM_OK, "gpu: %s", e.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_SGLANG;
  p.tp = 4;
  p.max_model_len = 32768;
  p.block_size = page;
  p.sglang.mem_fraction_static = mfs;
  p.sglang.avail_gib_before_load = p.sglang.avail_gib_after_load = -1;
  if (spec)
    cr_assert_eq(kvsim_spec_parse_sglang_text(spec, &p.spec, "--speculative-config", &e), KVSIM_OK,
                 "parse %s: %s", spec, e.msg);
  p.spec.sgl_num_steps = steps;
  p.spec.sgl_eagle_topk = topk;
  p.spec.sgl_num_draft_tokens = drafts;
  return kvsim_plan_compute(&m, &g, &p, pl, err);
}

static kvsim_plan_t plan_ok(const char *spec, double mfs) {
  kvsim_plan_t pl;
  kvsim_err err = {0};
  cr_assert_eq(plan_with(spec, mfs, 0, 0, 0, 1, &pl, &err), KVSIM_OK, "plan: %s", err.msg);
  return pl;
}

/* At one fraction the target's pool is the same with and without the
 * draft: 80 x 2 KV heads x 128 x K,V x 2 bytes = 81,920 bytes per token
 * over the same rest_memory (the draft is not in its budget). The draft
 * pool holds the head's one layer over the same tokens (+ the padded
 * page): 1,024 bytes a token, K and V 512 each; the head weighs what
 * vLLM's does. */
Test(spec_sglang, draft_pool_over_the_target_tokens) {
  kvsim_plan_t off = plan_ok(NULL, 0.8), on = plan_ok(eagle3, 0.8);
  cr_assert_eq(on.sglang.cell_size, 81920, "target cell");
  cr_assert_eq(on.available_kv_bytes, off.available_kv_bytes, "same rest_memory at one fraction");
  cr_assert_eq(on.sglang.max_total_num_tokens, off.sglang.max_total_num_tokens, "same target pool");
  cr_assert_eq(on.sglang.max_total_num_tokens, on.available_kv_bytes / 81920, "tokens %lld",
               (long long)on.sglang.max_total_num_tokens);
  cr_assert_eq(on.spec_draft_layers, 1, "one draft layer");
  cr_assert_eq(on.spec_per_token_bytes, 1024, "draft bytes per token");
  cr_assert_eq(on.sglang.draft_k_size_bytes, (on.sglang.max_total_num_tokens + 1) * 512, "draft K");
  cr_assert_eq(on.sglang.draft_v_size_bytes, on.sglang.draft_k_size_bytes, "draft V");
  cr_assert_eq(on.spec_weights_bytes, INT64_C(1003808768), "the head's bytes (as vLLM's)");
  cr_assert(on.fits, "fits");
}

/* The draft's weights and pool come out of what the fraction leaves: at
 * 0.99 of 76.91 GB that is 0.77 GB, under the head's 0.93 GB: out of
 * memory, where 0.95 leaves 3.85 GB. */
Test(spec_sglang, draft_out_of_the_fraction_left) {
  kvsim_plan_t tight = plan_ok(eagle3, 0.99), room = plan_ok(eagle3, 0.95), alone = plan_ok(NULL, 0.99);
  cr_assert(alone.fits, "the target alone fits at 0.99");
  cr_assert(!tight.fits, "the draft does not");
  cr_assert(strstr(tight.error, "CUDA out of memory"), "%s", tight.error);
  cr_assert(room.fits, "0.95 leaves room");
}

/* _handle_speculative_decoding: 48 running requests and the 5 / 4 / 8
 * tree; a decode step may take max(5 x 4, 8) = 20 slots per request.
 * _handle_gpu_memory_settings: 2048 MB more reserve on the 10 GB floor. */
Test(spec_sglang, defaults_and_reserve) {
  kvsim_plan_t off = plan_ok(NULL, 0), on = plan_ok(eagle3, 0);
  cr_assert_eq(on.sglang.max_running_requests, 48, "max_running_requests %lld",
               (long long)on.sglang.max_running_requests);
  cr_assert_eq(on.p.spec.sgl_num_steps, 5);
  cr_assert_eq(on.p.spec.sgl_eagle_topk, 4);
  cr_assert_eq(on.p.spec.sgl_num_draft_tokens, 8);
  cr_assert_eq(on.p.spec.num_speculative_tokens, 5, "accepted at most: the depth");
  cr_assert_eq(on.sglang.alloc_len_per_decode, 20, "slots per decode step");
  cr_assert_eq(off.sglang.alloc_len_per_decode, 1, "one without EAGLE");
  cr_assert_float_eq(on.sglang.reserved_mb, off.sglang.reserved_mb + 2048, 1e-9, "reserve");
  const double mem = (double)on.total_memory_bytes / (1 << 20);
  cr_assert_float_eq(on.sglang.mem_fraction_static, round((mem - on.sglang.reserved_mb) / mem * 1000) / 1000,
                     1e-12, "fraction %g", on.sglang.mem_fraction_static);
  cr_assert(on.sglang.mem_fraction_static < off.sglang.mem_fraction_static, "a lower fraction");
}

/* topk 1: num_draft_tokens = num_steps + 1 whatever was given; a chain of
 * 3 takes max(3, 4) = 4 slots. */
Test(spec_sglang, topk_one_is_a_chain) {
  kvsim_plan_t pl;
  kvsim_err err = {0};
  cr_assert_eq(plan_with(eagle3, 0.8, 3, 1, 9, 1, &pl, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(pl.p.spec.sgl_num_draft_tokens, 4, "adjusted to steps + 1");
  cr_assert_eq(pl.sglang.alloc_len_per_decode, 4, "slots");
}

Test(spec_sglang, errors) {
  kvsim_plan_spec_params_t sp;
  kvsim_plan_t pl;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_spec_parse_sglang_text("{\"method\": \"eagle3\", \"model\": \"x\", "
                                            "\"num_speculative_tokens\": 3}",
                                            &sp, "s", &err),
               KVSIM_EINVAL, "vLLM's k");
  cr_assert(strstr(err.msg, "--speculative-num-steps"), "points to SGLang's keys: %s", err.msg);
  cr_assert_eq(kvsim_spec_parse_sglang_text("{\"method\": \"ngram\"}", &sp, "s", &err), KVSIM_EINVAL,
               "ngram");
  cr_assert_eq(kvsim_spec_parse_sglang_text("{\"method\": \"eagle3\"}", &sp, "s", &err), KVSIM_EINVAL,
               "no draft");
  cr_assert_eq(plan_with(eagle3, 0.8, 3, 0, 0, 1, &pl, &err), KVSIM_EINVAL, "a partial tree");
  cr_assert(strstr(err.msg, "none of the three"), "%s", err.msg);
  cr_assert_eq(plan_with(eagle3, 0.8, 0, 0, 0, 16, &pl, &err), KVSIM_EINVAL, "topk 4 on pages of 16");
  cr_assert(strstr(err.msg, "page_size > 1"), "%s", err.msg);
  cr_assert_eq(plan_with(eagle3, 0.8, 4, 1, 5, 16, &pl, &err), KVSIM_OK, "a chain on pages: %s", err.msg);
  cr_assert_eq(plan_with(eagle3, 0.8, 40, 1, 41, 1, &pl, &err), KVSIM_EINVAL, "40 steps through the API");
  cr_assert(strstr(err.msg, "--speculative-num-steps"), "names the flag: %s", err.msg);
}

/* The scheduler with SGLang's tree of 3 steps x topk 2 and 4 draft tokens
 * (3 drafts verified), every draft accepted: after the prefill each
 * decode step computes 4 rows per request and emits 3 + 1 tokens. */
Test(spec_sglang, verify_steps) {
  env_t e;
  env_setup(&e, (env_opts_t){.profile = "sglang", .engine = KVSIM_PLAN_SGLANG, .blocks = 65,
                             .budget = 64, .max_seqs = 4, .chunked = true});
  kvsim_err err = {0};
  double one = 1.0;
  e.s->cfg.num_spec_tokens = 3;
  e.s->cfg.num_lookahead_tokens = 6; /* max(3 x 2, 4) */
  cr_assert_eq(kvsim_spec_accept_set(&e.s->cfg.accept, 3, &one, 1, "r", &err), KVSIM_OK, "%s", err.msg);
  gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
  e.s->spec_rng = g;
  kvsim_request_t *r = add(&e, 0, 8, 9);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, r), 8, "the prompt");
  finish_step(&e);
  cr_assert_eq(r->num_spec, 3, "the draft extend proposes");
  schedule(&e);
  cr_assert_eq(tokens_of(&e, r), 4, "last token + 3 tree drafts");
  finish_step(&e);
  cr_assert_eq(r->num_output, 5, "1 + 3 accepted + 1");
  cr_assert_eq(e.s->spec_drafts_total, 3, "drafts verified");
  cr_assert_eq(e.s->spec_accepted_total, 3, "accepted");
  gsl_rng_free(g);
  teardown_env(&e);
}

/* check_decode_mem with EAGLE: a decode step needs room for
 * get_alloc_len_per_decode slots per request. Pages of 4: after their
 * prefill a and b hold 3 pages each (12 tokens computed) and need pages up
 * to 12 + 20 slots, 5 more each; a pool with room for their next tokens
 * but not for 10 pages retracts one. */
Test(spec_sglang, decode_reserves_the_step_slots) {
  env_t e;
  /* 16 pages = 64 tokens (+ the null page). */
  env_setup(&e, (env_opts_t){.profile = "sglang", .engine = KVSIM_PLAN_SGLANG, .blocks = 17,
                             .budget = 64, .max_seqs = 4, .chunked = true});
  kvsim_err err = {0};
  double zero = 0.0;
  e.s->cfg.num_spec_tokens = 7;
  e.s->cfg.num_lookahead_tokens = 20;
  cr_assert_eq(kvsim_spec_accept_set(&e.s->cfg.accept, 5, &zero, 1, "r", &err), KVSIM_OK, "%s", err.msg);
  gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
  e.s->spec_rng = g;
  kvsim_request_t *a = add(&e, 0, 12, 3), *b = add(&e, 1, 12, 3);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a) + tokens_of(&e, b), 24, "both prefill");
  finish_step(&e);
  /* 16 - 6 = 10 pages free for the 10 needed. */
  schedule(&e);
  cr_assert_eq(e.step.num_preempted, 0, "10 pages for 10 needed");
  cr_assert_eq(tokens_of(&e, a), 8, "last token + 7 drafts");
  finish_step(&e);
  cr_assert_eq(a->num_output, 2, "none accepted: the target's token");
  gsl_rng_free(g);
  teardown_env(&e);

  /* One page less: 9 free for the 10 the two need, so one is retracted
   * although each next token alone would fit. */
  env_setup(&e, (env_opts_t){.profile = "sglang", .engine = KVSIM_PLAN_SGLANG, .blocks = 16,
                             .budget = 64, .max_seqs = 4, .chunked = true});
  e.s->cfg.num_spec_tokens = 7;
  e.s->cfg.num_lookahead_tokens = 20;
  cr_assert_eq(kvsim_spec_accept_set(&e.s->cfg.accept, 5, &zero, 1, "r", &err), KVSIM_OK, "%s", err.msg);
  g = gsl_rng_alloc(gsl_rng_mt19937);
  e.s->spec_rng = g;
  a = add(&e, 0, 12, 3);
  b = add(&e, 1, 12, 3);
  schedule(&e);
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(e.step.num_preempted, 1, "retracted for the 20-slot reservation");
  gsl_rng_free(g);
  teardown_env(&e);
}
