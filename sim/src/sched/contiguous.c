/* contiguous: Orca-style iteration-level scheduling with a contiguous KV
 * reservation per request — the vLLM paper's Orca baselines (Kwon et al.,
 * SOSP 2023, arXiv:2309.06180, section 6.1 and Fig. 2):
 *   Orca (Max)    reserves max_model_len tokens per request (the default);
 *   Orca (Oracle) reserves the request's true prompt + output length
 *                 (engine.oracle_lengths);
 *   Orca (Pow2)   reserves the true length rounded up to a power of two,
 *                 at most 2x over (profile contiguous-pow2).
 *
 * Iteration-level batching (Orca, OSDI 2022): requests join and leave the
 * batch every step; a joining request's prompt runs whole (no chunking) in
 * the same step as the running requests' decodes, within
 * max_num_batched_tokens and max_num_seqs. The reservation is made at
 * admission in a linear KV space of the pool's capacity, first fit over
 * the free extents, so external fragmentation is real: a request waits
 * when no single gap is large enough even if the free total is. Memory is
 * reserved for the whole request up front, so nothing is ever preempted.
 * Admission is FCFS with head-of-line blocking.
 *
 * The linear space is counted in KV blocks (block_size tokens): each
 * extent mirrors the paged blocks the request holds, so the pool's usage
 * and the invariant check see the reservation, and r->reserved_tokens
 * reports it to replica.c's waste sampling (block-rounded: an Oracle
 * reservation holds up to block_size - 1 tokens more than the request). */
#include <assert.h>
#include <cJSON.h>
#include <string.h>

#include "core/arith.h"
#include "core/util.h"
#include "core/vec.h"
#include "kvsim/sched.h"
#include "sched/opts_print.h"

/* contiguous's own options. */
typedef struct contig_opts {
  bool oracle_lengths; /* Orca (Oracle): reserve the true length, not max_model_len */
} contig_opts_t;
_Static_assert(sizeof(contig_opts_t) <= KVSIM_SCHED_OPTS_BYTES, "contiguous options fit the buffer");

static const char *const option_keys[] = {"oracle_lengths", NULL};

static int parse_opts(const cJSON *engine, const char *w, kvsim_sched_opts_t *opts, kvsim_err *err) {
  contig_opts_t *o = (contig_opts_t *)opts->bytes;
  int rc = kvsim__json_bool(engine, "oracle_lengths", &o->oracle_lengths, w, err);
  return rc < 0 ? rc : KVSIM_OK;
}

static int print_opts(const kvsim_sched_opts_t *opts, const kvsim_plan_params_t *p, cJSON *engine) {
  (void)p;
  kvsim__optout_t out = kvsim__optout(option_keys, opts, engine);
  kvsim__optout_bool(&out, "oracle_lengths", ((const contig_opts_t *)opts->bytes)->oracle_lengths);
  return out.rc;
}

typedef struct extent {
  int64_t start, len; /* blocks */
  const kvsim_request_t *r;
} extent_t;

typedef struct contig {
  kvsim_sched_t s;
  kvsim__vec(extent_t) ext; /* reserved extents, sorted by start */
  int64_t space; /* blocks in the linear space */
  bool pow2;     /* Orca (Pow2) reservations */
} contig_t;

#define cdiv kvsim__cdiv

/* Blocks the KV manager gives `tokens` tokens (kvcache.h). */
#define blocks_for kvsim_kvcache_blocks_for

/* Tokens reserved for r: Max, Oracle or Pow2, never beyond max_model_len
 * nor the whole space (the gateway rejects what the pool cannot hold). */
static int64_t reservation(const contig_t *v, const kvsim_request_t *r) {
  const kvsim_sched_t *s = &v->s;
  int64_t total = kvsim_request_total_tokens(r);
  int64_t res = s->cfg.max_model_len;
  if (v->pow2) {
    res = 1;
    while (res < total)
      res *= 2;
  } else if (((const contig_opts_t *)kvsim_sched_opts(s))->oracle_lengths) {
    res = total;
  }
  if (res > s->cfg.max_model_len)
    res = s->cfg.max_model_len;
  int64_t room = (v->space - s->kv->residual_blocks) / s->kv->num_groups * s->kv->block_size;
  return res < room ? res : room;
}

/* First fit: the lowest start of a free gap of `len` blocks and the
 * extent index to insert at; -1 if no gap is large enough. */
static int64_t first_fit(const contig_t *v, int64_t len, int64_t *at) {
  int64_t end = 0;
  for (int64_t i = 0; i < v->ext.n; i++) {
    if (v->ext.v[i].start - end >= len) {
      *at = i;
      return end;
    }
    end = v->ext.v[i].start + v->ext.v[i].len;
  }
  *at = v->ext.n;
  return v->space - end >= len ? end : -1;
}

/* Inserts into room reserved by the caller. */
static void insert_extent(contig_t *v, int64_t at, int64_t start, int64_t len,
                          const kvsim_request_t *r) {
  assert(v->ext.n < v->ext.cap);
  memmove(&v->ext.v[at + 1], &v->ext.v[at], (size_t)(v->ext.n - at) * sizeof *v->ext.v);
  v->ext.v[at] = (extent_t){start, len, r};
  v->ext.n++;
}

