/* The sglang profile's rules (sim/src/sched/sglang.c): a prefill batch
 * first, else decode; admission against free + evictable tokens less the
 * running requests' new_token_ratio reservation; one chunked request at a
 * time; retraction of the request with the fewest outputs when a decode
 * batch finds no page, back to the end of the queue; the policies. */
#include "sched_harness.h"

/* The harness with SGLang's own engine keys (pages of 4 tokens), and
 * --scheduler-recv-interval when recv > 0. */
static void sgl_setup_recv(env_t *e, int32_t blocks, int64_t chunk, int64_t max_seqs,
                           const char *policy, double conservativeness, int recv) {
  memset(e, 0, sizeof *e);
  kvsim_plan_t pl;
  memset(&pl, 0, sizeof pl);
  pl.p.engine = KVSIM_PLAN_SGLANG;
  pl.p.block_size = 4;
  pl.p.max_model_len = 4096;
  pl.num_groups = 1;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_kvcache_init(&e->kv, &pl, blocks, true, &err), KVSIM_OK, "kv: %s", err.msg);
  cr_assert_eq(kvsim_cpu_tier_init(&e->cpu, 0, 1 << 20, 1.0, 10.0, false, &err), KVSIM_OK, "cpu");
  kvsim_sched_cfg_t cfg = {.max_num_seqs = max_seqs, .max_num_batched_tokens = chunk,
                           .max_model_len = 4096, .block_size = 4,
                           .enable_chunked_prefill = chunk > 0, .enable_prefix_caching = true};
  const kvsim_sched_ops_t *ops = kvsim_sched_find("sglang");
  cr_assert_not_null(ops, "sglang is registered");
  cJSON *engine = cJSON_CreateObject();
  cJSON_AddStringToObject(engine, "schedule_policy", policy);
  cJSON_AddNumberToObject(engine, "schedule_conservativeness", conservativeness);
  if (recv > 0)
    cJSON_AddNumberToObject(engine, "scheduler_recv_interval", recv);
  cr_assert_eq(kvsim_sched_parse_opts(ops, engine, "engine", &cfg.opts, &err), KVSIM_OK,
               "options: %s", err.msg);
  cJSON_Delete(engine);
  cr_assert_eq(kvsim_sched_new(ops, &cfg, &e->kv, &e->s, &err), KVSIM_OK, "sched: %s", err.msg);
  e->s->cpu = &e->cpu;
}

static void sgl_setup(env_t *e, int32_t blocks, int64_t chunk, int64_t max_seqs, const char *policy,
                      double conservativeness) {
  sgl_setup_recv(e, blocks, chunk, max_seqs, policy, conservativeness, 0);
}

Test(sched_sglang, prefill_batch_then_decode_batch) {
  env_t e;
  sgl_setup(&e, 201, 512, 8, "fcfs", 1.0);
  kvsim_request_t *a = add(&e, 0, 20, 5), *b = add(&e, 1, 12, 5);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 20, "a prefills whole");
  cr_assert_eq(tokens_of(&e, b), 12, "b joins the same prefill batch");
  finish_step(&e);
  kvsim_request_t *c = add(&e, 2, 8, 5);
  schedule(&e);
  cr_assert_eq(e.step.reqs.n, 1, "a new prefill batch runs alone (no mixed chunk)");
  cr_assert_eq(tokens_of(&e, c), 8, "c prefills");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(e.step.reqs.n, 3, "then one decode batch of every running request");
  cr_assert_eq(tokens_of(&e, a), 1, "one token each");
  finish_step(&e);
  teardown_env(&e);
}

/* --scheduler-recv-interval 3 (SchedulerRecvSkipper): an arrival during
 * decode waits until three decode steps have run; after a prefill, or
 * with nothing to run, the scheduler reads it at once. */
