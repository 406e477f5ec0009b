/* hf-transformers profile: static batches whose rows follow the cache
 * class (cache_utils.py): StaticCache reserves max_cache_len per row,
 * DynamicCache rows start at the padded prompt and grow by one token a
 * step, finished rows included, until the batch ends. Blocks of 4 tokens. */
#include <criterion/criterion.h>

#include <stdio.h>

#include "kvsim/sched.h"
#include "sched_harness.h"

static void setup(env_t *e, int32_t blocks, int64_t batch, const char *json) {
  env_setup(e, (env_opts_t){.profile = "hf-transformers",
                            .engine = KVSIM_PLAN_HF,
                            .blocks = blocks,
                            .budget = 4096,
                            .max_seqs = batch,
                            .max_model_len = 64,
                            .engine_json = json});
}

Test(sched_hf, static_rows_reserve_max_cache_len) {
  env_t e;
  setup(&e, 101, 2, "{\"cache\": \"static\"}");
  kvsim_request_t *a = add(&e, 0, 8, 2), *b = add(&e, 1, 8, 2), *c = add(&e, 2, 8, 2);
  schedule(&e);
  cr_assert_eq(e.s->running.n, 2, "batch 2");
  cr_assert_eq(a->reserved_tokens, 64, "max_cache_len per row");
  cr_assert_eq(kvsim_kvcache_held(&e.kv, b), 16, "64 tokens: 16 blocks at once");
  cr_assert_eq(c->status, KVSIM_REQ_WAITING, "the next batch");
  teardown_env(&e);
}

Test(sched_hf, dynamic_rows_grow_from_the_padded_prompt) {
  env_t e;
  setup(&e, 101, 2, "{\"cache\": \"dynamic\"}");
  kvsim_request_t *a = add(&e, 0, 4, 2), *b = add(&e, 1, 12, 5);
  schedule(&e);
  cr_assert_eq(a->reserved_tokens, 12, "a's row is padded to the longest prompt");
  cr_assert_eq(kvsim_kvcache_held(&e.kv, a), 3, "12 tokens: 3 blocks");
  cr_assert_eq(e.step.num_tokens, 24, "padded prefill: 2 x 12");
  finish_step(&e);
  int64_t held0 = 128 - 4 - kvsim_pool_num_free(&e.kv.pool); /* blocks in use */
  cr_assert_geq(held0, 6, "both rows' 12 tokens");
  for (int s = 0; s < 2; s++) {
    schedule(&e);
    finish_step(&e);
  }
  cr_assert_eq(a->status, KVSIM_REQ_FINISHED, "a is done after 2 tokens");
  cr_assert_eq(held_count(&e), 1, "a's row stays in the batch");
  kvsim_request_t *const *h;
  e.s->ops->held(e.s, &h);
  cr_assert_eq(h[0]->reserved_tokens, 14, "a's finished row kept growing: 12 + 2 steps");
  cr_assert_eq(b->reserved_tokens, 14, "b's row: 12 + 2 decode steps");
  for (int s = 0; s < 2; s++) {
    schedule(&e);
    finish_step(&e);
  }
  cr_assert_eq(b->status, KVSIM_REQ_FINISHED, "b done");
  cr_assert_eq(held_count(&e), 0, "the batch ended");
  cr_assert_eq(kvsim_pool_num_free(&e.kv.pool), 100, "every row freed");
  teardown_env(&e);
}

/* The last token is sampled and never fed back, so a row peaks at its
 * prompt plus output minus one: a request the gateway admits because that
 * fills the pool exactly must run (it was held back forever, one token
 * short, until the run stopped as stuck). */
Test(sched_hf, dynamic_row_that_fills_the_pool_exactly_runs) {
  env_t e;
  setup(&e, 13, 2, "{\"cache\": \"dynamic\"}"); /* 12 blocks = 48 tokens */
  kvsim_request_t *a = add(&e, 0, 8, 41);        /* peaks at 8 + 41 - 1 = 48 */
  schedule(&e);
  cr_assert_eq(e.s->running.n, 1, "the row's peak fits the pool: it runs");
  for (int s = 0; s < 100 && e.s->running.n; s++) {
    schedule(&e);
    finish_step(&e);
  }
  cr_assert_eq(a->status, KVSIM_REQ_FINISHED, "all 41 tokens, within the pool");
  cr_assert_eq(kvsim_pool_num_free(&e.kv.pool), 12, "its row freed");
  teardown_env(&e);
}

