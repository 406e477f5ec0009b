/* Speculative decoding (kvsim/spec.h; sim/src/memory/spec.c,
 * sim/src/sched/spec_accept.c): --speculative-config as vLLM reads it, the
 * drafter's weights and KV layers in the plan written out by hand, the
 * lookahead slots and the verify step of the vllm-v1 scheduler, and the
 * accepted-token process. */
#include <criterion/criterion.h>

#include <gsl/gsl_rng.h>
#include <string.h>

#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"
#include "kvsim/spec.h"
#include "sched_harness.h"

static const char *const eagle3_70b =
    "{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.3-Instruct-70B\", "
    "\"num_speculative_tokens\": 3}";

static int plan_with(const char *model, int tp, const char *spec, kvsim_plan_t *pl, kvsim_err *err) {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_err e = {0};
  cr_assert_eq(kvsim_model_load(model, &m, &e), KVSIM_OK, "model %s: %s", model, e.msg);
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &g, &e), KVSIM_OK, "gpu: %s", e.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.tp = tp;
  p.max_model_len = 8192;
  if (spec)
    cr_assert_eq(kvsim_spec_parse_text(spec, &p.spec, "--speculative-config", &e), KVSIM_OK,
                 "parse %s: %s", spec, e.msg);
  return kvsim_plan_compute(&m, &g, &p, pl, err);
}

static kvsim_plan_t plan_ok(const char *model, int tp, const char *spec) {
  kvsim_plan_t pl;
  kvsim_err err = {0};
  cr_assert_eq(plan_with(model, tp, spec, &pl, &err), KVSIM_OK, "plan %s %s: %s", model,
               spec ? spec : "-", err.msg);
  return pl;
}

/* The EAGLE-3 head of Llama-3.3-70B at TP 4, parameter by parameter
 * (llama_eagle3.py): qkv over 2 x 8192 inputs to 16 q heads and 2 KV
 * heads of 128 per rank: 16384 x 2560 = 41,943,040; o: 2048 x 8192 =
 * 16,777,216; MLP: 3 x 8192 x 7168 = 176,160,768; four norms 32,768; the
 * replicated fc 3 x 8192 x 8192 = 201,326,592; lm_head 32000 / 4 x 8192 =
 * 65,536,000. 501,776,384 bf16 parameters = 1,003,552,768 bytes, plus
 * d2t's 32000 int64 = 256,000: 1,003,808,768 bytes. The embedding is the
 * target's (same vocabulary, PP 1). */
Test(spec, eagle3_head_weights_by_hand) {
  kvsim_plan_t off = plan_ok("llama-3.1-70b", 4, NULL), on = plan_ok("llama-3.1-70b", 4, eagle3_70b);
  cr_assert_eq(on.spec_weights_bytes, INT64_C(1003808768), "head bytes: %lld",
               (long long)on.spec_weights_bytes);
  cr_assert_eq(on.weights_bytes - off.weights_bytes, on.spec_weights_bytes,
               "the head is counted with the model's weights");
  cr_assert(on.spec_embed_shared && !on.spec_lm_head_shared,
            "EAGLE-3 shares the embedding, keeps its own lm_head");
  cr_assert_eq(on.available_kv_bytes, off.available_kv_bytes - on.spec_weights_bytes,
               "the KV budget shrinks by the head");
}

/* One drafter layer of 2 KV heads x 128 x K,V x 2 bytes = 1,024 bytes per
 * token beside the target's 80 x 1,024 = 81,920: every 16-token block
 * holds both. */
Test(spec, eagle3_kv_layer_in_every_block) {
  kvsim_plan_t off = plan_ok("llama-3.1-70b", 4, NULL), on = plan_ok("llama-3.1-70b", 4, eagle3_70b);
  cr_assert_eq(on.spec_draft_layers, 1, "one layer");
  cr_assert_eq(on.spec_per_token_bytes, 1024, "drafter bytes per token");
  cr_assert_eq(on.per_token_kv_bytes, 81920 + 1024, "per token, target + drafter");
  cr_assert_eq(on.block_bytes, 16 * (81920 + 1024), "block: %lld", (long long)on.block_bytes);
  cr_assert_eq(off.block_bytes, 16 * 81920, "without the drafter");
  cr_assert_eq(on.num_gpu_blocks, on.available_kv_bytes / on.block_bytes, "blocks from the budget");
  cr_assert_eq(on.num_lookahead_tokens, 3, "EAGLE reserves k lookahead slots");
}