Test(sched_sglang, recv_interval_holds_arrivals_for_that_many_decode_steps) {
  for (int recv = 1; recv <= 3; recv += 2) {
    env_t e;
    sgl_setup_recv(&e, 401, 512, 8, "fcfs", 1.0, recv);
    kvsim_request_t *a = add(&e, 0, 20, 30), *b = add(&e, 1, 12, 30);
    schedule(&e);
    cr_assert(tokens_of(&e, a) == 20 && tokens_of(&e, b) == 12, "idle: read at once (interval %d)",
              recv);
    finish_step(&e);
    kvsim_request_t *c = add(&e, 2, 8, 30);
    schedule(&e);
    cr_assert_eq(tokens_of(&e, c), 8, "after a prefill the next loop reads c (interval %d)", recv);
    finish_step(&e);
    schedule(&e);
    cr_assert_eq(e.step.reqs.n, 3, "a decode batch of a, b, c");
    finish_step(&e);
    kvsim_request_t *d = add(&e, 3, 8, 30);
    int decodes = 0;
    for (schedule(&e); tokens_of(&e, d) != 8; schedule(&e)) {
      cr_assert_eq(e.step.reqs.n, 3, "d unread: the decode batch goes on without it");
      cr_assert_eq(e.s->waiting.n, 0, "d is not in the waiting queue before it is read");
      decodes++;
      finish_step(&e);
      cr_assert(decodes < 10, "d is read at last");
    }
    cr_assert_eq(decodes, recv == 1 ? 0 : 2,
                 "interval %d: d waits %d decode steps (the one before it arrived counts)", recv,
                 decodes);
    finish_step(&e);
    teardown_env(&e);
  }
}

Test(sched_sglang, admission_reserves_new_token_ratio_of_running_outputs) {
  /* 100 pages = 400 tokens. a: 40 + min(300, 4096) + 4 = 344 < 400. b the
   * same against 360 free - 300 x 0.7 reserved = 150: refused. */
  env_t e;
  sgl_setup(&e, 101, 512, 8, "fcfs", 1.0);
  kvsim_request_t *a = add(&e, 0, 40, 300);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 40, "a admitted");
  finish_step(&e);
  kvsim_request_t *b = add(&e, 1, 40, 300);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, b), 0, "b waits for the reservation");
  cr_assert_eq(tokens_of(&e, a), 1, "a decodes");
  cr_assert_eq(b->status, KVSIM_REQ_WAITING, "b still waiting");
  finish_step(&e);
  teardown_env(&e);
}

Test(sched_sglang, decode_retracts_the_request_with_fewest_outputs) {
  /* 20 pages = 80 tokens and a ratio of 0.07: a and b are admitted with
   * far less than their outputs reserved, and the pool runs out. */
  env_t e;
  sgl_setup(&e, 21, 512, 8, "fcfs", 0.1);
  kvsim_request_t *a = add(&e, 0, 20, 30);
  schedule(&e);
  finish_step(&e);
  for (int i = 0; i < 3; i++) { /* a decodes a little first */
    schedule(&e);
    finish_step(&e);
  }
  kvsim_request_t *b = add(&e, 1, 20, 30);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, b), 20, "b admitted on the low ratio");
  finish_step(&e);
  int steps = 0;
  while (e.s->num_preemptions == 0 && steps++ < 40) {
    schedule(&e);
    finish_step(&e);
  }
  cr_assert_eq(e.s->num_preemptions, 1, "one retraction");
  cr_assert_eq(b->status, KVSIM_REQ_WAITING, "b (fewer outputs) retracted");
  cr_assert_eq(b->num_computed, 0, "its KV freed for re-prefill");
  cr_assert_eq(a->status, KVSIM_REQ_RUNNING, "a keeps running");
  cr_assert(b->num_output > 0, "b keeps its outputs for the re-prefill");
  /* Everything finishes: a, then b re-prefilled with its outputs. */
  for (steps = 0; (a->status != KVSIM_REQ_FINISHED || b->status != KVSIM_REQ_FINISHED) &&
                  steps < 400;
       steps++) {
    schedule(&e);
    finish_step(&e);
  }
  cr_assert_eq(a->num_output, 30, "a done");
  cr_assert_eq(b->num_output, 30, "b done after its retraction");
  teardown_env(&e);
}

