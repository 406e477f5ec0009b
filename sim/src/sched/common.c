/* What every engine profile shares: creation, token accounting after a
 * step, recompute preemption. */
#include <assert.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "core/alloc.h"
#include "kvsim/sched.h"

int kvsim_sched_new(const kvsim_sched_ops_t *ops, const kvsim_sched_cfg_t *cfg,
                    kvsim_kvcache_t *kv, kvsim_sched_t **out, kvsim_err *err) {
  assert(ops->size >= sizeof(kvsim_sched_t));
  kvsim_sched_t *s = kvsim__calloc(1, ops->size);
  if (!s)
    return kvsim_err_set(err, KVSIM_ENOMEM, "scheduler: out of memory");
  s->ops = ops;
  s->cfg = *cfg;
  s->kv = kv;
  s->waiting.heap = cfg->policy == KVSIM_POLICY_PRIORITY;
  int rc = ops->init ? ops->init(s, err) : KVSIM_OK;
  if (rc < 0) {
    kvsim__free(s);
    return rc;
  }
  *out = s;
  return KVSIM_OK;
}

void kvsim_sched_free(kvsim_sched_t *s) {
  if (!s)
    return;
  if (s->ops->fini)
    s->ops->fini(s);
  kvsim_waitq_fini(&s->waiting);
  kvsim_reqvec_fini(&s->running);
  kvsim_reqvec_fini(&s->lora_skipped);
  kvsim__free(s);
}

bool kvsim_sched_emit_token(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now) {
  r->num_output++;
  r->num_tokens++;
  s->generation_tokens_total++;
  r->last_token = now;
  if (r->first_token == KVSIM_TIME_NEVER)
    r->first_token = now;
  if (r->num_output < r->spec.output_tokens)
    return false;
  r->status = KVSIM_REQ_FINISHED;
  r->finish = now;
  return true;
}

/* A step that verified `drafts` drafts of r: the target computed r's last
 * sampled token and the drafts, accepted a of them and sampled one token
 * more. The rejected drafts' slots are given back to the computed count
 * (scheduler.py update_from_output: num_computed_tokens -= num_rejected).
 * Returns true when r finished among the a + 1 tokens. */
static bool verify_drafts(kvsim_sched_t *s, kvsim_request_t *r, int drafts, kvsim_time_ns now) {
  const int a = kvsim_spec_accepted(&s->cfg.accept, drafts, gsl_rng_uniform((gsl_rng *)s->spec_rng));
  s->spec_drafts_total += drafts;
  s->spec_accepted_total += a;
  r->num_computed = r->num_tokens + a;
  r->step_new = 0;
  for (int j = 0; j <= a; j++)
    if (kvsim_sched_emit_token(s, r, now))
      return true;
  return false;
}

/* kvsim_sched_update_tokens with speculative decoding: a request
 * scheduled past its known tokens verified drafts (verify_drafts). */
static int update_tokens_spec(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step, kvsim_reqvec_t *finished) {
  /* Room for every request of the step first: nothing below can fail. */
  if (kvsim_reqvec_reserve(finished, finished->n + step->reqs.n) < 0)
    return KVSIM_ENOMEM;
  bool any_done = false;
  for (int32_t i = 0; i < step->reqs.n; i++) {
    kvsim_request_t *r = step->reqs.v[i];
    if (r->num_computed < r->num_prompt) {
      int64_t prompt_left = r->num_prompt - r->num_computed;
      s->prompt_tokens_total += r->step_new < prompt_left ? r->step_new : prompt_left;
    }
    /* Drafts verified this step: what was scheduled past the request's
     * known tokens. */
    int64_t drafts = s->cfg.num_spec_tokens > 0 ? r->num_computed + r->step_new - r->num_tokens : 0;
    r->num_spec = 0;
    if (drafts > 0) {
      if (verify_drafts(s, r, (int)drafts, now)) {
        if (!r->hold_kv)
          kvsim_kvcache_free(s->kv, r);
        finished->v[finished->n++] = r;
        any_done = true;
      } else {
        r->num_spec = s->cfg.num_spec_tokens;
      }
      continue;
    }
    r->num_computed += r->step_new;
    r->step_new = 0;
    if (r->num_computed < r->num_tokens)
      continue; /* a prefill chunk: nothing sampled yet */
    /* The drafter proposes for every request that sampled (its first
     * drafts come right after the prefill: EagleProposer.propose runs on
     * the step's sampled tokens). */
    r->num_spec = s->cfg.num_spec_tokens;
    if (kvsim_sched_emit_token(s, r, now)) {
      r->num_spec = 0;
      if (!r->hold_kv)
        kvsim_kvcache_free(s->kv, r);
      finished->v[finished->n++] = r;
      any_done = true;
    }
  }
  if (!any_done)
    return KVSIM_OK;
  /* Drop finished requests from the running list, keeping its order. */
  int32_t w = 0;
  for (int32_t i = 0; i < s->running.n; i++)
    if (s->running.v[i]->status != KVSIM_REQ_FINISHED)
      s->running.v[w++] = s->running.v[i];
  s->running.n = w;
  return KVSIM_OK;
}

