/* sglang: the SGLang scheduler (python/sglang/srt/managers/scheduler.py
 * Scheduler.get_next_batch_to_run, get_new_batch_prefill,
 * update_running_batch; managers/schedule_policy.py SchedulePolicy and
 * PrefillAdder; managers/schedule_batch.py ScheduleBatch.retract_decode).
 *
 * A step is a prefill batch when one can be formed, else a decode batch
 * of every running request (no mixed chunks, --enable-mixed-chunk off).
 * Prefill admission walks the waiting queue in the policy's order and
 * stops at the first request whose extend tokens + min(max_new_tokens,
 * 4096) + page_size exceed the pool's free + evictable tokens less the
 * running requests' reservation, sum of min(left, 4096) x new_token_ratio;
 * one request at a time is chunked. A decode batch that does not find a
 * page for each request retracts requests (fewest outputs first, then the
 * longest input) back to the waiting queue and resets the ratio from what
 * the rest has decoded; otherwise the ratio decays one step.
 *
 * The radix cache is the KV manager's prefix cache at page granularity:
 * with page_size 1 every token is matched (match_prefix), pages in use are
 * referenced (inc_lock_ref), unreferenced cached pages are evicted in LRU
 * order, leaves first, and count as free in token_usage
 * (_get_token_info). max_new_tokens is the request's output length (the
 * benchmark's ignore_eos). */
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/params_json.h"
#include "core/util.h"
#include "kvsim/params.h"
#include "kvsim/sched.h"
#include "sched/opts_print.h"
#include "sched/sglang.h"

static const char *const option_keys[] = {
    "mem_fraction_static", "page_size", "max_total_tokens", "max_running_requests",
    "chunked_prefill_size", "max_prefill_tokens", "schedule_policy", "schedule_conservativeness",
    "gpu_memory_capacity_mib", "speculative_num_steps", "speculative_eagle_topk",
    "speculative_num_draft_tokens", "scheduler_recv_interval", NULL};
static const char *const policy_names[] = {"fcfs", "lpm", "lof", "random"};

/* python/sglang/srt/environ.py (earlier global_config.py):
 * SGLANG_INIT_NEW_TOKEN_RATIO 0.7, SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR 0.14,
 * SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS 600, SGLANG_RETRACT_DECODE_STEPS 20,
 * SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION 4096. */
#define INIT_RATIO 0.7
#define MIN_RATIO_FACTOR 0.14
#define DECAY_STEPS 600
#define RETRACT_DECODE_STEPS 20
#define CLIP_MAX_NEW 4096

