/* vllm-v0: the vLLM V0 scheduler (vllm/core/scheduler.py Scheduler, and
 * the watermark of vllm/core/block_manager.py SelfAttnBlockSpaceManager;
 * v0.7.3).
 *
 * Default policy (_schedule_default): if nothing is swapped, admit waiting
 * prompts whole, FCFS, within the token budget, max_num_seqs and the block
 * manager's watermark; a step with a prefill is prefill-only. Otherwise
 * decode every running request one token, preempting the LAST running
 * request when blocks run out (recompute, or swap to the CPU tier), and if
 * nothing was preempted swap requests back in.
 *
 * With enable_chunked_prefill (_schedule_chunked_prefill): running requests
 * first (decodes one token, prefills a chunk of what is left of the budget),
 * then swapped requests if nothing was preempted, then new prefills in
 * chunks, all in one budget.
 *
 * Memory follows the V0 block manager: a prompt's blocks are allocated
 * whole at admission (SelfAttnBlockSpaceManager.allocate builds the block
 * table for every token of the sequence, chunked or not); decodes append
 * a slot at a time with no watermark (can_append_slots). */
#include <assert.h>
#include <cJSON.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/sched.h"
#include "sched/opts_print.h"

/* vllm-v0's own options. */
typedef struct v0_opts {
  /* Fraction of blocks kept free on admission (block_manager.py:
   * watermark = 0.01 by default). */
  double watermark;
} v0_opts_t;
_Static_assert(sizeof(v0_opts_t) <= KVSIM_SCHED_OPTS_BYTES, "vllm-v0 options fit the buffer");

static const char *const option_keys[] = {"watermark", NULL};

