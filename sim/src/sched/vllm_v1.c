/* vllm-v1: the vLLM V1 scheduler (vllm/v1/core/sched/scheduler.py,
 * Scheduler.schedule and _preempt_request). One token budget per step,
 * running requests first, chunked prefill, preemption by recompute of the last
 * running request (or the lowest priority, latest arrival), and admission
 * of waiting requests only in steps without preemption, stopping at the
 * first that does not fit. */
#include <assert.h>
#include <cJSON.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/params.h"
#include "kvsim/sched.h"
#include "sched/opts_print.h"
#include "sched/v1_implicit.h"

/* The profile's scheduler: the common state and its implicit decode. */
typedef struct v1 {
  kvsim_sched_t base;
  kvsim__imp_t imp;
} v1_t;

/* vllm-v1's own options (EngineArgs of the V1 scheduler). */
typedef struct v1_opts {
  int64_t long_prefill_token_threshold; /* 0 = off */
} v1_opts_t;
_Static_assert(sizeof(v1_opts_t) <= KVSIM_SCHED_OPTS_BYTES, "vllm-v1 options fit the buffer");

static const char *const option_keys[] = {"long_prefill_token_threshold", NULL};

static int parse_opts(const cJSON *engine, const char *w, kvsim_sched_opts_t *opts, kvsim_err *err) {
  v1_opts_t *o = (v1_opts_t *)opts->bytes;
  int64_t thr = 0;
  int rc = kvsim__json_int_min(engine, "long_prefill_token_threshold", 0, KVSIM__JSON_INT_MAX, NULL,
                               &thr, w, err);
  if (rc < 0)
    return rc;
  o->long_prefill_token_threshold = thr;
  return KVSIM_OK;
}

static int print_opts(const kvsim_sched_opts_t *opts, const kvsim_plan_params_t *p, cJSON *engine) {
  (void)p;
  const v1_opts_t *o = (const v1_opts_t *)opts->bytes;
  kvsim__optout_t out = kvsim__optout(option_keys, opts, engine);
  kvsim__optout_num(&out, "long_prefill_token_threshold", (double)o->long_prefill_token_threshold);
  return out.rc;
}

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
      step->sums.on = false; /* a row left the step: the engine walks them */
      return n;
    }
  return 0;
}

/* The tokens a running row computes this step: what it has left (with
 * its drafts), cut at the long-prefill threshold, the step's budget and
 * the model's last position (vLLM's Scheduler.schedule, running loop). */
static inline int64_t row_tokens(const kvsim_request_t *r, int64_t threshold, int64_t budget, int64_t last_pos) {
  int64_t n = r->num_tokens + r->num_spec - r->num_computed;
  if (threshold > 0 && n > threshold)
    n = threshold;
  if (n > budget)
    n = budget;
  if (n > last_pos - r->num_computed)
    n = last_pos - r->num_computed;
  return n;
}

/* Running requests first, in order, each its remaining tokens (and its
 * drafts) within the budget; a request that does not fit preempts the
 * victim until it does or is the victim itself. Sets *preempted. */