/* ngram drafts on the host: no weights, no layer, no lookahead (the
 * scheduler's num_lookahead_tokens stays 0). */
Test(spec, ngram_costs_no_gpu_memory) {
  kvsim_plan_t off = plan_ok("llama-3.1-8b", 1, NULL),
               on = plan_ok("llama-3.1-8b", 1, "{\"method\": \"ngram\", \"num_speculative_tokens\": 4}");
  cr_assert_eq(on.spec_weights_bytes, 0, "no weights");
  cr_assert_eq(on.block_bytes, off.block_bytes, "same blocks");
  cr_assert_eq(on.num_gpu_blocks, off.num_gpu_blocks, "same pool");
  cr_assert_eq(on.num_lookahead_tokens, 0, "no lookahead");
  cr_assert_eq(on.p.spec.prompt_lookup_min, 5, "vLLM's default window");
  cr_assert_eq(on.p.spec.prompt_lookup_max, 5, "vLLM's default window");
}

/* A draft model is all of its layers: Llama-3.2-1B drafting for
 * Llama-3.1-8B adds 16 layers x 8 KV heads x 64 x 2 x 2 = 32,768 bytes per
 * token and its own weights (embedding included). */
Test(spec, draft_model_layers_and_weights) {
  kvsim_plan_t d = plan_ok("llama-3.2-1b", 1, NULL),
               on = plan_ok("llama-3.1-8b", 1,
                            "{\"model\": \"meta-llama/Llama-3.2-1B\", \"num_speculative_tokens\": 4}");
  cr_assert_eq(on.p.spec.method, KVSIM_SPEC_DRAFT_MODEL, "no eagle in the name: a draft model");
  cr_assert_eq(on.spec_draft_layers, 16, "the draft's layers");
  cr_assert_eq(on.spec_per_token_bytes, 32768, "draft KV per token");
  cr_assert_eq(on.spec_weights_bytes, d.weights_bytes, "the 1B's weights as its own plan has them");
  cr_assert_eq(on.num_lookahead_tokens, 4, "draft models reserve lookahead too");
}

/* MTP: DeepSeek-V3's one nextn layer; k defaults to n_predict = 1, and a
 * larger k must be a multiple of it (any k is). Its MLA layer adds one
 * latent of 576 x 2 bytes per token per rank. */
Test(spec, mtp_default_tokens_and_layer) {
  kvsim_plan_t on = plan_ok("deepseek-v3", 8, "{\"method\": \"deepseek_mtp\"}");
  cr_assert_eq(on.p.spec.method, KVSIM_SPEC_MTP, "deprecated name mapped to mtp");
  cr_assert_eq(on.p.spec.num_speculative_tokens, 1, "n_predict");
  cr_assert_eq(on.spec_draft_layers, 1, "one MTP layer");
  cr_assert_eq(on.spec_per_token_bytes, 576 * 2, "one latent per token");
  cr_assert_gt(on.spec_weights_bytes, INT64_C(1) << 30, "a routed-expert layer is over 1 GiB per rank: %lld",
               (long long)on.spec_weights_bytes);
}

static void expect_plan_error(const char *model, int tp, const char *spec, const char *needle) {
  kvsim_plan_t pl;
  kvsim_err err = {0};
  cr_assert_eq(plan_with(model, tp, spec, &pl, &err), KVSIM_EINVAL, "%s on %s refused", spec, model);
  cr_assert(strstr(err.msg, needle), "'%s' names '%s'", err.msg, needle);
}