Test(sched_sglang, retracted_request_goes_to_the_back_of_the_queue) {
  env_t e;
  sgl_setup(&e, 21, 512, 8, "fcfs", 0.1);
  add(&e, 0, 20, 30);
  schedule(&e);
  finish_step(&e);
  for (int i = 0; i < 3; i++) {
    schedule(&e);
    finish_step(&e);
  }
  kvsim_request_t *b = add(&e, 1, 20, 30);
  schedule(&e);
  finish_step(&e);
  kvsim_request_t *c = add(&e, 2, 60, 10); /* too big to be admitted now */
  int steps = 0;
  while (e.s->num_preemptions == 0 && steps++ < 40) {
    schedule(&e);
    finish_step(&e);
  }
  cr_assert_eq(e.s->num_preemptions, 1, "one retraction");
  cr_assert_eq(kvsim_waitq_at(&e.s->waiting, 0), c, "c keeps its place");
  cr_assert_eq(kvsim_waitq_at(&e.s->waiting, 1), b, "b queued after it");
  teardown_env(&e);
}

Test(sched_sglang, long_prompt_is_chunked_alone) {
  env_t e;
  sgl_setup(&e, 201, 8, 8, "fcfs", 1.0);
  kvsim_request_t *a = add(&e, 0, 20, 2), *b = add(&e, 1, 4, 2);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 8, "first chunk");
  cr_assert_eq(tokens_of(&e, b), 0, "nobody joins a full chunk");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 8, "second chunk");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, a), 4, "last chunk");
  cr_assert_eq(tokens_of(&e, b), 4, "b fills the rest of the chunk budget");
  finish_step(&e);
  cr_assert_eq(a->num_output, 1, "a sampled after its last chunk");
  teardown_env(&e);
}

static uint64_t first_admitted(const char *policy) {
  env_t e;
  sgl_setup(&e, 201, 512, 1, policy, 1.0);
  add(&e, 0, 8, 10);
  add(&e, 1, 8, 50);
  add(&e, 2, 8, 30);
  schedule(&e);
  cr_assert_eq(e.step.reqs.n, 1, "%s: one slot", policy);
  uint64_t id = e.step.reqs.v[0]->spec.id;
  finish_step(&e);
  teardown_env(&e);
  return id;
}

Test(sched_sglang, policies_order_the_queue) {
  cr_assert_eq(first_admitted("fcfs"), 0, "fcfs: arrival order");
  cr_assert_eq(first_admitted("lof"), 1, "lof: longest output first");
  cr_assert_eq(first_admitted("lpm"), 0, "lpm with nothing cached: ties keep arrival order");
  uint64_t r = first_admitted("random");
  cr_assert_eq(first_admitted("random"), r, "random: seeded, the same each run");
}

Test(sched_sglang, bad_options_are_errors) {
  const kvsim_sched_ops_t *ops = kvsim_sched_find("sglang");
  kvsim_sched_opts_t opts;
  kvsim_err err = {0};
  cJSON *engine = cJSON_CreateObject();
  cJSON_AddStringToObject(engine, "schedule_policy", "dfs-weight");
  cr_assert_eq(kvsim_sched_parse_opts(ops, engine, "engine", &opts, &err), KVSIM_EINVAL, "policy");
  cr_assert(strstr(err.msg, "engine.schedule_policy") != NULL, "names the key: %s", err.msg);
  cJSON_Delete(engine);
  engine = cJSON_CreateObject();
  cJSON_AddNumberToObject(engine, "mem_fraction_static", 1.2);
  cr_assert_eq(kvsim_sched_parse_opts(ops, engine, "engine", &opts, &err), KVSIM_EINVAL, "fraction");
  cJSON_Delete(engine);
}

