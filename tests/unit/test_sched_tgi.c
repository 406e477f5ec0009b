/* tgi profile: the v3 router's rules in isolation (backends/v3/src/queue.rs
 * State::next_batch, backend.rs batching_task): blocks for prompt +
 * max_new_tokens reserved at admission, head-of-line blocking and never a
 * preemption, the prefill budget with and without chunking, and
 * waiting_served_ratio / max_waiting_tokens. Blocks of 4 tokens. */
#include <criterion/criterion.h>

#include "kvsim/sched.h"
#include "sched_harness.h"

static void setup(env_t *e, int32_t blocks, int64_t budget, bool chunked) {
  env_setup(e, (env_opts_t){.profile = "tgi",
                            .engine = KVSIM_PLAN_TGI,
                            .blocks = blocks,
                            .budget = budget,
                            .max_seqs = 16,
                            .chunked = chunked});
}

/* Runs steps until nothing is scheduled; returns the steps run. */
static int drain(env_t *e, int max_steps) {
  int n = 0;
  for (; n < max_steps; n++) {
    schedule(e);
    if (!e->step.reqs.n)
      break;
    finish_step(e);
  }
  return n;
}

Test(sched_tgi, admission_reserves_prompt_and_max_new_tokens) {
  env_t e;
  setup(&e, 41, 64, true);
  kvsim_request_t *r = add(&e, 0, 10, 30);
  schedule(&e);
  cr_assert_eq(r->status, KVSIM_REQ_RUNNING, "admitted");
  cr_assert_eq(kvsim_kvcache_held(&e.kv, r), 10, "10 + 30 - 1 = 39 tokens: 10 blocks up front");
  cr_assert_eq(tokens_of(&e, r), 10, "the prompt computes");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(kvsim_kvcache_held(&e.kv, r), 10, "decoding takes no new block");
  teardown_env(&e);
}

Test(sched_tgi, head_of_line_blocking_and_no_preemption) {
  env_t e;
  setup(&e, 21, 64, true); /* 20 usable blocks = 80 tokens */
  kvsim_request_t *a = add(&e, 0, 10, 50), *b = add(&e, 1, 10, 30), *c = add(&e, 2, 4, 4);
  schedule(&e);
  cr_assert_eq(a->status, KVSIM_REQ_RUNNING, "a reserves 15 blocks");
  cr_assert_eq(b->status, KVSIM_REQ_WAITING, "b's 10 blocks do not fit in 5");
  cr_assert_eq(c->status, KVSIM_REQ_WAITING, "c's 2 blocks would, but the batch closed at b");
  finish_step(&e);
  while (a->status == KVSIM_REQ_RUNNING) {
    schedule(&e);
    cr_assert_eq(b->status, KVSIM_REQ_WAITING, "b waits while a runs");
    cr_assert_eq(e.step.num_preempted, 0, "nothing is preempted");
    finish_step(&e);
  }
  cr_assert_eq(a->num_output, 50, "a ran to its end");
  schedule(&e);
  cr_assert(b->status == KVSIM_REQ_RUNNING && c->status == KVSIM_REQ_RUNNING,
            "both join once a's blocks are free");
  drain(&e, 200);
  cr_assert_eq(e.s->num_preemptions, 0, "never a preemption");
  cr_assert(b->status == KVSIM_REQ_FINISHED && c->status == KVSIM_REQ_FINISHED, "no request lost");
  teardown_env(&e);
}

Test(sched_tgi, chunking_cuts_the_last_entry_to_the_budget) {
  env_t e;
  setup(&e, 101, 16, true);
  kvsim_request_t *a = add(&e, 0, 40, 4), *b = add(&e, 1, 20, 4);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 16, "a's first chunk is the budget");
  cr_assert_eq(b->status, KVSIM_REQ_WAITING, "no budget left for b");
  cr_assert_eq(kvsim_kvcache_held(&e.kv, a), 11, "a reserved 40 + 4 - 1 = 43 tokens anyway");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 16, "a's second chunk");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 8, "a's last 8 prompt tokens");
  cr_assert_eq(tokens_of(&e, b), 8, "b is cut to the 8 left");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 1, "a decodes");
  cr_assert_eq(tokens_of(&e, b), 12, "b's rest fits beside a's decode token");
  teardown_env(&e);
}

Test(sched_tgi, without_chunking_a_prompt_past_the_budget_waits) {
  env_t e;
  setup(&e, 101, 32, false);
  kvsim_request_t *a = add(&e, 0, 20, 4), *b = add(&e, 1, 20, 4);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 20, "a's whole prompt");
  cr_assert_eq(b->status, KVSIM_REQ_WAITING, "b's 20 tokens exceed the 12 left: back to the queue");
  teardown_env(&e);
}