Test(spec, plan_errors) {
  expect_plan_error("llama-3.1-8b", 1, "{\"method\": \"mtp\"}", "num_nextn_predict_layers");
  expect_plan_error("llama-3.1-8b", 1,
                    "{\"method\": \"draft_model\", \"model\": \"qwen2.5-7b\", \"num_speculative_tokens\": 2}",
                    "same vocabulary size");
  expect_plan_error("llama-3.1-8b", 1,
                    "{\"model\": \"llama-3.2-1b\", \"num_speculative_tokens\": 2, "
                    "\"draft_tensor_parallel_size\": 2}",
                    "cannot be other value than 1");
  expect_plan_error("gemma-2-9b", 1, "{\"model\": \"gemma-2-9b\", \"num_speculative_tokens\": 2}",
                    "sliding-window");
}

static void expect_parse_error(const char *json, const char *needle) {
  kvsim_plan_spec_params_t p;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_spec_parse_text(json, &p, "--speculative-config", &err), KVSIM_EINVAL, "%s refused",
               json);
  cr_assert(strstr(err.msg, needle), "'%s' names '%s'", err.msg, needle);
  cr_assert(strstr(err.msg, "--speculative-config"), "'%s' names the flag", err.msg);
}

Test(spec, parse_rules) {
  kvsim_plan_spec_params_t p;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_spec_parse_text("{\"model\": \"yuhuili/EAGLE-LLaMA3-Instruct-8B\", "
                                     "\"num_speculative_tokens\": 2}", &p, "f", &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(p.method, KVSIM_SPEC_EAGLE, "'eagle-' in the name: eagle");
  cr_assert_eq(kvsim_spec_parse_text("{\"model\": \"[ngram]\", \"num_speculative_tokens\": 2, "
                                     "\"prompt_lookup_max\": 4}", &p, "f", &err), KVSIM_OK, "%s", err.msg);
  cr_assert(p.method == KVSIM_SPEC_NGRAM && p.prompt_lookup_min == 4 && p.prompt_lookup_max == 4,
            "ngram, min taken from max");
  expect_parse_error("{\"method\": \"eagle3\", \"num_speculative_tokens\": 2}", "needs a model");
  expect_parse_error("{\"method\": \"medusa\", \"model\": \"x\", \"num_speculative_tokens\": 2}",
                     "does not model");
  expect_parse_error("{\"method\": \"eagle\", \"model\": \"x\"}", "num_speculative_tokens");
  expect_parse_error("{\"method\": \"ngram\", \"num_speculative_tokens\": 2, \"prompt_lookup_min\": 6, "
                     "\"prompt_lookup_max\": 3}", "must be <=");
  expect_parse_error("{\"method\": \"ngram\", \"num_speculative_tokens\": 0}", "out of range");
  expect_parse_error("{\"method\": \"ngram\", \"num_speculative_tokens\": 2, \"acceptance_rate\": 0.5}",
                     "not a speculative-config key");
  expect_parse_error("[1]", "expected a JSON object");
}

/* One rate a: pos[i] = a^(i+1); the accepted count is the inverse CDF. */
Test(spec, accept_scalar_and_inverse_cdf) {
  kvsim_spec_accept_t a;
  kvsim_err err = {0};
  double r = 0.8;
  cr_assert_eq(kvsim_spec_accept_set(&a, 3, &r, 1, "acceptance_rate", &err), KVSIM_OK, "%s", err.msg);
  cr_assert_float_eq(a.pos[2], 0.512, 1e-12, "0.8^3");
  cr_assert_eq(kvsim_spec_accepted(&a, 3, 0.9), 0, "u above 0.8: none");
  cr_assert_eq(kvsim_spec_accepted(&a, 3, 0.7), 1, "0.64 <= u < 0.8: one");
  cr_assert_eq(kvsim_spec_accepted(&a, 3, 0.6), 2, "0.512 <= u < 0.64: two");
  cr_assert_eq(kvsim_spec_accepted(&a, 3, 0.5), 3, "u < 0.512: all");
  cr_assert_eq(kvsim_spec_accepted(&a, 1, 0.5), 1, "never more than the drafts verified");
  cr_assert_float_eq(kvsim_spec_mean_accepted(&a, 3), 0.8 + 0.64 + 0.512, 1e-12, "expected count");
}

/* The process through a seeded generator: the mean of 200,000 draws is
 * within 4 standard errors of the expected count (sd <= 1.5). */
Test(spec, accept_draws_match_the_rates) {
  kvsim_spec_accept_t a;
  kvsim_err err = {0};
  const double rates[4] = {0.9, 0.7, 0.4, 0.1};
  cr_assert_eq(kvsim_spec_accept_set(&a, 4, rates, 4, "acceptance_rate", &err), KVSIM_OK, "%s", err.msg);
  gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(g, 42);
  const int n = 200000;
  int64_t sum = 0, at_least3 = 0;
  for (int i = 0; i < n; i++) {
    int k = kvsim_spec_accepted(&a, 4, gsl_rng_uniform(g));
    sum += k;
    at_least3 += k >= 3;
  }
  gsl_rng_free(g);
  double mean = (double)sum / n, want = 0.9 + 0.7 + 0.4 + 0.1;
  cr_assert(mean > want - 4 * 1.5 / 447.0 && mean < want + 4 * 1.5 / 447.0, "mean %g vs %g", mean, want);
  cr_assert_float_eq((double)at_least3 / n, 0.4, 0.01, "P(first 3 accepted) is position 2's rate");
}

Test(spec, accept_errors) {
  kvsim_spec_accept_t a;
  kvsim_err err = {0};
  const double grows[3] = {0.5, 0.6, 0.2}, two[2] = {0.5, 0.4}, bad = 1.5;
  cr_assert_eq(kvsim_spec_accept_set(&a, 3, grows, 3, "r", &err), KVSIM_EINVAL, "a growing list");
  cr_assert(strstr(err.msg, "r[1]"), "names the position: %s", err.msg);
  cr_assert_eq(kvsim_spec_accept_set(&a, 3, two, 2, "r", &err), KVSIM_EINVAL, "2 rates for k 3");
  cr_assert_eq(kvsim_spec_accept_set(&a, 3, &bad, 1, "r", &err), KVSIM_EINVAL, "1.5");
  cr_assert(strstr(err.msg, "[0, 1]"), "names the range: %s", err.msg);
}

/* The vllm-v1 scheduler with k = 2 drafts, every draft accepted: after the
 * prefill, each step computes 1 + 2 tokens, reserves 2 lookahead slots
 * (blocks of 4 tokens), and emits 3 tokens. */
Test(spec, v1_verify_steps_and_lookahead) {
  env_t e;
  env_setup(&e, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = 64, .budget = 64,
                             .max_seqs = 4, .chunked = true});
  kvsim_err err = {0};
  double one = 1.0;
  e.s->cfg.num_spec_tokens = 2;
  e.s->cfg.num_lookahead_tokens = 2;
  cr_assert_eq(kvsim_spec_accept_set(&e.s->cfg.accept, 2, &one, 1, "r", &err), KVSIM_OK, "%s", err.msg);
  gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
  e.s->spec_rng = g;
  kvsim_request_t *r = add(&e, 0, 8, 7);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, r), 8, "the prompt");
  finish_step(&e);
  cr_assert_eq(r->num_output, 1, "the prefill samples one token");
  cr_assert_eq(r->num_spec, 2, "and the drafter proposes 2");
  schedule(&e);
  cr_assert_eq(tokens_of(&e, r), 3, "last token + 2 drafts");
  /* computed 8, new 3, lookahead 2: 13 slots = 4 blocks of 4. */
  cr_assert_eq(r->blocks[0].len, 4, "blocks %d", r->blocks[0].len);
  finish_step(&e);
  cr_assert_eq(r->num_output, 4, "1 + 2 accepted + 1");
  cr_assert_eq(r->num_computed, r->num_tokens - 1, "the last sampled token is not computed");
  cr_assert_eq(e.s->spec_drafts_total, 2, "drafts verified");
  cr_assert_eq(e.s->spec_accepted_total, 2, "accepted");
  schedule(&e);
  finish_step(&e);
  cr_assert_eq(r->num_output, 7, "the output stops at its length");
  cr_assert_eq(r->status, KVSIM_REQ_FINISHED, "finished");
  cr_assert_eq(e.done.n, 1, "reported done");
  gsl_rng_free(g);
  teardown_env(&e);
}