Test(sched_hf, dynamic_batch_closes_when_the_rows_would_outgrow_the_pool) {
  env_t e;
  setup(&e, 21, 4, "{\"cache\": \"dynamic\"}"); /* 20 blocks = 80 tokens */
  add(&e, 0, 8, 24);                            /* rows of 8 + 24 = 32 tokens */
  add(&e, 1, 8, 24);                            /* two rows: 16 blocks */
  kvsim_request_t *c = add(&e, 2, 8, 24);       /* three would need 24 */
  schedule(&e);
  cr_assert_eq(e.s->running.n, 2, "two rows fit their growth");
  cr_assert_eq(c->status, KVSIM_REQ_WAITING, "the third waits for the next batch");
  for (int s = 0; s < 200 && (e.s->running.n || e.s->waiting.n); s++) {
    schedule(&e);
    finish_step(&e);
  }
  cr_assert_eq(c->status, KVSIM_REQ_FINISHED, "it runs in the next batch; nothing lost");
  cr_assert_eq(e.s->num_preemptions, 0, "static batching never preempts");
  teardown_env(&e);
}

/* The scenario's engine keys through the profile's parser; err->msg on error. */
static int parse(const char *json, kvsim_err *err) {
  cJSON *o = cJSON_Parse(json);
  cr_assert_not_null(o, "json %s", json);
  kvsim_sched_opts_t opts;
  int rc =
      kvsim_sched_parse_opts(kvsim_sched_find("hf-transformers"), o, "s.json: engine", &opts, err);
  cJSON_Delete(o);
  return rc;
}

Test(sched_hf, nbits_is_2_or_4_as_calc_says) {
  /* engine.nbits 3 and the others out of quanto's two widths, each in calc
   * --nbits' words (1 and 5 once read "[2, 4]", as if 3 were allowed). */
  const int bad[] = {3, 1, 5, 0, -4, 8};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char json[64], want[128];
    kvsim_err err = {0};
    snprintf(json, sizeof json, "{\"cache\": \"quantized\", \"nbits\": %d}", bad[i]);
    cr_assert_eq(parse(json, &err), KVSIM_EINVAL, "nbits %d is refused", bad[i]);
    snprintf(
        want, sizeof want,
        "s.json: engine.nbits: %d is out of range (2 or 4: transformers' quanto QuantizedCache)",
        bad[i]);
    cr_assert_str_eq(err.msg, want, "nbits %d names the key and the two widths", bad[i]);
  }
  kvsim_err err = {0};
  cr_assert_eq(parse("{\"nbits\": 3}", &err), KVSIM_EINVAL,
               "3 is refused whatever the cache class");
  cr_assert_eq(parse("{\"cache\": \"quantized\", \"nbits\": 2}", &err), KVSIM_OK, "2 bits: %s",
               err.msg);
  cr_assert_eq(parse("{\"cache\": \"quantized\", \"nbits\": 4}", &err), KVSIM_OK, "4 bits: %s",
               err.msg);
  cr_assert_eq(parse("{\"cache\": \"quantized\", \"nbits\": 2.5}", &err), KVSIM_EINVAL,
               "2.5 is no integer");
  cr_assert_str_eq(err.msg, "s.json: engine.nbits: expected an integer", "named: %s", err.msg);
}

Test(sched_hf, max_cache_len_0_is_not_the_default) {
  kvsim_err err = {0};
  cr_assert_eq(parse("{\"cache\": \"static\", \"max_cache_len\": 0}", &err), KVSIM_EINVAL,
               "a written 0 is refused (only an absent key is the default)");
  cr_assert_str_eq(err.msg, "s.json: engine.max_cache_len: 0 is out of range [1, 1073741824]",
                   "named: %s", err.msg);
  cr_assert_eq(parse("{\"cache\": \"static\", \"max_cache_len\": 1}", &err), KVSIM_OK, "1: %s",
               err.msg);
  cr_assert_eq(parse("{\"cache\": \"static\"}", &err), KVSIM_OK, "absent: %s", err.msg);
}
