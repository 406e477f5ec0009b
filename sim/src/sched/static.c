/* static: FasterTransformer-style static batching, the vLLM paper's
 * FasterTransformer baseline (Kwon et al., SOSP 2023, section 6.1): a
 * scheduler hands FT the earliest-arrived requests, up to a batch size as
 * large as GPU memory allows.
 *
 * A batch forms only when the previous one has fully ended: up to
 * max_num_seqs waiting requests, FCFS, as many as fit with max_model_len
 * tokens of KV reserved per slot (FT allocates its cache for
 * max_batch_size x max_seq_len up front). The prompts run together padded
 * to the longest (FT's context decoder takes a [batch, max_input_len]
 * tensor: padding is computed), then one decode step per token until the
 * longest member is done. A member that finishes early streams its last
 * token and is reported then, but keeps its slot — its memory and its batch
 * position, still computed each step — until the batch ends. There is no
 * token budget (FT has none) and no preemption.
 *
 * Memory: each slot holds paged blocks for its whole reservation (so the
 * pool's usage and the invariant check see it) and r->reserved_tokens says
 * it is a reservation (replica.c's waste sampling). Finished members'
 * slots move to profile-owned placeholder requests exposed through the
 * `held` op until the batch ends; the sampling counts a finished slot's
 * tokens as held (their KV is still there) and the rest of it as reserved.
 * Padding is charged as compute in the prefill step but is not KV of the
 * member (decode steps read each member's own tokens only). */
#include <assert.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/sched.h"
#include "sched/static.h"


/* Blocks the KV manager gives `tokens` tokens (kvcache.h). */
#define blocks_for kvsim_kvcache_blocks_for

static int init(kvsim_sched_t *s, kvsim_err *err) {
  static_t *v = (static_t *)s;
  const kvsim_kvcache_t *kv = s->kv;
  int64_t usable = kvsim_pool_usable(&kv->pool);
  v->slot_tokens = s->cfg.max_model_len;
  if (blocks_for(kv, v->slot_tokens) > usable) {
    /* A pool smaller than one max_model_len slot: one slot of what there
     * is (the gateway rejects requests that do not fit the pool). */
    v->slot_tokens = (usable - kv->residual_blocks) / kv->num_groups * kv->block_size;
    if (v->slot_tokens <= 0)
      return kv->residual_blocks
                 ? kvsim_err_set(err, KVSIM_ENOFIT,
                                 "static: %lld KV blocks hold no slot beside the int8/int4 cache's "
                                 "residual window of %d blocks",
                                 (long long)usable, (int)kv->residual_blocks)
                 : kvsim_err_set(err, KVSIM_ENOFIT, "static: %lld KV blocks hold no slot",
                                 (long long)usable);
  }
  int64_t fit = usable / blocks_for(kv, v->slot_tokens);
  /* Growing rows are bounded by the batch's lengths at admission instead. */
  if (v->grow)
    fit = s->cfg.max_num_seqs;
  v->slots = (int32_t)(fit < s->cfg.max_num_seqs ? fit : s->cfg.max_num_seqs);
  if (v->slots < 1)
    v->slots = 1;
  v->ghosts = kvsim__calloc((size_t)v->slots, sizeof *v->ghosts);
  v->ghost_ptrs = kvsim__calloc((size_t)v->slots, sizeof *v->ghost_ptrs);
  v->pads = kvsim__calloc((size_t)v->slots, sizeof *v->pads);
  if (!v->ghosts || !v->ghost_ptrs || !v->pads) {
    kvsim__free(v->ghosts);
    kvsim__free(v->ghost_ptrs);
    kvsim__free(v->pads);
    return kvsim_err_set(err, KVSIM_ENOMEM, "static: out of memory for %d slots", v->slots);
  }
  return KVSIM_OK;
}

static void fini(kvsim_sched_t *s) {
  static_t *v = (static_t *)s;
  for (int32_t i = 0; v->ghosts && i < v->slots; i++)
    for (int g = 0; g < KVSIM_MAX_KV_GROUPS; g++)
      kvsim__free(v->ghosts[i].blocks[g].ids);
  kvsim__free(v->ghosts);
  kvsim__free(v->ghost_ptrs);
  kvsim__free(v->pads);
}

static int add(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now) {
  (void)now;
  return kvsim_waitq_push_back(&s->waiting, r);
}

/* Appends r to the step, whose room schedule reserved. */
static void step_add(kvsim_step_t *step, kvsim_request_t *r, int64_t n) {
  assert(step->reqs.n < step->reqs.cap);
  r->step_new = (int32_t)n;
  step->reqs.v[step->reqs.n++] = r;
  step->num_tokens += n;
}