/* None accepted: one token per step, and the rejected drafts' slots are
 * not counted as computed. */
Test(spec, v1_rejected_drafts) {
  env_t e;
  env_setup(&e, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = 64, .budget = 64,
                             .max_seqs = 4, .chunked = true});
  kvsim_err err = {0};
  double zero = 0.0;
  e.s->cfg.num_spec_tokens = 3;
  cr_assert_eq(kvsim_spec_accept_set(&e.s->cfg.accept, 3, &zero, 1, "r", &err), KVSIM_OK, "%s", err.msg);
  gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
  e.s->spec_rng = g;
  kvsim_request_t *r = add(&e, 0, 8, 5);
  schedule(&e);
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, r), 4, "last token + 3 drafts");
  finish_step(&e);
  cr_assert_eq(r->num_output, 2, "only the target's own token");
  cr_assert_eq(r->num_computed, 9, "8 + the last token; the 3 drafts rejected");
  cr_assert_eq(e.s->spec_drafts_total, 3, "drafts verified");
  cr_assert_eq(e.s->spec_accepted_total, 0, "none accepted");
  gsl_rng_free(g);
  teardown_env(&e);
}

/* Prefix caching with drafts: blocks of 4, 3 drafts all accepted, so
 * num_computed jumps 9 -> 12 -> 16 past every block end. The block the
 * accepted drafts filled is cached by the next step, as vLLM's
 * cache_blocks goes on from num_cached_block; without the look-back no
 * output block would ever be cached. */