static int parse_opts(const cJSON *e, const char *w, kvsim_sched_opts_t *opts, kvsim_err *err) {
  sgl_opts_t *o = (sgl_opts_t *)opts->bytes;
  *o = (sgl_opts_t){.schedule_conservativeness = 1.0};
  int64_t page = 0;
  int rc, chunk_given = 0;
  /* The registry's range of the capacity (kvsim/params.h). */
  const kvsim_param_t *cap = kvsim_param_get(KVSIM_PARAM_GPU_MEMORY_CAPACITY_MIB);
  if ((rc = kvsim__json_num_in(e, "mem_fraction_static", 1e-9, 1 - 1e-9, &o->mem_fraction_static, w,
                               err)) < 0 ||
      (rc = kvsim__json_num_in(e, "schedule_conservativeness", 1e-3, 1e3,
                               &o->schedule_conservativeness, w, err)) < 0 ||
      (rc = kvsim__json_num_in(e, "gpu_memory_capacity_mib", cap->min, cap->max,
                               &o->gpu_memory_capacity_mib, w, err)) < 0 ||
      /* The registry's ranges (kvsim/params.h). */
      (rc = kvsim__json_param_int(e, KVSIM_PARAM_PAGE_SIZE, &page, w, err)) < 0 ||
      (rc = kvsim__json_param_int(e, KVSIM_PARAM_MAX_TOTAL_TOKENS, &o->max_total_tokens, w, err)) <
          0 ||
      (rc = kvsim__json_param_int(e, KVSIM_PARAM_MAX_RUNNING_REQUESTS, &o->max_running_requests, w,
                                  err)) < 0 ||
      (rc = chunk_given = kvsim__json_param_int(e, KVSIM_PARAM_CHUNKED_PREFILL_SIZE,
                                                &o->chunked_prefill_size, w, err)) < 0 ||
      (rc = kvsim__json_param_int(e, KVSIM_PARAM_MAX_PREFILL_TOKENS, &o->max_prefill_tokens, w,
                                  err)) < 0 ||
      (rc = kvsim__json_param_int(e, KVSIM_PARAM_SCHEDULER_RECV_INTERVAL, &o->scheduler_recv_interval, w,
                                  err)) < 0)
    return rc;
  int64_t tree[3] = {0, 0, 0};
  if ((rc = kvsim__json_param_int(e, KVSIM_PARAM_SPECULATIVE_NUM_STEPS, &tree[0], w, err)) < 0 ||
      (rc = kvsim__json_param_int(e, KVSIM_PARAM_SPECULATIVE_EAGLE_TOPK, &tree[1], w, err)) < 0 ||
      (rc = kvsim__json_param_int(e, KVSIM_PARAM_SPECULATIVE_NUM_DRAFT_TOKENS, &tree[2], w, err)) < 0)
    return rc;
  o->spec_num_steps = (int32_t)tree[0];
  o->spec_eagle_topk = (int32_t)tree[1];
  o->spec_num_draft_tokens = (int32_t)tree[2];
  /* A null is the key left out: 0, the server's default size. */
  if (o->chunked_prefill_size == 0 && chunk_given > 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.chunked_prefill_size: 0 (use -1 to disable chunking)", w);
  o->page_size = (int32_t)page;
  char name[16] = "fcfs";
  if ((rc = kvsim__json_str(e, "schedule_policy", name, sizeof name, w, err)) < 0)
    return rc;
  for (o->policy = 0; o->policy < 4 && strcmp(name, policy_names[o->policy]); o->policy++)
    ;
  if (o->policy == 4)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.schedule_policy: unknown policy '%s' (expected fcfs, lpm, lof, random)",
                         w, name);
  return KVSIM_OK;
}

/* The options in option_keys' order; the memory share from the plan's
 * parameters (set_fraction). */
static int print_opts(const kvsim_sched_opts_t *opts, const kvsim_plan_params_t *p, cJSON *engine) {
  const sgl_opts_t *o = (const sgl_opts_t *)opts->bytes;
  kvsim__optout_t out = kvsim__optout(option_keys, opts, engine);
  kvsim__optout_num(&out, "mem_fraction_static", p->sglang.mem_fraction_static);
  kvsim__optout_num(&out, "page_size", o->page_size);
  kvsim__optout_num(&out, "max_total_tokens", (double)o->max_total_tokens);
  kvsim__optout_num(&out, "max_running_requests", (double)o->max_running_requests);
  kvsim__optout_num(&out, "chunked_prefill_size", (double)o->chunked_prefill_size);
  kvsim__optout_num(&out, "max_prefill_tokens", (double)o->max_prefill_tokens);
  kvsim__optout_str(&out, "schedule_policy", policy_names[o->policy]);
  kvsim__optout_num(&out, "schedule_conservativeness", o->schedule_conservativeness);
  kvsim__optout_num(&out, "gpu_memory_capacity_mib", o->gpu_memory_capacity_mib);
  kvsim__optout_num(&out, "speculative_num_steps", o->spec_num_steps);
  kvsim__optout_num(&out, "speculative_eagle_topk", o->spec_eagle_topk);
  kvsim__optout_num(&out, "speculative_num_draft_tokens", o->spec_num_draft_tokens);
  kvsim__optout_num(&out, "scheduler_recv_interval", (double)o->scheduler_recv_interval);
  return out.rc;
}