/* Request i with a prompt of the given segments (shared content). */
static kvsim_request_t *add_segs(env_t *e, int i, const kvsim_segment_t *segs, int n,
                                 int64_t output) {
  kvsim_request_t *r = &e->reqs[i];
  int64_t prompt = 0;
  for (int k = 0; k < n; k++)
    prompt += segs[k].len;
  r->spec.id = (uint64_t)i;
  r->spec.prompt_tokens = prompt;
  r->spec.output_tokens = output;
  r->spec.segments = segs;
  r->spec.num_segments = n;
  r->num_prompt = r->num_tokens = prompt;
  r->arrival = e->now;
  r->first_scheduled = r->first_token = r->finish = KVSIM_TIME_NEVER;
  r->status = KVSIM_REQ_WAITING;
  cr_assert_eq(kvsim_kvcache_prepare(&e->kv, r), KVSIM_OK, "request %d's identity", i);
  cr_assert_eq(e->s->ops->add(e->s, r, e->now), KVSIM_OK, "request %d queued", i);
  return r;
}

/* Request 0 ([P, X]) runs and finishes, leaving P cached; then a unique
 * prompt and one sharing P wait for one slot. Returns who goes first. */
static uint64_t first_after_cached_prefix(const char *policy, double *usage_after_finish) {
  static const kvsim_segment_t a[] = {{100, 16}, {1, 4}}, c[] = {{100, 16}, {3, 4}};
  env_t e;
  sgl_setup(&e, 201, 512, 1, policy, 1.0);
  kvsim_request_t *r0 = add_segs(&e, 0, a, 2, 1);
  schedule(&e);
  finish_step(&e);
  cr_assert_eq(r0->status, KVSIM_REQ_FINISHED, "request 0 done after its prefill");
  *usage_after_finish = kvsim_pool_usage(&e.kv.pool);
  add(&e, 1, 20, 4);
  kvsim_request_t *r2 = add_segs(&e, 2, c, 2, 4);
  schedule(&e);
  cr_assert_eq(e.step.reqs.n, 1, "%s: one slot", policy);
  uint64_t id = e.step.reqs.v[0]->spec.id;
  if (id == 2)
    cr_assert_eq(tokens_of(&e, r2), 4, "P's 16 tokens come from the cache");
  finish_step(&e);
  teardown_env(&e);
  return id;
}

Test(sched_sglang, lpm_takes_the_longest_cached_prefix_first) {
  double usage;
  cr_assert_eq(first_after_cached_prefix("fcfs", &usage), 1, "fcfs keeps arrival order");
  cr_assert_eq(first_after_cached_prefix("lpm", &usage), 2, "lpm: 16 cached tokens first");
  /* The finished request's pages stay cached but count as free
   * (token_usage = (total - available - evictable) / total). */
  cr_assert_eq(usage, 0.0, "cached, unlocked pages are evictable: usage %g", usage);
}

Test(sched_sglang, radix_cache_locks_in_use_prefixes_and_evicts_unlocked_leaves_first) {
  /* 30 pages of 4 tokens. a ([P, X]) keeps running, so P is locked; b
   * ([Q, Y]) finishes and leaves Q cached but unlocked; c (60 unique
   * tokens) needs 7 of b's 11 cached pages: the leaf end goes first. */
  static const kvsim_segment_t a[] = {{100, 40}, {1, 4}}, b[] = {{200, 40}, {2, 4}};
  static const kvsim_segment_t d[] = {{100, 40}, {4, 4}}, f[] = {{200, 40}, {5, 4}};
  env_t e;
  sgl_setup(&e, 31, 512, 8, "fcfs", 0.01);
  kvsim_request_t *ra = add_segs(&e, 0, a, 2, 100), *rb = add_segs(&e, 1, b, 2, 1);
  /* a's own batch charges its whole output estimate; b comes in the next
   * prefill batch, against a's reservation at the low ratio. */
  schedule(&e);
  cr_assert_eq(tokens_of(&e, rb), 0, "b waits: a's batch charged a's full estimate");
  finish_step(&e);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, rb), 44, "b admitted next");
  finish_step(&e);
  cr_assert_eq(rb->status, KVSIM_REQ_FINISHED, "b done");
  cr_assert_eq(e.kv.pool.num_cached_free, 11, "b's 11 pages cached, evictable");
  kvsim_request_t *rc = add(&e, 2, 60, 1);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, rc), 60, "c admitted by evicting cached pages");
  finish_step(&e);
  kvsim_request_t *rd = add_segs(&e, 3, d, 2, 1), *rf = add_segs(&e, 4, f, 2, 1);
  schedule(&e);
  cr_assert_eq(tokens_of(&e, rd), 4, "P, locked by running a, was not evicted: 40 tokens hit");
  /* Q kept its first 4 pages after c; d's new page took the next leaf
   * page: 12 tokens left to hit. */
  cr_assert_eq(tokens_of(&e, rf), 44 - 12, "Q lost its leaf end first: computes %d",
               tokens_of(&e, rf));
  cr_assert_eq(ra->status, KVSIM_REQ_RUNNING, "a still running");
  finish_step(&e);
  teardown_env(&e);
}