Test(spec, v1_accepted_blocks_are_cached) {
  env_t e;
  env_setup(&e, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = 64, .budget = 64,
                             .max_seqs = 4, .chunked = true, .prefix = true});
  kvsim_err err = {0};
  double one = 1.0;
  e.s->cfg.num_spec_tokens = 3;
  e.s->cfg.num_lookahead_tokens = 3;
  e.kv.spec_backoff = 4;
  cr_assert_eq(kvsim_spec_accept_set(&e.s->cfg.accept, 3, &one, 1, "r", &err), KVSIM_OK, "%s", err.msg);
  gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
  e.s->spec_rng = g;
  kvsim_request_t *r = add(&e, 0, 8, 40);
  for (int step = 0; step < 3; step++) {
    schedule(&e);
    finish_step(&e);
  }
  cr_assert_eq(r->num_computed, 16, "8 + 1 + 3, then + 4");
  schedule(&e); /* allocate_slots caches what the last verify filled */
  for (int b = 2; b < 4; b++)
    cr_assert(kvsim_kvcache_block_cached(&e.kv, r, 0, b), "output block %d cached", b);
  finish_step(&e);
  gsl_rng_free(g);
  teardown_env(&e);
}

/* An EAGLE-style drafter gives back the last block of a prefix hit
 * (find_longest_cache_hit with use_eagle): a preempted 16-token prompt
 * with one output token finds 4 blocks of 4 again without it, 3 with. */
static int64_t resumed_hit(bool eagle) {
  env_t e;
  env_setup(&e, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = 64, .budget = 64,
                             .max_seqs = 4, .chunked = true, .prefix = true});
  e.kv.drop_last_hit = eagle;
  kvsim_request_t *r = add(&e, 0, 16, 10);
  schedule(&e);
  finish_step(&e);
  cr_assert_eq(r->num_tokens, 17, "prompt and one output token");
  cr_assert_eq(kvsim_sched_preempt(e.s, r), KVSIM_OK, "preempted");
  e.s->running.n = 0;
  schedule(&e);
  int64_t hit = r->num_computed; /* the hit, before this step's tokens */
  teardown_env(&e);
  return hit;
}

Test(spec, eagle_drops_the_last_hit_block) {
  cr_assert_eq(resumed_hit(false), 16, "every full block found");
  cr_assert_eq(resumed_hit(true), 12, "the last one recomputed");
}