static int schedule_running(kvsim_sched_t *s, kvsim_step_t *step, int64_t *budget_io, bool *preempted) {
  int64_t budget = *budget_io;
  /* Locals: the loop below runs for every running request every step, and
   * the compiler cannot keep these in registers across its stores. */
  const int64_t last_pos = s->cfg.max_model_len - 1;
  const int64_t threshold = ((const v1_opts_t *)kvsim_sched_opts(s))->long_prefill_token_threshold;
  kvsim_kvcache_t *kv = s->kv;
  int rc;
  /* Every running request may join the step: room for them up front. */
  if (kvsim_reqvec_reserve(&step->reqs, s->running.n) < 0)
    return KVSIM_ENOMEM;

  /* The step's list and token count live in locals (stores through `step`
   * would make the compiler reload everything each iteration), written
   * back before anything else reads them: a preemption (unschedule), an
   * error (the caller discards the partial step), the loop's end. */
  kvsim_request_t **out = step->reqs.v; /* room reserved above; never moves below */
  int64_t nout = step->reqs.n, ntok = step->num_tokens;
  /* Speculative decoding: a running request computes its drafts with its
   * last token (num_tokens_with_spec - num_computed_tokens), and EAGLE /
   * MTP / draft models have the next step's drafts written past them:
   * allocate_slots(num_lookahead_tokens=self.num_lookahead_tokens). A
   * budget cut drops the drafts past it. */
  const int64_t lookahead = s->cfg.num_lookahead_tokens;
  /* Every speculative step goes through allocate_slots, which also caches
   * the blocks accepted drafts filled (ngram has no lookahead). */
  const bool spec = s->cfg.num_spec_tokens > 0;
  /* The step's shape (kvsim_step_sums_t) as the rows are scheduled: decode
   * rows, nearly all of them, as two running sums in locals, the others
   * one by one. A row ends at most at last_pos (n is cut there), which
   * stands for their largest context + 1: an upper bound only sends the
   * engine's exactness check to the double sums sooner, whose result is
   * the same while that check holds. */
  const bool dec_fast = step->sums.window <= 0 && last_pos <= INT32_MAX;
  int64_t dec_rows = 0, dec_ctx = 0;
  for (int32_t i = 0; i < s->running.n && budget > 0;) {
    kvsim_request_t *r = s->running.v[i];
    int64_t n = row_tokens(r, threshold, budget, last_pos);
    if (n <= 0) {
      i++;
      continue;
    }
    bool self_preempted = false;
    while ((rc = spec ? kvsim_kvcache_allocate(kv, r, 0, n, lookahead)
                           : kvsim_kvcache_allocate_running(kv, r, n)) <= 0) {
      step->reqs.n = nout;
      step->num_tokens = ntok;
      if (rc < 0)
        return rc;
      int32_t v = pick_victim(s);
      kvsim_request_t *victim = s->running.v[v];
      if ((rc = kvsim_sched_preempt(s, victim)) < 0)
        return rc;
      remove_at(&s->running, v);
      budget += unschedule(step, victim);
      nout = step->reqs.n;
      ntok = step->num_tokens;
      step->num_preempted++;
      *preempted = true;
      if (victim == r) {
        self_preempted = true;
        break;
      }
      if (v < i)
        i--; /* a victim ahead of r shifts it left (priority policy) */
    }
    if (self_preempted)
      break;
    const int64_t c = r->num_computed;
    if (n == 1 && c > 0 && dec_fast) {
      dec_rows++;
      dec_ctx += c;
    } else {
      kvsim_step_sums_row(&step->sums, c, n);
    }
    r->step_new = (int32_t)n;
    out[nout++] = r;
    ntok += n;
    budget -= n;
    i++;
  }
  step->reqs.n = nout;
  step->num_tokens = ntok;
  kvsim_step_sums_decode(&step->sums, dec_rows, dec_ctx, last_pos - 1);
  *budget_io = budget;
  return KVSIM_OK;
}

/* The distinct adapters of the step's requests so far (scheduled_loras
 * in Scheduler.schedule: those of the scheduled running requests, then
 * each admitted waiting request's), at most max_loras of them. */
typedef struct lora_set {
  int32_t n, id[KVSIM_MAX_LORAS];
} lora_set_t;

static bool lora_set_has(const lora_set_t *ls, int32_t id) {
  for (int32_t i = 0; i < ls->n; i++)
    if (ls->id[i] == id)
      return true;
  return false;
}

static void lora_set_add(lora_set_t *ls, int32_t id) {
  if (id > 0 && !lora_set_has(ls, id) && ls->n < KVSIM_MAX_LORAS)
    ls->id[ls->n++] = id;
}

/* Puts the requests skipped for max_loras back at the queue's front in
 * their order (skipped_waiting_requests.prepend_request, then
 * self.waiting.prepend_requests(skipped_waiting_requests)). They were
 * popped, so the queue has room for them. */
static void unskip(kvsim_sched_t *s) {
  for (int64_t i = s->lora_skipped.n - 1; i >= 0; i--) {
    int rc = kvsim_waitq_push_front(&s->waiting, s->lora_skipped.v[i]);
    assert(rc == KVSIM_OK);
    (void)rc;
  }
  s->lora_skipped.n = 0;
}