Test(sched_sglang, lpm_deprioritizes_a_prefix_shared_inside_the_queue) {
  /* Nothing cached yet: a and b share 40 prompt tokens, c shares none.
   * In-batch prefix caching runs a first and moves b after c, so that b
   * finds a's prefix cached. FCFS takes a and b. */
  static const kvsim_segment_t a[] = {{100, 40}, {1, 4}}, b[] = {{100, 40}, {2, 4}};
  const char *policies[] = {"lpm", "fcfs"};
  for (int k = 0; k < 2; k++) {
    env_t e;
    sgl_setup(&e, 201, 512, 2, policies[k], 1.0);
    kvsim_request_t *ra = add_segs(&e, 0, a, 2, 4), *rb = add_segs(&e, 1, b, 2, 4);
    kvsim_request_t *rc = add(&e, 2, 20, 4);
    schedule(&e);
    cr_assert_eq(tokens_of(&e, ra), 44, "%s: a first", policies[k]);
    if (k == 0) {
      cr_assert_eq(tokens_of(&e, rc), 20, "lpm: c before b");
      cr_assert_eq(tokens_of(&e, rb), 0, "lpm: b waits for a's prefix");
    } else {
      /* (kvsim's prefix cache finds a's pages as soon as they are
       * allocated, so b computes only its own 4 tokens.) */
      cr_assert_gt(tokens_of(&e, rb), 0, "fcfs: b second");
      cr_assert_eq(tokens_of(&e, rc), 0, "fcfs: c third");
    }
    finish_step(&e);
    teardown_env(&e);
  }
}

/* engine.gpu_memory_capacity_mib (nvidia-smi's memory.total, what SGLang's
 * automatic mem_fraction_static reads) reaches the plan; out of range is
 * an error naming the key. */
Test(sched_sglang, gpu_memory_capacity_key_reaches_the_plan) {
  const kvsim_sched_ops_t *ops = kvsim_sched_find("sglang");
  kvsim_err err = {0};
  cJSON *o = cJSON_Parse("{\"gpu_memory_capacity_mib\": 23034}");
  kvsim_sched_opts_t opts;
  cr_assert_eq(kvsim_sched_parse_opts(ops, o, "engine", &opts, &err), KVSIM_OK, "%s", err.msg);
  cJSON_Delete(o);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  ops->plan_params(&opts, &p);
  cr_assert_float_eq(p.sglang.gpu_memory_capacity_mib, 23034, 1e-9, "the key's MiB");
  o = cJSON_Parse("{\"gpu_memory_capacity_mib\": 12}");
  cr_assert_eq(kvsim_sched_parse_opts(ops, o, "engine", &opts, &err), KVSIM_EINVAL, "12 MiB");
  cr_assert(strstr(err.msg, "engine") && strstr(err.msg, "gpu_memory_capacity_mib"), "names the key: %s",
            err.msg);
  cJSON_Delete(o);
}