/* Forms a batch from the head of the waiting queue, each member with its
 * slot reserved. A failure leaves the members admitted so far in the
 * batch (it starts with them). */
static int form_batch(static_t *v, kvsim_time_ns now) {
  kvsim_sched_t *s = &v->s;
  int rc = KVSIM_OK;
  v->pad_len = 0;
  v->max_out = 0;
  v->decoded = 0;
  if (kvsim_reqvec_reserve(&s->running, v->slots) < 0)
    return KVSIM_ENOMEM;
  const int64_t usable = kvsim_pool_usable(&s->kv->pool);
  while (s->waiting.n && s->running.n < v->slots) {
    kvsim_request_t *r = kvsim_waitq_peek(&s->waiting);
    int64_t tokens = v->slot_tokens;
    if (v->grow) {
      /* Every row grows to the padded prompt plus the longest output but
       * its last token (sampled, never fed back: grow_row's target peaks at
       * pad_len + max_out - 1, the gateway's rule too): the batch takes r
       * only if all its rows then fit the pool and the cache length. */
      int64_t pad = r->num_tokens > v->pad_len ? r->num_tokens : v->pad_len;
      int64_t out = r->spec.output_tokens > v->max_out ? r->spec.output_tokens : v->max_out;
      if (pad + out > s->cfg.max_model_len ||
          (s->running.n + 1) * blocks_for(s->kv, pad + out - 1) > usable)
        break;
      tokens = r->num_tokens;
      v->max_out = out;
    }
    if ((rc = kvsim_kvcache_allocate(s->kv, r, 0, tokens, 0)) <= 0)
      break; /* 0 cannot happen: slots x slot blocks <= pool */
    rc = KVSIM_OK;
    kvsim_waitq_pop(&s->waiting);
    r->reserved_tokens = tokens;
    r->status = KVSIM_REQ_RUNNING;
    r->first_scheduled = now;
    s->running.v[s->running.n++] = r;
    if (r->num_tokens > v->pad_len)
      v->pad_len = r->num_tokens;
  }
  /* Growing rows start at the padded length (a [batch, pad_len] tensor). */
  for (int32_t i = 0; v->grow && rc == KVSIM_OK && i < s->running.n; i++) {
    kvsim_request_t *r = s->running.v[i];
    if ((rc = kvsim_kvcache_allocate(s->kv, r, 0, v->pad_len, 0)) > 0) {
      r->reserved_tokens = v->pad_len;
      rc = KVSIM_OK;
    } else if (rc == 0) {
      rc = KVSIM_ENOFIT; /* cannot happen: checked at admission */
    }
  }
  if (s->running.n) {
    v->active = true;
    v->prefilled = false;
  }
  return rc < 0 ? rc : KVSIM_OK;
}

/* A growing row holds the padded prompt plus one token per decode step
 * so far and the one this step computes (every row of the batch tensor,
 * finished or not). Idempotent, so a step retried after a failure does
 * not grow a row twice. */
static int grow_row(static_t *v, kvsim_request_t *r) {
  int64_t target = v->pad_len + v->decoded + 1;
  if (r->reserved_tokens >= target)
    return KVSIM_OK;
  int rc = kvsim_kvcache_allocate(v->s.kv, r, 0, target - r->num_computed, 0);
  if (rc < 0)
    return rc;
  if (rc == 0)
    return KVSIM_ENOFIT; /* cannot happen: checked at admission */
  r->reserved_tokens = target;
  return KVSIM_OK;
}

static int schedule(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step) {
  static_t *v = (static_t *)s;
  int rc;
  if (!v->active && (rc = form_batch(v, now)) < 0)
    return rc;
  if (!v->active)
    return KVSIM_OK;
  /* A step holds at most every member, its padding and every finished
   * member's slot. */
  if (kvsim_reqvec_reserve(&step->reqs, 2 * s->running.n + v->nghosts) < 0)
    return KVSIM_ENOMEM;
  if (!v->prefilled) {
    /* Every member computes the padded prompt length: its prompt, then a
     * placeholder for the padding after it, with the prompt as context —
     * the same attention pairs as one sequence of pad_len tokens. */
    for (int32_t i = 0; i < s->running.n; i++) {
      kvsim_request_t *r = s->running.v[i];
      step_add(step, r, r->num_tokens);
      if (r->num_tokens < v->pad_len) {
        kvsim_request_t *p = &v->pads[i];
        p->status = KVSIM_REQ_PENDING; /* not a request: update skips it */
        p->num_computed = r->num_tokens;
        step_add(step, p, v->pad_len - r->num_tokens);
      }
    }
    return KVSIM_OK;
  }
  for (int32_t i = 0; v->grow && i < s->running.n + v->nghosts; i++)
    if ((rc = grow_row(v, i < s->running.n ? s->running.v[i] : v->ghost_ptrs[i - s->running.n])) < 0)
      return rc;
  for (int32_t i = 0; i < s->running.n; i++)
    step_add(step, s->running.v[i], 1);
  /* Finished members keep their batch position: FT decodes the whole batch. */
  for (int32_t i = 0; i < v->nghosts; i++)
    step_add(step, v->ghost_ptrs[i], 1);
  return KVSIM_OK;
}