int kvsim_sched_update_tokens(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step,
                              kvsim_reqvec_t *finished) {
  if (s->cfg.num_spec_tokens > 0)
    return update_tokens_spec(s, now, step, finished);
  /* Room for every request of the step first: nothing below can fail. */
  if (kvsim_reqvec_reserve(finished, finished->n + step->reqs.n) < 0)
    return KVSIM_ENOMEM;
  bool any_done = false;
  /* Counters in locals, written back after the loop: stores through r
   * would otherwise make the compiler reload them for every request (the
   * loop runs for every request of every step). The token itself is
   * kvsim_sched_emit_token's, inlined. */
  int64_t prompt_total = s->prompt_tokens_total, gen_total = s->generation_tokens_total;
  kvsim_request_t *const *v = step->reqs.v;
  kvsim_request_t **fin = finished->v; /* room reserved above */
  int64_t nfin = finished->n;
  const int32_t nreq = step->reqs.n;
  for (int32_t i = 0; i < nreq; i++) {
    kvsim_request_t *r = v[i];
    int64_t computed = r->num_computed;
    const int64_t step_new = r->step_new;
    if (computed < r->num_prompt) {
      int64_t prompt_left = r->num_prompt - computed;
      prompt_total += step_new < prompt_left ? step_new : prompt_left;
    }
    computed += step_new;
    r->num_computed = computed;
    r->step_new = 0;
    if (computed < r->num_tokens)
      continue; /* a prefill chunk: nothing sampled yet */
    r->num_output++;
    r->num_tokens++;
    gen_total++;
    r->last_token = now;
    if (r->first_token == KVSIM_TIME_NEVER)
      r->first_token = now;
    if (r->num_output < r->spec.output_tokens)
      continue;
    r->status = KVSIM_REQ_FINISHED;
    r->finish = now;
    /* A disaggregated prefill keeps its blocks for the hand-off (hold_kv). */
    if (!r->hold_kv)
      kvsim_kvcache_free(s->kv, r);
    fin[nfin++] = r;
    any_done = true;
  }
  s->prompt_tokens_total = prompt_total;
  s->generation_tokens_total = gen_total;
  finished->n = nfin;
  if (!any_done)
    return KVSIM_OK;
  /* Drop finished requests from the running list, keeping its order. */
  int32_t w = 0;
  for (int32_t i = 0; i < s->running.n; i++)
    if (s->running.v[i]->status != KVSIM_REQ_FINISHED)
      s->running.v[w++] = s->running.v[i];
  s->running.n = w;
  return KVSIM_OK;
}

void kvsim_sched_lora_load(kvsim_sched_t *s, kvsim_step_t *step) {
  if (!s->lora)
    return;
  /* vllm/v1/worker/lora_model_runner_mixin.py
   * LoRAModelRunnerMixin.set_active_loras -> _set_active_loras ->
   * set_active_adapters, whose vllm/lora/worker_manager.py
   * LRUCacheWorkerLoRAManager._apply_adapters calls add_adapter for each
   * adapter of the batch (a set: a second request of the same adapter
   * is a hit and costs nothing). */
  for (int32_t i = 0; i < step->reqs.n; i++) {
    const int32_t id = step->reqs.v[i]->spec.lora;
    if (id <= 0)
      continue;
    kvsim_time_ns ns = 0;
    kvsim_lora_cache_use(s->lora, id, &ns);
    step->lora_ns += ns;
  }
}

int kvsim_sched_preempt(kvsim_sched_t *s, kvsim_request_t *r) {
  int rc;
  if ((rc = kvsim_waitq_reserve(&s->waiting, (int64_t)s->waiting.n + 1)) < 0 ||
      (rc = kvsim_kvcache_free_preempted(s->kv, r)) < 0)
    return rc;
  r->status = KVSIM_REQ_WAITING;
  r->num_computed = 0;
  r->num_spec = 0; /* _preempt_request: request.spec_token_ids.clear() */
  r->num_preemptions++;
  s->num_preemptions++;
  rc = kvsim_waitq_push_front(&s->waiting, r);
  assert(rc == KVSIM_OK); /* room reserved above */
  return rc;
}