static void plan_params(const kvsim_sched_opts_t *opts, kvsim_plan_params_t *p) {
  const sgl_opts_t *o = (const sgl_opts_t *)opts->bytes;
  p->sglang.mem_fraction_static = o->mem_fraction_static;
  p->sglang.max_total_tokens = o->max_total_tokens;
  p->sglang.max_running_requests = o->max_running_requests;
  p->sglang.chunked_prefill_size = o->chunked_prefill_size;
  p->sglang.max_prefill_tokens = o->max_prefill_tokens;
  p->sglang.scheduler_recv_interval = o->scheduler_recv_interval;
  p->sglang.gpu_memory_capacity_mib = o->gpu_memory_capacity_mib;
  if (o->page_size > 0)
    p->block_size = o->page_size;
  /* The tree without engine.speculative is the plan's error to give. */
  p->spec.sgl_num_steps = o->spec_num_steps;
  p->spec.sgl_eagle_topk = o->spec_eagle_topk;
  p->spec.sgl_num_draft_tokens = o->spec_num_draft_tokens;
}

/* SGLang sizes its pool by mem_fraction_static (ServerArgs), never by
 * vLLM's gpu_memory_utilization. */
static const char *const ignored_keys[] = {"gpu_memory_utilization", NULL};

static void set_fraction(kvsim_plan_params_t *p, double f) { p->sglang.mem_fraction_static = f; }

static int init(kvsim_sched_t *s, kvsim_err *err) {
  sgl_t *v = (sgl_t *)s;
  if (s->cfg.policy == KVSIM_POLICY_PRIORITY)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "engine.scheduling_policy: sglang orders by engine.schedule_policy");
  /* NewTokenRatioTracker.from_server_args. */
  double c = kvsim__sgl_opts(s)->schedule_conservativeness;
  v->ratio_init = INIT_RATIO * c < 1 ? INIT_RATIO * c : 1;
  v->ratio_min = v->ratio_init * MIN_RATIO_FACTOR < 1 ? v->ratio_init * MIN_RATIO_FACTOR : 1;
  v->ratio_decay = (v->ratio_init - v->ratio_min) / DECAY_STEPS;
  v->ratio = v->ratio_init;
  v->rng = 0x5eed5eed5eedULL;
  return KVSIM_OK;
}

static void fini(kvsim_sched_t *s) {
  sgl_t *v = (sgl_t *)s;
  kvsim_reqvec_fini(&v->order);
  kvsim_reqvec_fini(&v->inbox);
  kvsim__free(v->keys);
}

static int64_t clip_left(const kvsim_request_t *r) {
  int64_t left = r->spec.output_tokens - r->num_output;
  return left < CLIP_MAX_NEW ? left : CLIP_MAX_NEW;
}

static void add_to_step(kvsim_step_t *step, kvsim_request_t *r, int64_t n) {
  r->step_new = (int32_t)n;
  step->reqs.v[step->reqs.n++] = r; /* room reserved by the caller */
  step->num_tokens += n;
}

/* Takes r out of the waiting queue into running and the step. */
static void admit(kvsim_sched_t *s, kvsim_request_t *r, int64_t hit, int64_t n, kvsim_time_ns now,
                  kvsim_step_t *step, bool head) {
  if (head)
    kvsim_waitq_pop(&s->waiting);
  else
    kvsim_waitq_remove(&s->waiting, r);
  r->num_computed += hit;
  if (r->first_scheduled == KVSIM_TIME_NEVER) {
    r->first_scheduled = now;
    r->num_cached_tokens = hit;
  }
  r->status = KVSIM_REQ_RUNNING;
  s->running.v[s->running.n++] = r; /* room reserved by the caller */
  add_to_step(step, r, n);
}

/* Pool tokens a prefix hit would take off the free list: its cached pages
 * nobody references (PrefillAdder._lock_node makes them unevictable). */