/* A finished member's slot passes to a placeholder that holds its blocks
 * (the request itself is reported and recycled now). */
static void keep_slot(static_t *v, kvsim_request_t *r) {
  kvsim_request_t *g = &v->ghosts[v->nghosts];
  for (int t = 0; t < KVSIM_MAX_KV_GROUPS; t++) {
    kvsim_blocks_t tmp = g->blocks[t]; /* empty: freed when its batch ended */
    g->blocks[t] = r->blocks[t];
    r->blocks[t] = tmp;
  }
  g->spec.id = r->spec.id;
  g->replica = r->replica;
  g->status = KVSIM_REQ_FINISHED;
  g->num_prompt = r->num_prompt;
  g->num_tokens = r->num_tokens;
  g->num_computed = r->num_computed;
  g->reserved_tokens = r->reserved_tokens;
  g->step_new = 0;
  v->ghost_ptrs[v->nghosts++] = g;
}

static int update(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step,
                  kvsim_reqvec_t *finished) {
  static_t *v = (static_t *)s;
  /* Room for every request of the step first: nothing below can fail. */
  if (kvsim_reqvec_reserve(finished, finished->n + step->reqs.n) < 0)
    return KVSIM_ENOMEM;
  for (int32_t i = 0; i < step->reqs.n; i++) {
    kvsim_request_t *r = step->reqs.v[i];
    int64_t n = r->step_new;
    r->step_new = 0;
    if (r->status != KVSIM_REQ_RUNNING)
      continue; /* padding or a finished member's slot: work, no token */
    if (!v->prefilled)
      s->prompt_tokens_total += n;
    r->num_computed += n;
    if (kvsim_sched_emit_token(s, r, now)) {
      keep_slot(v, r);
      finished->v[finished->n++] = r;
    }
  }
  if (v->prefilled)
    v->decoded++;
  v->prefilled = true;
  int32_t w = 0;
  for (int32_t i = 0; i < s->running.n; i++)
    if (s->running.v[i]->status == KVSIM_REQ_RUNNING)
      s->running.v[w++] = s->running.v[i];
  s->running.n = w;
  if (v->active && s->running.n == 0) {
    /* The longest member is done: the batch ends and frees every slot. */
    for (int32_t i = 0; i < v->nghosts; i++)
      kvsim_kvcache_free(s->kv, v->ghost_ptrs[i]);
    v->nghosts = 0;
    v->active = false;
  }
  return KVSIM_OK;
}

static int32_t held(const kvsim_sched_t *s, kvsim_request_t *const **out) {
  const static_t *v = (const static_t *)s;
  *out = v->ghost_ptrs;
  return v->nghosts;
}

int kvsim__static_init(kvsim_sched_t *s, bool grow, kvsim_err *err) {
  ((static_t *)s)->grow = grow;
  return init(s, err);
}
void kvsim__static_fini(kvsim_sched_t *s) { fini(s); }
int kvsim__static_add(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now) {
  return add(s, r, now);
}
int kvsim__static_schedule(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step) {
  return schedule(s, now, step);
}
int kvsim__static_update(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step,
                         kvsim_reqvec_t *finished) {
  return update(s, now, step, finished);
}
int32_t kvsim__static_held(const kvsim_sched_t *s, kvsim_request_t *const **out) {
  return held(s, out);
}

const kvsim_sched_ops_t kvsim__sched_static = {
    .name = "static",
    .help = "static batching (FasterTransformer): fixed batches run to their longest member, "
            "max_model_len reserved per slot",
    .size = sizeof(static_t),
    /* FasterTransformer has no prefix cache, and follows V0's memory plan. */
    .plan_engine = KVSIM_PLAN_V0,
    .init = init,
    .fini = fini,
    .add = add,
    .schedule = schedule,
    .update = update,
    .held = held,
};
