/* vllm-v1: the vLLM V1 scheduler (vllm/v1/core/sched/scheduler.py,
 * Scheduler.schedule; VLLM.md 2.1). One token budget per step, running
 * requests first, chunked prefill, preemption by recompute of the last
 * running request (or the lowest priority, latest arrival), and admission
 * of waiting requests only in steps without preemption, stopping at the
 * first that does not fit. */
#include <string.h>

#include "kvsim/sched.h"

/* The victim: FCFS pops the newest running request; PRIORITY takes
 * max(running, key=(priority, arrival_time)) (#19057). */
static int32_t pick_victim(const kvsim_sched_t *s) {
  if (s->cfg.policy != KVSIM_POLICY_PRIORITY)
    return s->running.n - 1;
  int32_t best = 0;
  for (int32_t i = 1; i < s->running.n; i++) {
    const kvsim_request_t *a = s->running.v[i], *b = s->running.v[best];
    if (a->spec.priority > b->spec.priority ||
        (a->spec.priority == b->spec.priority &&
         (a->arrival > b->arrival || (a->arrival == b->arrival && a->spec.id > b->spec.id))))
      best = i;
  }
  return best;
}

static void remove_at(kvsim_reqvec_t *a, int32_t i) {
  memmove(&a->v[i], &a->v[i + 1], (size_t)(a->n - i - 1) * sizeof *a->v);
  a->n--;
}

/* Takes a request out of this step's scheduled list, returning its budget. */
static int64_t unschedule(kvsim_step_t *step, kvsim_request_t *r) {
  for (int32_t i = 0; i < step->reqs.n; i++)
    if (step->reqs.v[i] == r) {
      int64_t n = r->step_new;
      r->step_new = 0;
      remove_at(&step->reqs, i);
      step->num_tokens -= n;
      return n;
    }
  return 0;
}

static void schedule(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step) {
  int64_t budget = s->cfg.max_num_batched_tokens;
  bool preempted = false;
  /* Locals: the loop below runs for every running request every step, and
   * the compiler cannot keep these in registers across its stores. */
  const int64_t last_pos = s->cfg.max_model_len - 1;
  const int64_t threshold = s->cfg.long_prefill_token_threshold;
  kvsim_kvcache_t *kv = s->kv;

  /* Running requests first, in order. */
  for (int32_t i = 0; i < s->running.n && budget > 0;) {
    kvsim_request_t *r = s->running.v[i];
    int64_t n = r->num_tokens - r->num_computed;
    if (threshold > 0 && n > threshold)
      n = threshold;
    if (n > budget)
      n = budget;
    if (n > last_pos - r->num_computed)
      n = last_pos - r->num_computed;
    if (n <= 0) {
      i++;
      continue;
    }
    bool self_preempted = false;
    while (!kvsim_kvcache_allocate_running(kv, r, n)) {
      int32_t v = pick_victim(s);
      kvsim_request_t *victim = s->running.v[v];
      remove_at(&s->running, v);
      budget += unschedule(step, victim);
      kvsim_sched_preempt(s, victim);
      step->num_preempted++;
      preempted = true;
      if (victim == r) {
        self_preempted = true;
        break;
      }
      if (v < i)
        i--; /* a victim ahead of r shifts it left (priority policy) */
    }
    if (self_preempted)
      break;
    r->step_new = (int32_t)n;
    kvsim_reqvec_push(&step->reqs, r);
    step->num_tokens += n;
    budget -= n;
    i++;
  }

  /* Waiting requests, only if nothing was preempted in this step. */
  if (preempted)
    return;
  while (s->waiting.n && budget > 0 && s->running.n < s->cfg.max_num_seqs) {
    kvsim_request_t *r = kvsim_waitq_peek(&s->waiting);
    int64_t hit = 0;
    if (r->num_computed == 0)
      hit = kvsim_kvcache_lookup(s->kv, r, r->num_preemptions > 0);
    int64_t n = r->num_tokens - r->num_computed - hit;
    if (s->cfg.long_prefill_token_threshold > 0 && n > s->cfg.long_prefill_token_threshold)
      n = s->cfg.long_prefill_token_threshold;
    if (!s->cfg.enable_chunked_prefill && n > budget)
      break;
    if (n > budget)
      n = budget;
    if (!kvsim_kvcache_allocate(s->kv, r, hit, n, 0))
      break; /* head-of-line: stop at the first that does not fit */
    kvsim_waitq_pop(&s->waiting);
    /* CPU hits are loaded back before the request's tokens are computed. */
    if (s->kv->last_loaded)
      step->extra_ns += kvsim_cpu_tier_transfer_ns(s->cpu, s->kv->last_loaded);
    r->num_computed += hit;
    if (r->first_scheduled == KVSIM_TIME_NEVER) {
      r->first_scheduled = now;
      r->num_cached_tokens = hit;
    }
    r->status = KVSIM_REQ_RUNNING;
    kvsim_reqvec_push(&s->running, r);
    r->step_new = (int32_t)n;
    kvsim_reqvec_push(&step->reqs, r);
    step->num_tokens += n;
    budget -= n;
  }
}

static void add(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now) {
  (void)now;
  kvsim_waitq_push_back(&s->waiting, r);
}

const kvsim_sched_ops_t kvsim__sched_vllm_v1 = {
    .name = "vllm-v1",
    .help = "vLLM V1: token budget, chunked prefill, recompute preemption, prefix caching",
    .size = sizeof(kvsim_sched_t),
    .add = add,
    .schedule = schedule,
    .update = kvsim_sched_update_tokens,
};