/* Waiting requests in queue order while the budget and max_num_seqs
 * allow, each with its prefix hit; the first that does not fit stops the
 * queue (head-of-line). With LoRA, a request whose adapter would be one
 * more than max_loras in the step is skipped, not a stop (scheduler.py
 * Scheduler.schedule: "Check that adding the request still respects the
 * max_loras constraint", len(scheduled_loras) == max_loras and
 * lora_int_id not in scheduled_loras -> skip). */
static int schedule_waiting(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step, int64_t budget,
                            lora_set_t *ls, kvsim__imp_t *m /* a fast step's, or NULL */) {
  const int64_t threshold = ((const v1_opts_t *)kvsim_sched_opts(s))->long_prefill_token_threshold;
  const int32_t max_loras = s->cfg.max_loras;
  int rc;
  while (s->waiting.n && budget > 0 && s->running.n < s->cfg.max_num_seqs) {
    kvsim_request_t *r = kvsim_waitq_peek(&s->waiting);
    if (max_loras > 0 && r->spec.lora > 0 && ls->n >= max_loras && !lora_set_has(ls, r->spec.lora)) {
      if (kvsim_reqvec_push(&s->lora_skipped, r) < 0)
        return KVSIM_ENOMEM;
      kvsim_waitq_pop(&s->waiting);
      s->lora_skips++;
      continue;
    }
    /* Reserve first, then commit: r moves to running and the step only
     * once nothing can fail. */
    if (kvsim_reqvec_reserve(&s->running, s->running.n + 1) < 0 ||
        kvsim_reqvec_reserve(&step->reqs, step->reqs.n + 1) < 0 || (m && kvsim__imp_reserve(m, 1) < 0))
      return KVSIM_ENOMEM;
    int64_t hit = 0;
    if (r->num_computed == 0 && (hit = kvsim_kvcache_lookup(s->kv, r, r->num_preemptions > 0)) < 0)
      return (int)hit;
    int64_t n = r->num_tokens - r->num_computed - hit;
    if (threshold > 0 && n > threshold)
      n = threshold;
    if (!s->cfg.enable_chunked_prefill && n > budget)
      break;
    if (n > budget)
      n = budget;
    /* effective_lookahead_tokens is 0 for a request with nothing
     * computed: its drafts come after its prefill. */
    if ((rc = kvsim_kvcache_allocate(s->kv, r, hit, n, 0)) < 0)
      return rc;
    if (!rc)
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
    lora_set_add(ls, r->spec.lora);
    s->running.v[s->running.n++] = r;
    if (m)
      kvsim__imp_admitted(m, r);
    r->step_new = (int32_t)n;
    kvsim_step_sums_row(&step->sums, r->num_computed, n);
    step->reqs.v[step->reqs.n++] = r;
    step->num_tokens += n;
    budget -= n;
  }
  return KVSIM_OK;
}

/* A fast step (v1_implicit.h): the rows outside the cohort in running
 * order, as schedule_running would schedule them (the budget holds them
 * all and the pool their blocks, so none is cut and none preempts), and
 * the cohort's rows as its sums. */
static int schedule_fast(kvsim_sched_t *s, kvsim_step_t *step, int64_t *budget_io) {
  kvsim__imp_t *m = &((v1_t *)s)->imp;
  const int64_t last_pos = s->cfg.max_model_len - 1;
  const int64_t threshold = ((const v1_opts_t *)kvsim_sched_opts(s))->long_prefill_token_threshold;
  kvsim_kvcache_t *kv = s->kv;
  int64_t budget = *budget_io;
  /* Decode rows among them join the cohort's sums (kvsim__imp_allowed:
   * no window, rows below INT32_MAX tokens). */
  int64_t dec_rows = 0, dec_ctx = 0;
  if (kvsim_reqvec_reserve(&step->reqs, m->ex.n) < 0)
    return KVSIM_ENOMEM;
  for (int32_t i = 0; i < m->ex.n; i++) {
    kvsim_request_t *r = m->ex.v[i];
    int64_t n = row_tokens(r, threshold, budget, last_pos);
    if (n <= 0)
      continue;
    int rc = kvsim_kvcache_allocate_running(kv, r, n);
    if (rc <= 0) {
      assert(rc < 0); /* kvsim__imp_begin counted the free blocks */
      return rc < 0 ? rc : KVSIM_EINVAL;
    }
    const int64_t c = r->num_computed;
    if (n == 1 && c > 0) {
      dec_rows++;
      dec_ctx += c;
    } else {
      kvsim_step_sums_row(&step->sums, c, n);
    }
    r->step_new = (int32_t)n;
    step->reqs.v[step->reqs.n++] = r;
    step->num_tokens += n;
    budget -= n;
  }
  kvsim_step_sums_decode(&step->sums, m->n + dec_rows, m->ctx + dec_ctx, last_pos - 1);
  step->implicit_rows = (int32_t)m->n;
  step->num_tokens += m->n;
  *budget_io = budget - m->n;
  return KVSIM_OK;
}