static int64_t hit_unlocks(const kvsim_kvcache_t *kv) {
  int64_t n = 0;
  for (int32_t i = 0; i < kv->hit_blocks; i++)
    n += kvsim_pool_ref(&kv->pool, kv->hit_ids[i]) == 0;
  return n * kv->block_size;
}

/* PrefillAdder's budgets: rem_chunk_tokens, rem_input_tokens and
 * rem_total_tokens (available + evictable - the running reservation). */
typedef struct adder {
  int64_t rem_chunk, rem_input, rem_total, pool_tokens;
} adder_t;

static adder_t prefill_budget(const sgl_t *v) {
  const kvsim_sched_t *s = &v->s;
  const int64_t page = s->kv->block_size;
  adder_t a;
  a.rem_chunk = s->cfg.enable_chunked_prefill ? s->cfg.max_num_batched_tokens : INT64_MAX;
  a.rem_input = !s->cfg.enable_chunked_prefill ? s->cfg.max_num_batched_tokens
                : kvsim__sgl_opts(s)->max_prefill_tokens > 0 ? kvsim__sgl_opts(s)->max_prefill_tokens
                                                             : 16384;
  double reserve = 0;
  for (int32_t i = 0; i < s->running.n; i++)
    if (s->running.v[i] != v->chunked)
      reserve += (double)clip_left(s->running.v[i]) * v->ratio;
  a.rem_total = (int64_t)kvsim_pool_num_free(&s->kv->pool) * page - (int64_t)reserve;
  a.pool_tokens = (int64_t)kvsim_pool_usable(&s->kv->pool) * page;
  return a;
}

/* PrefillAdder.add_chunked_req: the chunked request's next chunk. 1 when
 * the step may go on to waiting requests, 0 when it may not, < 0 on error. */
static int add_chunked(sgl_t *v, kvsim_step_t *step, adder_t *a) {
  kvsim_kvcache_t *kv = v->s.kv;
  const int64_t page = kv->block_size;
  kvsim_request_t *r = v->chunked;
  int64_t left = r->num_tokens - r->num_computed, n = left < a->rem_chunk ? left : a->rem_chunk;
  if (n < left)
    n = n / page * page;
  int rc = kvsim_kvcache_allocate(kv, r, 0, n, 0);
  if (rc < 0)
    return rc;
  if (!rc || n <= 0)
    return 0; /* no room for its next chunk: decode frees some */
  add_to_step(step, r, n);
  a->rem_chunk -= n, a->rem_input -= n, a->rem_total -= n;
  if (n < left)
    return 0;
  v->chunked = NULL;
  a->rem_total -= clip_left(r);
  return 1;
}

/* get_new_batch_prefill: the chunked request's next chunk, then waiting
 * requests in policy order while PrefillAdder.add_one_req accepts them. */