Test(sched_tgi, waiting_served_ratio_and_max_waiting_tokens) {
  env_t e;
  setup(&e, 401, 256, false);
  kvsim_request_t *r[9];
  for (int i = 0; i < 7; i++)
    r[i] = add(&e, i, 8, 60);
  schedule(&e);
  cr_assert_eq(e.s->running.n, 7, "an empty batch takes them all");
  finish_step(&e);
  r[7] = add(&e, 7, 8, 4);
  int steps = 0;
  while (r[7]->status == KVSIM_REQ_WAITING && steps < 100) {
    schedule(&e);
    if (r[7]->status == KVSIM_REQ_WAITING)
      cr_assert_eq(e.step.reqs.n, 7, "the running batch decodes");
    finish_step(&e);
    steps++;
  }
  /* floor(7 x 0.3) = 2 > 1 entry: it waits until max_waiting_tokens (20)
   * decode steps have passed since the last batch. */
  cr_assert_eq(steps, 20, "admitted on the 20th schedule (19 decode steps waited), got %d", steps);
  cr_assert_eq(e.step.reqs.n, 1, "the new batch prefills alone");
  r[8] = add(&e, 8, 8, 4);
  kvsim_request_t *r9 = add(&e, 9, 8, 4);
  schedule(&e);
  cr_assert(r[8]->status == KVSIM_REQ_RUNNING && r9->status == KVSIM_REQ_RUNNING,
            "two entries reach floor(8 x 0.3) = 2 at once");
  finish_step(&e);
  drain(&e, 400);
  for (int i = 0; i < 9; i++)
    cr_assert_eq(r[i]->status, KVSIM_REQ_FINISHED, "request %d finished", i);
  cr_assert_eq(r9->status, KVSIM_REQ_FINISHED, "request 9 finished");
  teardown_env(&e);
}

Test(sched_tgi, reserve_max_total_tokens_option) {
  env_t e;
  env_setup(&e, (env_opts_t){.profile = "tgi",
                             .engine = KVSIM_PLAN_TGI,
                             .blocks = 101,
                             .budget = 64,
                             .max_seqs = 16,
                             .chunked = true,
                             .max_model_len = 64,
                             .engine_json = "{\"reserve_max_total_tokens\": true}"});
  kvsim_request_t *a = add(&e, 0, 10, 2);
  schedule(&e);
  cr_assert_eq(kvsim_kvcache_held(&e.kv, a), 16, "max_total_tokens 64 - 1 = 63 tokens: 16 blocks");
  teardown_env(&e);
}

Test(sched_tgi, without_chunking_a_lone_prompt_past_the_budget_runs_alone) {
  env_t e;
  setup(&e, 101, 16, false);
  kvsim_request_t *a = add(&e, 0, 8, 40), *b = add(&e, 1, 20, 4);
  schedule(&e);
  cr_assert_eq(a->status, KVSIM_REQ_RUNNING, "a fits the budget");
  cr_assert_eq(b->status, KVSIM_REQ_WAITING, "b's 20 tokens wait while a batch runs");
  finish_step(&e);
  while (a->status != KVSIM_REQ_FINISHED) {
    schedule(&e);
    finish_step(&e);
  }
  schedule(&e);
  cr_assert_eq(b->status, KVSIM_REQ_RUNNING,
               "on an idle replica b runs alone rather than wait for ever");
  cr_assert_eq(tokens_of(&e, b), 20, "its whole prompt");
  teardown_env(&e);
}

/* The scenario's engine keys, as the profile parses them into the plan. */
static int parse(const char *profile, const char *json, kvsim_plan_params_t *p, kvsim_err *err) {
  const kvsim_sched_ops_t *ops = kvsim_sched_find(profile);
  cr_assert_not_null(ops, "%s registered", profile);
  cJSON *o = cJSON_Parse(json);
  cr_assert_not_null(o, "json %s", json);
  kvsim_sched_opts_t opts;
  int rc = kvsim_sched_parse_opts(ops, o, "engine", &opts, err);
  cJSON_Delete(o);
  kvsim_plan_params_default(p);
  if (rc == KVSIM_OK && ops->plan_params)
    ops->plan_params(&opts, p);
  return rc;
}

