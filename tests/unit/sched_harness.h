/* A scheduler in isolation, for the sched_* tests: a KV manager (blocks of
 * 4 tokens), an optional CPU tier, the profile, and helpers to add
 * requests and drive steps by hand. */
#ifndef KVSIM_TESTS_SCHED_HARNESS_H
#define KVSIM_TESTS_SCHED_HARNESS_H

#include <cJSON.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/sched.h"

typedef struct env {
  kvsim_kvcache_t kv;
  kvsim_cpu_tier_t cpu;
  kvsim_sched_t *s;
  kvsim_step_t step;
  kvsim_reqvec_t done;
  kvsim_request_t reqs[16];
  kvsim_time_ns now;
} env_t;

typedef struct env_opts {
  const char *profile;
  kvsim_plan_engine engine;   /* V1 for vllm-v1 (sliding rules), V0 otherwise */
  int32_t blocks;             /* pool blocks, the null block included */
  int64_t budget, max_seqs;
  int64_t max_model_len;      /* default 4096 */
  kvsim_policy policy;
  double watermark;
  bool swap, chunked, oracle;
  bool prefix;                /* prefix caching on */
  bool walk;                  /* a pool of real block ids even where it would count (kvcache.h) */
  int64_t cpu_blocks;         /* a CPU tier of 1 MiB blocks over 1 GB/s, 10 us */
  const char *engine_json;    /* more engine keys for the profile's options ("{...}"), or NULL */
} env_opts_t;

static inline void env_setup(env_t *e, env_opts_t o) {
  memset(e, 0, sizeof *e);
  int64_t mml = o.max_model_len ? o.max_model_len : 4096;
  kvsim_plan_t pl;
  memset(&pl, 0, sizeof pl);
  pl.p.engine = o.engine;
  pl.p.block_size = 4;
  pl.p.max_model_len = mml;
  pl.num_groups = 1;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_kvcache_init(&e->kv, &pl, o.blocks, o.prefix, &err), KVSIM_OK, "kv: %s", err.msg);
  if (o.walk)
    cr_assert_eq(kvsim_kvcache_walk_blocks(&e->kv, &err), KVSIM_OK, "walk: %s", err.msg);
  cr_assert_eq(kvsim_cpu_tier_init(&e->cpu, o.cpu_blocks, 1 << 20, 1.0, 10.0, false, &err),
               KVSIM_OK, "cpu: %s", err.msg);
  kvsim_sched_cfg_t cfg = {.max_num_seqs = o.max_seqs,
                           .max_num_batched_tokens = o.budget,
                           .max_model_len = mml,
                           .block_size = 4,
                           .enable_chunked_prefill = o.chunked,
                           .policy = o.policy,
                           .enable_prefix_caching = o.prefix,
                           .preemption_mode = o.swap ? KVSIM_PREEMPT_SWAP : KVSIM_PREEMPT_RECOMPUTE};
  /* The profiles' own options come the way a scenario gives them. */
  const kvsim_sched_ops_t *ops = kvsim_sched_find(o.profile);
  cr_assert_not_null(ops, "profile %s is registered", o.profile);
  cJSON *engine = o.engine_json ? cJSON_Parse(o.engine_json) : cJSON_CreateObject();
  cr_assert_not_null(engine, "engine options parse: %s", o.engine_json);
  /* Only to the profiles that read them: another profile's key is refused. */
  for (const char *const *k = ops->option_keys; k && *k; k++) {
    if (!strcmp(*k, "watermark"))
      cJSON_AddNumberToObject(engine, "watermark", o.watermark);
    if (!strcmp(*k, "oracle_lengths"))
      cJSON_AddBoolToObject(engine, "oracle_lengths", o.oracle);
  }
  cr_assert_eq(kvsim_sched_parse_opts(ops, engine, "engine", &cfg.opts, &err), KVSIM_OK,
               "options: %s", err.msg);
  cJSON_Delete(engine);
  cr_assert_eq(kvsim_sched_new(ops, &cfg, &e->kv, &e->s, &err), KVSIM_OK,
               "sched %s: %s", o.profile, err.msg);
  e->s->cpu = &e->cpu;
}

static inline void teardown_env(env_t *e) {
  kvsim_sched_free(e->s);
  kvsim_kvcache_fini(&e->kv);
  kvsim_cpu_tier_fini(&e->cpu);
  kvsim_reqvec_fini(&e->step.reqs);
  kvsim_reqvec_fini(&e->done);
  for (int i = 0; i < 16; i++) {
    for (int g = 0; g < KVSIM_MAX_KV_GROUPS; g++)
      free(e->reqs[i].blocks[g].ids);
    free(e->reqs[i].hashes);
    free(e->reqs[i].segs);
  }
}

/* Request i arrives now with this prompt, output and priority. */
static inline kvsim_request_t *add_prio(env_t *e, int i, int64_t prompt, int64_t output,
                                        int32_t prio) {
  kvsim_request_t *r = &e->reqs[i];
  r->spec.id = (uint64_t)i;
  r->spec.prompt_tokens = prompt;
  r->spec.output_tokens = output;
  r->spec.priority = prio;
  r->num_prompt = r->num_tokens = prompt;
  r->arrival = e->now;
  r->first_scheduled = r->first_token = r->finish = KVSIM_TIME_NEVER;
  r->status = KVSIM_REQ_WAITING;
  cr_assert_eq(kvsim_kvcache_prepare(&e->kv, r), KVSIM_OK, "request %d's identity", i);
  cr_assert_eq(e->s->ops->add(e->s, r, e->now), KVSIM_OK, "request %d queued", i);
  return r;
}

static inline kvsim_request_t *add(env_t *e, int i, int64_t prompt, int64_t output) {
  return add_prio(e, i, prompt, output, 0);
}

static inline void schedule(env_t *e) {
  e->step.reqs.n = 0;
  e->step.num_preempted = 0;
  e->step.num_tokens = 0;
  e->step.extra_ns = 0;
  cr_assert_eq(e->s->ops->schedule(e->s, e->now, &e->step), KVSIM_OK, "schedule");
}

/* The step ends 10 ns later. */
static inline void finish_step(env_t *e) {
  e->now += 10;
  e->done.n = 0;
  cr_assert_eq(e->s->ops->update(e->s, e->now, &e->step, &e->done), KVSIM_OK, "update");
}

/* Tokens r computes in the current step (0 if not scheduled). */
static inline int32_t tokens_of(const env_t *e, const kvsim_request_t *r) {
  for (int32_t i = 0; i < e->step.reqs.n; i++)
    if (e->step.reqs.v[i] == r)
      return r->step_new;
  return 0;
}

/* Requests the profile holds outside its running list. */
static inline int32_t held_count(const env_t *e) {
  kvsim_request_t *const *h;
  return e->s->ops->held ? e->s->ops->held(e->s, &h) : 0;
}

#endif