static int prefill(sgl_t *v, kvsim_time_ns now, kvsim_step_t *step) {
  kvsim_sched_t *s = &v->s;
  kvsim_kvcache_t *kv = s->kv;
  const int64_t page = kv->block_size;
  adder_t a = prefill_budget(v);
  int rc;
  if (kvsim_reqvec_reserve(&step->reqs, s->running.n + s->waiting.n + 1) < 0 ||
      kvsim_reqvec_reserve(&s->running, s->running.n + s->waiting.n + 1) < 0)
    return KVSIM_ENOMEM;
  if (v->chunked && (rc = add_chunked(v, step, &a)) <= 0)
    return rc;
  int policy;
  if ((rc = kvsim__sgl_policy_order(v, &policy)) < 0)
    return rc;
  for (int32_t i = 0; s->waiting.n > 0; i++) {
    bool fcfs = policy == SGL_FCFS;
    if (!fcfs && i >= v->order.n)
      break;
    kvsim_request_t *r = fcfs ? kvsim_waitq_peek(&s->waiting) : v->order.v[i];
    if (s->running.n >= s->cfg.max_num_seqs || a.rem_chunk <= 0 || a.rem_input <= 0 || v->chunked)
      break;
    int64_t hit = kvsim_kvcache_lookup(kv, r, r->num_preemptions > 0);
    if (hit < 0)
      return (int)hit;
    int64_t extend = r->num_tokens - hit;
    /* total_tokens = extend + min(max_new, clip) + page_size against
     * rem_total_tokens, with the matched prefix locked. */
    int64_t est = clip_left(r);
    /* The scheduler clamps max_new_tokens so that a request fits
     * max_req_len = min(context_len, max_total_num_tokens) - 1
     * (Scheduler.handle_generate_request): alone in the pool it is
     * always admitted. */
    int64_t cap = a.pool_tokens - extend - page - 1;
    if (est > cap)
      est = cap > 0 ? cap : 0;
    if (extend + est + page >= a.rem_total - hit_unlocks(kv))
      break;
    /* Without chunking only the first request may pass max_prefill_tokens. */
    if (extend > a.rem_input && step->reqs.n > 0 && !s->cfg.enable_chunked_prefill)
      break;
    int64_t n = extend;
    if (extend > a.rem_chunk) { /* truncated to a page-aligned chunk, charged no output */
      n = a.rem_chunk / page * page;
      est = 0;
      if (n <= 0)
        break;
    }
    if ((rc = kvsim_kvcache_allocate(kv, r, hit, n, 0)) < 0)
      return rc;
    if (!rc)
      break;
    admit(s, r, hit, n, now, step, fcfs);
    if (n < extend)
      v->chunked = r;
    a.rem_total -= n + est, a.rem_input -= n, a.rem_chunk -= n;
  }
  return KVSIM_OK;
}

/* Pages r's next decode step needs beyond those it holds: one token, or
 * with EAGLE the slots a step may take, max(steps x topk, draft tokens)
 * (mem_cache/common.py get_alloc_len_per_decode, which
 * ScheduleBatch.check_decode_mem multiplies by the batch's requests): the
 * draft's steps x topk slots are taken and given back within the step
 * (EAGLEWorker.draft), the verify's num_draft_tokens kept for the
 * accepted ones. */
static int64_t decode_need(const kvsim_sched_t *s, const kvsim_request_t *r) {
  const int64_t slots = s->cfg.num_spec_tokens > 0 ? s->cfg.num_lookahead_tokens : 1;
  return kvsim_kvcache_blocks_for(s->kv, r->num_computed + slots) - r->blocks[0].len;
}

/* retract_decode: fewest outputs first (then the longest input) until
 * the rest finds its pages; the retracted go to the back of the queue
 * (_extend_requests_to_queue). Returns how many were retracted. */
static int retract(sgl_t *v, int64_t need, kvsim_step_t *step) {
  kvsim_sched_t *s = &v->s;
  int64_t free_blocks = kvsim_pool_num_free(&s->kv->pool);
  int n = 0;
  while (need > free_blocks) {
    int32_t best = -1;
    for (int32_t i = 0; i < s->running.n; i++) {
      const kvsim_request_t *r = s->running.v[i], *b = best >= 0 ? s->running.v[best] : NULL;
      if (r == v->chunked)
        continue;
      if (!b || r->num_output < b->num_output ||
          (r->num_output == b->num_output && r->num_prompt > b->num_prompt))
        best = i;
    }
    if (best < 0)
      break;
    kvsim_request_t *r = s->running.v[best];
    need -= decode_need(s, r);
    int rc = kvsim_sched_preempt(s, r);
    if (rc < 0)
      return rc;
    kvsim_waitq_pop(&s->waiting); /* preempt queued it at the front */
    kvsim_waitq_push_back(&s->waiting, r); /* same size: cannot fail */
    memmove(&s->running.v[best], &s->running.v[best + 1],
            (size_t)(s->running.n - best - 1) * sizeof *s->running.v);
    s->running.n--;
    step->num_preempted++;
    free_blocks = kvsim_pool_num_free(&s->kv->pool);
    n++;
  }
  return n;
}