Test(sched_tgi, scenario_keys_reach_the_plan) {
  kvsim_plan_params_t p;
  kvsim_err err = {0};
  cr_assert_eq(
      parse("tgi",
            "{\"tgi_version\": 3.0, \"attention\": \"paged\", \"cuda_memory_fraction\": 0.8,"
            " \"max_total_tokens\": 4096}",
            &p, &err),
      KVSIM_OK, "%s", err.msg);
  cr_assert_eq(p.tgi.version_minor, 0, "a JSON number 3.0 is TGI 3.0");
  cr_assert_eq(p.tgi.attention, KVSIM_TGI_PAGED, "paged");
  cr_assert_float_eq(p.tgi.cuda_memory_fraction, 0.8, 1e-12, "fraction");
  cr_assert_eq(p.tgi.max_total_tokens, 4096, "max_total_tokens");
  cr_assert_eq(parse("tgi", "{\"tgi_version\": \"3.2.1\"}", &p, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(p.tgi.version_minor, 2, "3.2.1");
  cr_assert_eq(parse("tgi", "{\"cuda_memory_fraction\": 0}", &p, &err), KVSIM_EINVAL, "fraction 0");
  cr_assert(strstr(err.msg, "engine.cuda_memory_fraction"), "names the key: %s", err.msg);
  cr_assert_eq(parse("tgi", "{\"attention\": \"sdpa\"}", &p, &err), KVSIM_EINVAL,
               "unknown backend");
  cr_assert_eq(parse("vllm-v1", "{\"tgi_version\": \"1.4\"}", &p, &err), KVSIM_EINVAL,
               "a bad tgi key is an error whichever profile runs");
  /* TGI 2.x: the release reaches the plan whole, and the launcher's
   * backend of that release (paged before 2.3) is the default. */
  cr_assert_eq(parse("tgi", "{\"tgi_version\": \"2.2.0\"}", &p, &err), KVSIM_OK, "%s", err.msg);
  cr_assert(p.tgi.version_major == 2 && p.tgi.version_minor == 2 && p.tgi.version_patch == 0,
            "2.2.0: %d.%d.%d", p.tgi.version_major, p.tgi.version_minor, p.tgi.version_patch);
  cr_assert_eq(p.tgi.attention, KVSIM_TGI_PAGED, "2.2 defaults to paged attention");
  cr_assert_eq(parse("tgi", "{\"tgi_version\": \"2.4.1\"}", &p, &err), KVSIM_OK, "%s", err.msg);
  cr_assert(p.tgi.version_patch == 1 && p.tgi.attention == KVSIM_TGI_FLASHINFER,
            "2.4.1 defaults to flashinfer");
  cr_assert_eq(parse("hf-transformers",
                     "{\"cache\": \"static\", \"batch\": 8, \"max_cache_len\": 8192}", &p, &err),
               KVSIM_OK, "%s", err.msg);
  cr_assert(p.hf.cache == KVSIM_HF_STATIC && p.hf.batch == 8 && p.hf.max_cache_len == 8192,
            "hf keys");
  cr_assert_eq(parse("hf-transformers", "{\"nbits\": 3}", &p, &err), KVSIM_EINVAL, "3 bits");
}

/* A second turn whose prompt repeats the first turn's prompt and answer:
 * TGI's trie holds the first prompt only (radix.rs free inserts prefill
 * tokens), vLLM's cache every computed full block. Returns the hit. */
static int64_t second_turn_hit(const char *profile, kvsim_plan_engine engine) {
  env_t e;
  env_setup(&e, (env_opts_t){.profile = profile,
                             .engine = engine,
                             .blocks = 101,
                             .budget = 64,
                             .max_seqs = 8,
                             .chunked = true,
                             .prefix = true});
  kvsim_segment_t s0[1] = {{1, 16}};
  kvsim_segment_t s1[3] = {
      {1, 16}, {kvsim_output_segment_id(0), 8}, {kvsim_unique_segment_id(1), 8}};
  e.reqs[0].spec.segments = s0;
  e.reqs[0].spec.num_segments = 1;
  kvsim_request_t *a = add(&e, 0, 16, 8);
  for (int i = 0; i < 50 && a->status != KVSIM_REQ_FINISHED; i++) {
    schedule(&e);
    finish_step(&e);
  }
  cr_assert_eq(a->status, KVSIM_REQ_FINISHED, "%s: the first turn ends", profile);
  e.reqs[1].spec.segments = s1;
  e.reqs[1].spec.num_segments = 3;
  kvsim_request_t *b = add(&e, 1, 32, 4);
  schedule(&e);
  int64_t hit = b->num_cached_tokens;
  teardown_env(&e);
  return hit;
}

Test(sched_tgi, only_prompt_blocks_enter_the_trie) {
  int64_t tgi = second_turn_hit("tgi", KVSIM_PLAN_TGI);
  int64_t v1 = second_turn_hit("vllm-v1", KVSIM_PLAN_V1);
  cr_assert_eq(tgi, 16, "TGI reuses the first prompt's 16 tokens, got %lld", (long long)tgi);
  cr_assert_eq(v1, 20,
               "vLLM also the answer's computed full blocks (23 tokens: 5 blocks), got %lld",
               (long long)v1);
}