static void remove_extent(contig_t *v, const kvsim_request_t *r) {
  for (int64_t i = 0; i < v->ext.n; i++)
    if (v->ext.v[i].r == r) {
      memmove(&v->ext.v[i], &v->ext.v[i + 1], (size_t)(v->ext.n - i - 1) * sizeof *v->ext.v);
      v->ext.n--;
      return;
    }
}

/* Appends r to the step, whose room the caller reserved. */
static void step_add(kvsim_step_t *step, kvsim_request_t *r, int64_t n) {
  assert(step->reqs.n < step->reqs.cap);
  r->step_new = (int32_t)n;
  step->reqs.v[step->reqs.n++] = r;
  step->num_tokens += n;
}

static int schedule(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step) {
  contig_t *v = (contig_t *)s;
  int64_t used = 0;
  int rc;
  if (kvsim_reqvec_reserve(&step->reqs, s->running.n) < 0)
    return KVSIM_ENOMEM;
  /* Running requests decode one token each inside their reservation. */
  for (int32_t i = 0; i < s->running.n; i++) {
    kvsim_request_t *r = s->running.v[i];
    int64_t n = r->num_tokens - r->num_computed;
    assert(r->num_computed + n <= r->reserved_tokens);
    step_add(step, r, n);
    used += n;
  }
  /* Requests join in arrival order while the budget, max_num_seqs and a
   * free extent allow; the first that does not fit stops the queue. */
  while (s->waiting.n && s->running.n < s->cfg.max_num_seqs) {
    kvsim_request_t *r = kvsim_waitq_peek(&s->waiting);
    int64_t n = r->num_tokens - r->num_computed;
    /* A prompt beyond the budget still runs alone, or it never would. */
    if (used + n > s->cfg.max_num_batched_tokens && step->reqs.n > 0)
      break;
    int64_t res = reservation(v, r);
    int64_t len = blocks_for(s->kv, res);
    int64_t at;
    int64_t start = first_fit(v, len, &at);
    if (start < 0)
      break; /* no gap: possibly external fragmentation (enough free in total) */
    /* Reserve first, then commit. */
    if (kvsim__vec_reserve(&v->ext, v->ext.n + 1) < 0 ||
        kvsim_reqvec_reserve(&s->running, s->running.n + 1) < 0 ||
        kvsim_reqvec_reserve(&step->reqs, step->reqs.n + 1) < 0)
      return KVSIM_ENOMEM;
    if ((rc = kvsim_kvcache_allocate(s->kv, r, 0, res, 0)) < 0)
      return rc;
    if (!rc)
      break; /* cannot happen: the pool has every free extent's blocks */
    insert_extent(v, at, start, len, r);
    assert(kvsim_kvcache_held(s->kv, r) == len);
    kvsim_waitq_pop(&s->waiting);
    r->reserved_tokens = cdiv(res, s->kv->block_size) * s->kv->block_size;
    r->status = KVSIM_REQ_RUNNING;
    if (r->first_scheduled == KVSIM_TIME_NEVER)
      r->first_scheduled = now;
    s->running.v[s->running.n++] = r;
    step_add(step, r, n);
    used += n;
  }
  return KVSIM_OK;
}

static int update(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step,
                  kvsim_reqvec_t *finished) {
  contig_t *v = (contig_t *)s;
  int64_t first = finished->n;
  int rc = kvsim_sched_update_tokens(s, now, step, finished);
  if (rc < 0)
    return rc;
  /* A finished request's blocks are free (update_tokens); so is its extent. */
  for (int64_t i = first; i < finished->n; i++)
    remove_extent(v, finished->v[i]);
  return KVSIM_OK;
}

static int init_common(kvsim_sched_t *s, bool pow2) {
  contig_t *v = (contig_t *)s;
  v->space = kvsim_pool_usable(&s->kv->pool);
  v->pow2 = pow2;
  return KVSIM_OK;
}

static int init_max(kvsim_sched_t *s, kvsim_err *err) {
  (void)err;
  return init_common(s, false);
}

static int init_pow2(kvsim_sched_t *s, kvsim_err *err) {
  (void)err;
  return init_common(s, true);
}

static void fini(kvsim_sched_t *s) { kvsim__vec_free(&((contig_t *)s)->ext); }

static int add(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now) {
  (void)now;
  return kvsim_waitq_push_back(&s->waiting, r);
}

const kvsim_sched_ops_t kvsim__sched_contiguous = {
    .name = "contiguous",
    .help = "Orca-style iteration-level batching, contiguous max_model_len reservation per "
            "request (true length with oracle_lengths)",
    .size = sizeof(contig_t),
    /* Orca has no prefix cache and follows V0's memory plan. */
    .plan_engine = KVSIM_PLAN_V0,
    .option_keys = option_keys,
    .parse_opts = parse_opts,
    .print_opts = print_opts,
    .init = init_max,
    .fini = fini,
    .add = add,
    .schedule = schedule,
    .update = update,
};

const kvsim_sched_ops_t kvsim__sched_contiguous_pow2 = {
    .name = "contiguous-pow2",
    .help = "contiguous, reserving the true length rounded up to a power of two (Orca Pow2)",
    .size = sizeof(contig_t),
    .plan_engine = KVSIM_PLAN_V0,
    .option_keys = option_keys, /* accepted, unused: pow2 decides the length */
    .parse_opts = parse_opts,
    .print_opts = print_opts,
    .init = init_pow2,
    .fini = fini,
    .add = add,
    .schedule = schedule,
    .update = update,
};