/* update_running_batch: check_decode_mem, retraction, the ratio. */
static int decode(sgl_t *v, kvsim_step_t *step) {
  kvsim_sched_t *s = &v->s;
  kvsim_kvcache_t *kv = s->kv;
  int64_t need = 0;
  for (int32_t i = 0; i < s->running.n; i++)
    if (s->running.v[i] != v->chunked)
      need += decode_need(s, s->running.v[i]);
  if (need > kvsim_pool_num_free(&kv->pool)) {
    int n = retract(v, need, step);
    if (n < 0)
      return n;
    /* new_token_ratio = min(1, (decoded + 20 x reqs) / (max_new + 1))
     * over the requests kept. */
    double decoded = 0, max_new = 0, kept = 0;
    for (int32_t i = 0; i < s->running.n; i++)
      if (s->running.v[i] != v->chunked) {
        decoded += (double)s->running.v[i]->num_output;
        max_new += (double)s->running.v[i]->spec.output_tokens;
        kept++;
      }
    double r = (decoded + RETRACT_DECODE_STEPS * kept) / (max_new + 1);
    v->ratio = r < 1 ? r : 1;
  } else {
    v->ratio = v->ratio - v->ratio_decay > v->ratio_min ? v->ratio - v->ratio_decay : v->ratio_min;
  }
  if (kvsim_reqvec_reserve(&step->reqs, s->running.n) < 0)
    return KVSIM_ENOMEM;
  for (int32_t i = 0; i < s->running.n; i++) {
    kvsim_request_t *r = s->running.v[i];
    if (r == v->chunked)
      continue;
    /* With EAGLE the target verifies the last token and the tree's
     * drafts, num_draft_tokens rows (forward_target_verify); allocate
     * also caches the pages accepted drafts filled. */
    const int64_t n = r->num_tokens + r->num_spec - r->num_computed;
    int rc = s->cfg.num_spec_tokens > 0 ? kvsim_kvcache_allocate(kv, r, 0, n, 0)
                                        : kvsim_kvcache_allocate_running(kv, r, 1);
    if (rc < 0)
      return rc;
    if (rc > 0) /* else it waits for the next decode (no room even alone) */
      add_to_step(step, r, s->cfg.num_spec_tokens > 0 ? n : 1);
  }
  return KVSIM_OK;
}

/* Moves what arrived unread into the waiting queue, in arrival order. */
static int receive(sgl_t *v) {
  kvsim_sched_t *s = &v->s;
  if (kvsim_waitq_reserve(&s->waiting, (int64_t)s->waiting.n + v->inbox.n) < 0)
    return KVSIM_ENOMEM;
  for (int32_t i = 0; i < v->inbox.n; i++)
    (void)kvsim_waitq_push_back(&s->waiting, v->inbox.v[i]); /* room reserved */
  v->inbox.n = 0;
  return KVSIM_OK;
}

/* SchedulerRecvSkipper.handle (python/sglang/srt/managers/
 * scheduler_recv_skipper.py), asked by Scheduler.recv_requests once per
 * loop: the counter grows by the last batch's weight (a decode or a
 * target-verify batch, or none, 1; any other, i.e. a prefill, 1000) and
 * the socket is read when it reaches the interval, which resets it. */
static int recv_requests(sgl_t *v) {
  const int64_t interval = kvsim__sgl_opts(&v->s)->scheduler_recv_interval;
  if (interval <= 1)
    return KVSIM_OK;
  v->recv_counter += v->last_prefill ? 1000 : 1;
  if (v->recv_counter < interval)
    return KVSIM_OK;
  v->recv_counter = 0;
  return receive(v);
}