static int schedule(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step) {
  kvsim__imp_t *m = &((v1_t *)s)->imp;
  int64_t budget = s->cfg.max_num_batched_tokens;
  bool preempted = false;
  kvsim_step_sums_begin(&step->sums);
  step->implicit_rows = 0;
  const int64_t threshold = ((const v1_opts_t *)kvsim_sched_opts(s))->long_prefill_token_threshold;
  const bool fast = kvsim__imp_begin(m, s, budget, threshold);
  int rc = fast ? schedule_fast(s, step, &budget) : schedule_running(s, step, &budget, &preempted);
  /* Waiting requests, only if nothing was preempted in this step. */
  if (rc >= 0 && !preempted) {
    lora_set_t ls;
    ls.n = 0;
    if (s->cfg.max_loras > 0)
      for (int32_t i = 0; i < step->reqs.n; i++)
        lora_set_add(&ls, step->reqs.v[i]->spec.lora);
    rc = schedule_waiting(s, now, step, budget, &ls, fast ? m : NULL);
    unskip(s);
  }
  if (rc >= 0)
    kvsim_sched_lora_load(s, step);
  m->in_flight = rc >= 0 && fast;
  return rc;
}

static int update(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step, kvsim_reqvec_t *finished) {
  kvsim__imp_t *m = &((v1_t *)s)->imp;
  const bool fast = m->in_flight;
  int rc = kvsim_sched_update_tokens(s, now, step, finished);
  if (rc < 0)
    return rc;
  m->in_flight = false;
  kvsim__imp_after_update(m, s, fast, step->sums.window);
  return KVSIM_OK;
}

static int init(kvsim_sched_t *s, kvsim_err *err) {
  return kvsim__imp_init(&((v1_t *)s)->imp, s->kv, err);
}

static void fini(kvsim_sched_t *s) { kvsim__imp_fini(&((v1_t *)s)->imp); }

static void sync(kvsim_sched_t *s) { kvsim__imp_sync(&((v1_t *)s)->imp, s); }

static bool implicit_sums(const kvsim_sched_t *s, kvsim_sched_isums_t *out) {
  return kvsim__imp_sums(&((const v1_t *)s)->imp, s, out);
}

static int add(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now) {
  (void)now;
  return kvsim_waitq_push_back(&s->waiting, r);
}

const kvsim_sched_ops_t kvsim__sched_vllm_v1 = {
    .name = "vllm-v1",
    .help = "vLLM V1: token budget, chunked prefill, recompute preemption, prefix caching",
    .size = sizeof(v1_t),
    /* V1 caches prefixes by default and its offloading connector loads
     * asynchronously (vllm/config/cache.py enable_prefix_caching; the
     * OffloadingConnector); it has no swap space (recompute only). */
    .plan_engine = KVSIM_PLAN_V1,
    .defaults = {.enable_prefix_caching = true, .transfer_overlap = true,
                 .offload_connector = true, .recompute_only = true,
                 /* NixlConnector (vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py) */
                 .kv_connector = true,
                 /* Scheduler.schedule's max_loras check, the worker's LRU caches */
                 .lora_adapters = true},
    .option_keys = option_keys,
    .parse_opts = parse_opts,
    .print_opts = print_opts,
    .init = init,
    .fini = fini,
    .add = add,
    .schedule = schedule,
    .update = update,
    .sync = sync,
    .implicit_sums = implicit_sums,
};