static int parse_opts(const cJSON *engine, const char *w, kvsim_sched_opts_t *opts, kvsim_err *err) {
  v0_opts_t *o = (v0_opts_t *)opts->bytes;
  /* The default applies when the key is absent, or null as everywhere. */
  o->watermark = 0.01;
  double x;
  int rc = kvsim__json_num(engine, "watermark", &x, w, err);
  if (rc < 0)
    return rc;
  if (rc > 0) {
    if (x < 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.watermark: %g must be >= 0", w, x);
    if (x >= 1)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.watermark: must be < 1", w);
    o->watermark = x;
  }
  return KVSIM_OK;
}

static int print_opts(const kvsim_sched_opts_t *opts, const kvsim_plan_params_t *p, cJSON *engine) {
  (void)p;
  kvsim__optout_t out = kvsim__optout(option_keys, opts, engine);
  kvsim__optout_num(&out, "watermark", ((const v0_opts_t *)opts->bytes)->watermark);
  return out.rc;
}

typedef enum { ALLOC_OK, ALLOC_LATER, ALLOC_NEVER } alloc_status;

typedef struct v0 {
  kvsim_sched_t s;
  /* The swapped queue (Scheduler.swapped), earliest arrival first. */
  kvsim_reqvec_t swapped;
  /* Recompute victims of this step in preemption order: they join the
   * waiting queue after the step's admissions (waiting.extendleft). */
  kvsim_reqvec_t preempted;
  /* Chunked policy: this step's scheduled requests by kind, to rebuild the
   * running list in V0's order. */
  kvsim_reqvec_t swapped_in, decodes, prefills, new_prefills;
  /* watermark_blocks = int(watermark * num_gpu_blocks) (block_manager.py). */
  int64_t watermark_blocks;
  /* Chunked policy: the running list's length once this step's swap-ins
   * and new prefills join it (room is reserved before each joins). */
  int64_t run_need;
} v0_t;

/* What one step has used of its budget (SchedulingBudget). */
typedef struct budget {
  int64_t tokens, seqs;
  bool preempted;
} budget_t;

/* Blocks the KV manager gives a request holding `tokens` tokens (V0 has
 * no sliding-window freeing: kvcache.c turns it off for V0 plans). */
#define blocks_for kvsim_kvcache_blocks_for

/* can_allocate / can_swap_in of SelfAttnBlockSpaceManager: NEVER if total -
 * required < watermark_blocks, OK if free - required >= watermark_blocks,
 * else LATER. */
static alloc_status can_allocate(const v0_t *v, int64_t required) {
  const kvsim_pool_t *p = &v->s.kv->pool;
  if (kvsim_pool_usable(p) - required < v->watermark_blocks)
    return ALLOC_NEVER;
  if (kvsim_pool_num_free(p) - required >= v->watermark_blocks)
    return ALLOC_OK;
  return ALLOC_LATER;
}

static bool pool_empty(const kvsim_kvcache_t *kv) {
  return kvsim_pool_num_free(&kv->pool) == kvsim_pool_usable(&kv->pool);
}

/* Appends r to the step, whose room the caller reserved. */
static void step_add(kvsim_step_t *step, kvsim_request_t *r, int64_t n) {
  assert(step->reqs.n < step->reqs.cap);
  r->step_new = (int32_t)n;
  step->reqs.v[step->reqs.n++] = r;
  step->num_tokens += n;
}

/* Appends to a list whose room the caller reserved. */
static void push_reserved(kvsim_reqvec_t *a, kvsim_request_t *r) {
  assert(a->n < a->cap);
  a->v[a->n++] = r;
}

static void remove_at(kvsim_reqvec_t *a, int32_t i) {
  memmove(&a->v[i], &a->v[i + 1], (size_t)(a->n - i - 1) * sizeof *a->v);
  a->n--;
}

/* Keeps the swapped queue in FCFS order: V0's fcfs policy sorts it by
 * arrival time (Policy.sort_by_priority in _schedule_swapped); ties by id.
 * The caller reserved the room. */
static void swapped_insert(v0_t *v, kvsim_request_t *r) {
  kvsim_reqvec_t *q = &v->swapped;
  push_reserved(q, r);
  int64_t i = q->n - 1;
  while (i > 0 && (q->v[i - 1]->arrival > r->arrival ||
                   (q->v[i - 1]->arrival == r->arrival && q->v[i - 1]->spec.id > r->spec.id))) {
    q->v[i] = q->v[i - 1];
    i--;
  }
  q->v[i] = r;
}

/* Scheduler._preempt with a user-specified mode. SWAP moves the request's
 * blocks to the CPU tier (_swap_out); the step waits for the copy, because
 * V0's worker runs cache_engine.swap_out before the model in execute_model
 * (the engine adds step->extra_ns unless transfer_overlap is set). When the
 * tier has no room V0 raises "Aborted due to the lack of CPU swap space.
 * Please increase the swap space to avoid this error." (_swap_out); a
 * simulator has no engine to abort, so it preempts by recompute instead (a
 * preemption that moves no bytes to the CPU). RECOMPUTE frees the blocks and resets the
 * computed tokens (_preempt_by_recompute); the victim re-enters the waiting
 * queue at the front after this step's admissions. Both count in
 * vllm:num_preemptions (num_cumulative_preemption). The room of every
 * list r may join is reserved first: KVSIM_ENOMEM changes nothing, and
 * the caller takes r out of `running` only after a success. */
static int preempt(v0_t *v, kvsim_request_t *r, kvsim_step_t *step, budget_t *b) {
  kvsim_sched_t *s = &v->s;
  bool swap = s->cfg.preemption_mode == KVSIM_PREEMPT_SWAP;
  if ((swap && kvsim_reqvec_reserve(&v->swapped, v->swapped.n + 1) < 0) ||
      kvsim_reqvec_reserve(&v->preempted, v->preempted.n + 1) < 0 ||
      kvsim_waitq_reserve(&s->waiting, (int64_t)s->waiting.n + v->preempted.n + 1) < 0)
    return KVSIM_ENOMEM;
  if (swap) {
    int64_t n = kvsim_kvcache_held(s->kv, r);
    if (s->cpu && kvsim_cpu_tier_swap_out(s->cpu, n)) {
      kvsim_kvcache_free(s->kv, r);
      r->status = KVSIM_REQ_SWAPPED;
      r->swapped_blocks = n;
      swapped_insert(v, r);
      s->num_swapped++;
      step->extra_ns += kvsim_cpu_tier_transfer_ns(s->cpu, n);
      goto counted;
    }
  }
  int rc = kvsim_kvcache_free_preempted(s->kv, r);
  if (rc < 0)
    return rc;
  r->status = KVSIM_REQ_WAITING;
  r->num_computed = 0;
  push_reserved(&v->preempted, r);
counted:
  r->num_preemptions++;
  s->num_preemptions++;
  step->num_preempted++;
  b->preempted = true;
  return KVSIM_OK;
}

/* Tokens a running or swapped request computes this step: a decode 1 (V0
 * never chunks a decode, whatever the budget), a prefill what is left of
 * it, cut to the budget when chunking (_get_num_new_uncached_and_cached_tokens). */
static int64_t new_tokens(const kvsim_sched_t *s, const kvsim_request_t *r, const budget_t *b,
                          bool chunking) {
  int64_t n = r->num_tokens - r->num_computed;
  if (n <= 1)
    return 1;
  int64_t left = s->cfg.max_num_batched_tokens - b->tokens;
  return chunking && n > left ? (left > 0 ? left : 0) : n;
}

/* _schedule_running: each running request in order appends its slots;
 * when blocks run out, preempt the last request not yet scheduled
 * (running_queue.pop()), or the request itself when none is left.
 * Sets *stop to the index of the first request not processed (chunking
 * stops when a prefill gets no budget). */
static int schedule_running(v0_t *v, kvsim_step_t *step, budget_t *b, bool chunking,
                            int32_t *stop) {
  kvsim_sched_t *s = &v->s;
  int32_t i = 0;
  int rc;
  *stop = 0;
  while (i < s->running.n) {
    kvsim_request_t *r = s->running.v[i];
    int64_t n = new_tokens(s, r, b, chunking);
    if (n == 0)
      break; /* "No budget => Stop" */
    bool self = false;
    while ((rc = kvsim_kvcache_allocate_running(s->kv, r, n)) <= 0) {
      if (rc < 0)
        return rc;
      if (s->running.n - 1 > i) {
        if ((rc = preempt(v, s->running.v[s->running.n - 1], step, b)) < 0)
          return rc;
        s->running.n--;
      } else {
        if ((rc = preempt(v, r, step, b)) < 0)
          return rc;
        remove_at(&s->running, i);
        self = true;
        break;
      }
    }
    if (self)
      break;
    step_add(step, r, n);
    b->tokens += n;
    if (chunking) {
      b->seqs++;
      push_reserved(r->num_tokens - r->num_computed > 1 ? &v->prefills : &v->decodes, r);
    }
    *stop = ++i;
  }
  *stop = i;
  return KVSIM_OK;
}

/* Room for one more request joining the running list (directly, or via
 * the chunked policy's lists) and the step. */
static int reserve_join(v0_t *v, kvsim_step_t *step, kvsim_reqvec_t *list, bool chunking) {
  kvsim_sched_t *s = &v->s;
  if (kvsim_reqvec_reserve(&step->reqs, step->reqs.n + 1) < 0 ||
      kvsim_reqvec_reserve(list, list->n + 1) < 0 ||
      (chunking && kvsim_reqvec_reserve(&s->running, v->run_need + 1) < 0))
    return KVSIM_ENOMEM;
  return KVSIM_OK;
}

/* _schedule_swapped: swapped requests in order while can_swap_in (with the
 * watermark) and the budget allow; each gets its GPU blocks back, its KV
 * copied in (the step waits for it) and keeps its computed tokens. */
static int schedule_swapped(v0_t *v, kvsim_step_t *step, budget_t *b, bool chunking) {
  kvsim_sched_t *s = &v->s;
  while (v->swapped.n) {
    kvsim_request_t *r = v->swapped.v[0];
    /* Blocks touched: the request's blocks plus the next token's slot.
     * NEVER (within the watermark of the whole pool) is FINISHED_IGNORED
     * by V0; here, as for prompts, it comes back into an empty pool. */
    alloc_status st = can_allocate(v, blocks_for(s->kv, r->num_tokens));
    if (st == ALLOC_NEVER && pool_empty(s->kv))
      st = ALLOC_OK;
    if (st != ALLOC_OK)
      break;
    int64_t n = new_tokens(s, r, b, chunking);
    if (n == 0 || b->tokens + n > s->cfg.max_num_batched_tokens ||
        b->seqs + 1 > s->cfg.max_num_seqs)
      break; /* budget.can_schedule */
    kvsim_reqvec_t *to = chunking ? &v->swapped_in : &s->running;
    int rc = reserve_join(v, step, to, chunking);
    if (rc < 0 || (rc = kvsim_kvcache_allocate(s->kv, r, 0, r->num_tokens - r->num_computed, 0)) < 0)
      return rc;
    if (!rc)
      break;
    remove_at(&v->swapped, 0);
    s->num_swapped--;
    if (s->cpu) {
      kvsim_cpu_tier_swap_in(s->cpu, r->swapped_blocks);
      step->extra_ns += kvsim_cpu_tier_transfer_ns(s->cpu, r->swapped_blocks);
    }
    r->swapped_blocks = 0;
    r->status = KVSIM_REQ_RUNNING;
    push_reserved(to, r);
    if (chunking)
      v->run_need++;
    step_add(step, r, n);
    b->tokens += n;
    b->seqs++;
  }
  return KVSIM_OK;
}

/* _schedule_prefills: waiting requests in order (fresh prompts and
 * recompute victims, whose "prompt" is all their tokens) while the block
 * manager can allocate them (watermark) and the budget allows. A prompt
 * the watermark puts out of reach of even an empty pool (NEVER) is
 * FINISHED_IGNORED by V0; kvsim's gateway already rejects what cannot fit
 * the pool and a scheduler cannot reject, so such a prompt runs only when
 * the pool is empty. Adds the number admitted to *admitted. */
static int schedule_prefills(v0_t *v, kvsim_time_ns now, kvsim_step_t *step, budget_t *b,
                             bool chunking, int32_t *admitted) {
  kvsim_sched_t *s = &v->s;
  kvsim_kvcache_t *kv = s->kv;
  int rc;
  while (s->waiting.n && b->tokens < s->cfg.max_num_batched_tokens) {
    kvsim_request_t *r = kvsim_waitq_peek(&s->waiting);
    alloc_status st = can_allocate(v, blocks_for(kv, r->num_tokens));
    if (st == ALLOC_NEVER && pool_empty(kv))
      st = ALLOC_OK;
    if (st != ALLOC_OK)
      break;
    kvsim_reqvec_t *to = chunking ? &v->new_prefills : &s->running;
    if ((rc = reserve_join(v, step, to, chunking)) < 0)
      return rc;
    int64_t hit = 0;
    if (r->num_computed == 0 && (hit = kvsim_kvcache_lookup(kv, r, r->num_preemptions > 0)) < 0)
      return (int)hit;
    int64_t n = r->num_tokens - r->num_computed - hit;
    int64_t left = s->cfg.max_num_batched_tokens - b->tokens;
    if (chunking && n > left)
      n = left;
    if (n <= 0 || b->tokens + n > s->cfg.max_num_batched_tokens ||
        b->seqs + 1 > s->cfg.max_num_seqs)
      break;
    /* The whole sequence's blocks, whatever the chunk (allocate()). */
    if ((rc = kvsim_kvcache_allocate(kv, r, hit, r->num_tokens - r->num_computed - hit, 0)) < 0)
      return rc;
    if (!rc)
      break;
    kvsim_waitq_pop(&s->waiting);
    r->num_computed += hit;
    if (r->first_scheduled == KVSIM_TIME_NEVER) {
      r->first_scheduled = now;
      r->num_cached_tokens = hit;
    }
    r->status = KVSIM_REQ_RUNNING;
    push_reserved(to, r);
    if (chunking)
      v->run_need++;
    step_add(step, r, n);
    b->tokens += n;
    b->seqs++;
    ++*admitted;
  }
  return KVSIM_OK;
}

/* Recompute victims go to the front of the waiting queue: pushing each to
 * the front in preemption order is waiting.extendleft(preempted). Their
 * room was reserved when they were preempted. */
static void requeue_preempted(v0_t *v) {
  for (int32_t i = 0; i < v->preempted.n; i++) {
    int rc = kvsim_waitq_push_front(&v->s.waiting, v->preempted.v[i]);
    assert(rc == KVSIM_OK);
    (void)rc;
  }
  v->preempted.n = 0;
}

static int schedule_default(v0_t *v, kvsim_time_ns now, kvsim_step_t *step) {
  kvsim_sched_t *s = &v->s;
  /* Running sequences count against max_num_seqs before any prefill. */
  budget_t b = {.tokens = 0, .seqs = s->running.n, .preempted = false};
  int32_t admitted = 0, stop;
  int rc = KVSIM_OK;
  /* If any requests are swapped, they go first: no prefills. */
  if (!v->swapped.n && (rc = schedule_prefills(v, now, step, &b, false, &admitted)) < 0)
    return rc;
  if (admitted > 0)
    return KVSIM_OK; /* "Don't schedule decodes if prefills are scheduled." */
  if (kvsim_reqvec_reserve(&step->reqs, step->reqs.n + s->running.n) < 0)
    return KVSIM_ENOMEM;
  rc = schedule_running(v, step, &b, false, &stop);
  /* A preemption means there is no room to swap anything in. */
  if (rc == KVSIM_OK && !b.preempted) {
    b.seqs = s->running.n;
    rc = schedule_swapped(v, step, &b, false);
  }
  requeue_preempted(v); /* on failure too: victims are never left out */
  return rc;
}

/* Rebuilds the chunked policy's running list from the step's lists; their
 * room was reserved as they joined. */
static void append_all(kvsim_reqvec_t *to, kvsim_reqvec_t *from) {
  for (int32_t i = 0; i < from->n; i++)
    push_reserved(to, from->v[i]);
  from->n = 0;
}

static int schedule_chunked(v0_t *v, kvsim_time_ns now, kvsim_step_t *step) {
  kvsim_sched_t *s = &v->s;
  budget_t b = {0};
  v->swapped_in.n = v->decodes.n = v->prefills.n = v->new_prefills.n = 0;
  v->run_need = s->running.n;
  if (kvsim_reqvec_reserve(&step->reqs, s->running.n) < 0 ||
      kvsim_reqvec_reserve(&v->decodes, s->running.n) < 0 ||
      kvsim_reqvec_reserve(&v->prefills, s->running.n) < 0)
    return KVSIM_ENOMEM;
  /* Decodes (and unfinished prefills) first, in running order. */
  int32_t stop, admitted = 0;
  int rc = schedule_running(v, step, &b, true, &stop);
  if (rc == KVSIM_OK && !b.preempted)
    rc = schedule_swapped(v, step, &b, true);
  /* New prefills even after a preemption: the chunked policy has no
   * "if not preempted" guard; this step's victims are not yet queued. */
  if (rc == KVSIM_OK)
    rc = schedule_prefills(v, now, step, &b, true, &admitted);
  kvsim_reqvec_t *run = &s->running;
  if (rc < 0) {
    /* Nobody is left out: the running list still holds its requests;
     * those that joined it this step are appended. */
    append_all(run, &v->swapped_in);
    append_all(run, &v->new_prefills);
    requeue_preempted(v);
    return rc;
  }
  /* The running list: requests left unprocessed stay in front, then
   * swapped-in, decodes, prefill chunks (those finishing their prompt
   * first: _order_finishing_prefills_first), new prefills. Swapped-in
   * decodes precede swapped-in prefills. */
  int32_t keep = run->n - stop;
  if (keep > 0 && stop > 0)
    memmove(run->v, run->v + stop, (size_t)keep * sizeof *run->v);
  run->n = keep;
  for (int pass = 0; pass < 2; pass++)
    for (int32_t i = 0; i < v->swapped_in.n; i++) {
      kvsim_request_t *r = v->swapped_in.v[i];
      bool decode = r->num_tokens - r->num_computed == 1;
      if (decode == (pass == 0))
        push_reserved(run, r);
    }
  v->swapped_in.n = 0;
  append_all(run, &v->decodes);
  for (int pass = 0; pass < 2; pass++)
    for (int32_t i = 0; i < v->prefills.n; i++) {
      kvsim_request_t *r = v->prefills.v[i];
      bool finishing = r->num_tokens - r->num_computed == r->step_new;
      if (finishing == (pass == 0))
        push_reserved(run, r);
    }
  v->prefills.n = 0;
  append_all(run, &v->new_prefills);
  requeue_preempted(v);
  return KVSIM_OK;
}

static int schedule(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step) {
  v0_t *v = (v0_t *)s;
  if (s->cfg.enable_chunked_prefill)
    return schedule_chunked(v, now, step);
  return schedule_default(v, now, step);
}

static int init(kvsim_sched_t *s, kvsim_err *err) {
  (void)err;
  v0_t *v = (v0_t *)s;
  double watermark = ((const v0_opts_t *)kvsim_sched_opts(s))->watermark;
  v->watermark_blocks = (int64_t)(watermark * (double)kvsim_pool_usable(&s->kv->pool));
  return KVSIM_OK;
}

static void fini(kvsim_sched_t *s) {
  v0_t *v = (v0_t *)s;
  kvsim_reqvec_fini(&v->swapped);
  kvsim_reqvec_fini(&v->preempted);
  kvsim_reqvec_fini(&v->swapped_in);
  kvsim_reqvec_fini(&v->decodes);
  kvsim_reqvec_fini(&v->prefills);
  kvsim_reqvec_fini(&v->new_prefills);
}

static int add(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now) {
  (void)now;
  return kvsim_waitq_push_back(&s->waiting, r); /* add_seq_group: waiting.append */
}

static int32_t held(const kvsim_sched_t *s, kvsim_request_t *const **out) {
  const v0_t *v = (const v0_t *)s;
  *out = v->swapped.v;
  return (int32_t)v->swapped.n;
}

const kvsim_sched_ops_t kvsim__sched_vllm_v0 = {
    .name = "vllm-v0",
    .help = "vLLM V0: prefill-first (or chunked), 1 % watermark, recompute or swap preemption",
    .size = sizeof(v0_t),
    /* V0 neither caches prefixes nor chunks prefills unless asked, its
     * swaps block the step (the worker copies before the model runs), and
     * CacheConfig.swap_space defaults to 4 GiB per GPU. */
    .plan_engine = KVSIM_PLAN_V0,
    .defaults = {.swap_space_gib = 4},
    .option_keys = option_keys,
    .parse_opts = parse_opts,
    .print_opts = print_opts,
    .init = init,
    .fini = fini,
    .add = add,
    .schedule = schedule,
    .update = kvsim_sched_update_tokens,
    .held = held,
};