static int form_batch(sgl_t *v, kvsim_time_ns now, kvsim_step_t *step) {
  /* get_next_batch_to_run: a new prefill batch first, else decode. */
  int rc = prefill(v, now, step);
  v->last_prefill = rc >= 0 && step->reqs.n > 0;
  if (rc < 0 || step->reqs.n > 0)
    return rc;
  return decode(v, step);
}

static int schedule(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step) {
  sgl_t *v = (sgl_t *)s;
  int rc = recv_requests(v);
  if (rc == KVSIM_OK)
    rc = form_batch(v, now, step);
  if (rc < 0 || step->reqs.n > 0 || v->inbox.n == 0)
    return rc;
  /* Idle, the loop turns without GPU work (each turn weighs 1) and reads
   * the socket within the interval's turns: at once, on kvsim's clock. */
  v->recv_counter = 0;
  if ((rc = receive(v)) < 0)
    return rc;
  return form_batch(v, now, step);
}

static int add(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now) {
  (void)now;
  if (kvsim__sgl_opts(s)->scheduler_recv_interval > 1)
    return kvsim_reqvec_push(&((sgl_t *)s)->inbox, r);
  return kvsim_waitq_push_back(&s->waiting, r);
}

/* Scheduler.handle_generate_request aborts a prompt of max_req_input_len
 * tokens or more as it arrives (validate_input_length, python/sglang/srt/
 * managers/utils.py; unless --allow-auto-truncate), with
 * max_req_input_len = max_req_len - 5 and max_req_len =
 * min(context_len - 1, max_total_num_tokens - 1) (tp_worker.py
 * TpModelWorker). Admitted, such a prompt fit the pool but never passed
 * the prefill adder's check, and the run stopped as stuck. */
static const char *refuse(const kvsim_sched_t *s, const kvsim_request_t *r) {
  const int64_t pool_tokens = (int64_t)kvsim_pool_usable(&s->kv->pool) * s->kv->block_size;
  int64_t max_req_len = s->cfg.max_model_len - 1;
  if (pool_tokens - 1 < max_req_len)
    max_req_len = pool_tokens - 1;
  return r->spec.prompt_tokens >= max_req_len - 5
             ? "prompt_tokens >= SGLang's max_req_input_len (min(context_len, max_total_num_tokens) - 6)"
             : NULL;
}

const kvsim_sched_ops_t kvsim__sched_sglang = {
    .name = "sglang",
    .help = "SGLang: radix prefix cache, new_token_ratio admission, retraction; fcfs/lpm/lof/random",
    .size = sizeof(sgl_t),
    /* The radix cache is on unless --disable-radix-cache; retracted
     * requests are recomputed; no swap space. */
    .plan_engine = KVSIM_PLAN_SGLANG,
    .defaults = {.enable_prefix_caching = true, .transfer_overlap = true,
                 .recompute_only = true, .retracts = true,
                 /* --disaggregation-mode prefill|decode (python/sglang/srt/disaggregation/) */
                 .kv_connector = true,
                 /* Each chunk's KV leaves as it is computed: the scheduler
                  * sends the chunked request's full pages after every
                  * chunk (disaggregation/prefill.py process_prefill_chunk
                  * -> send_kv_chunk, last_chunk=False: the partial last
                  * page waits), then the rest after the last chunk
                  * (process_batch_result_disagg_prefill -> send_kv_chunk,
                  * last_chunk=True); the transfer engine moves each in the
                  * background (mooncake/conn.py MooncakeKVManager
                  * add_transfer_request -> transfer_worker). */
                 .kv_send_chunks = true},
    .option_keys = option_keys,
    .parse_opts = parse_opts,
    .print_opts = print_opts,
    .plan_params = plan_params,
    .ignored_keys = ignored_keys,
    .fraction_key = "mem_fraction_static",
    .set_fraction = set_fraction,
    .init = init,
    .fini = fini,
    .add = add,
    .schedule = schedule,
    .update = kvsim_sched_update_tokens,
    .refuse = refuse,
};
