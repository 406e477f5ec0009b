/* Implicit decode for vllm-v1 (v1_implicit.h): the cohort, its calendar,
 * and the requests outside it. */
#include "sched/v1_implicit.h"

#include <assert.h>
#include <string.h>

#include "core/alloc.h"

int kvsim__imp_init(kvsim__imp_t *m, const kvsim_kvcache_t *kv, kvsim_err *err) {
  memset(m, 0, sizeof *m);
  /* An event is at most a block's tokens away (the next block to fill or
   * take); a ring above that never wraps onto a pending bucket. */
  int64_t size = 2;
  while (size <= kv->block_size + 1 && size < (1 << 20))
    size <<= 1;
  m->ring = kvsim__calloc((size_t)size, sizeof *m->ring);
  if (!m->ring)
    return kvsim_err_set(err, KVSIM_ENOMEM, "scheduler: out of memory");
  m->mask = size - 1;
  return KVSIM_OK;
}

void kvsim__imp_fini(kvsim__imp_t *m) {
  if (m->ring)
    for (int64_t i = 0; i <= m->mask; i++)
      kvsim_reqvec_fini(&m->ring[i]);
  kvsim__free(m->ring);
  kvsim_reqvec_fini(&m->ex);
  memset(m, 0, sizeof *m);
}

bool kvsim__imp_allowed(const kvsim_sched_t *s, int64_t window) {
  const kvsim_kvcache_t *kv = s->kv;
  const int64_t mml = s->cfg.max_model_len;
  /* Rows end at max_model_len - 1 tokens; a step has at most
   * max_num_batched_tokens rows and new tokens (kvsim_step_sums_t's bound). */
  return s->implicit_ok && s->cfg.num_spec_tokens == 0 && !s->lora && kv->fast_shift >= 0 &&
         !kv->cpu && window <= 0 && mml > 0 && mml - 1 <= INT32_MAX &&
         (double)mml * 2.0 * (double)s->cfg.max_num_batched_tokens < 0x1p52;
}

/* The caching of a block r filled in the cohort, between `from` and `to`
 * computed tokens: at most one (steps_to_event), and only where it may
 * wait (kvsim_kvcache_fill_deferrable; others leave at their fill). */
static inline void fill_passed(kvsim_kvcache_t *kv, kvsim_request_t *r, int64_t from, int64_t to) {
  const int32_t sh = kv->fast_shift;
  if ((from >> sh) != (to >> sh) && kvsim_kvcache_fill_deferrable(kv, r))
    kvsim_kvcache_filled(kv, r, (int32_t)(from >> sh));
}

/* r's counts up to date at the clock, and the block it filled on the way. */
static inline void materialize(const kvsim__imp_t *m, kvsim_kvcache_t *kv, kvsim_request_t *r) {
  const int64_t d = m->clock - r->imp_base, from = r->num_computed;
  r->num_computed += d;
  r->num_tokens += d;
  r->num_output += d;
  r->imp_base = m->clock;
  fill_passed(kv, r, from, r->num_computed);
}

/* The steps from now until r is not a plain decode row any more (0: it
 * is not one now), the calendar's reach at most. */
static int64_t steps_to_event(const kvsim__imp_t *m, const kvsim_sched_t *s, const kvsim_request_t *r) {
  /* Decode: past the prompt (a chunk cut one token short of it leaves the
   * prompt's last token, whose step samples the first), one known token
   * left to compute. */
  if (r->status != KVSIM_REQ_RUNNING || r->num_spec != 0 || r->num_tokens - r->num_computed != 1 ||
      r->num_computed < r->num_prompt || r->hold_kv)
    return 0;
  const kvsim_kvcache_t *kv = s->kv;
  const int32_t sh = kv->fast_shift;
  const int64_t bs = (int64_t)1 << sh, c = r->num_computed;
  /* Its tokens stay within one block, above its start, so that the
   * blocks they fill or start are one number (kvsim__imp_sums). A row
   * at a block's start takes its next block first: no event is earlier
   * (it joins after that step). */
  const int64_t in_block = c & (bs - 1);
  if (in_block == 0)
    return 0;
  /* kvsim_kvcache_allocate_running's fast case: the token fits the
   * blocks held and (with prefix caching) fills none. */
  int64_t k = ((int64_t)r->blocks[0].len << sh) - c;
  if (kv->prefix_caching) {
    /* The step that fills a block caches it. Where that may wait, the
     * row stays through it and leaves the step after (to take the next
     * block, usually), its caching done as it leaves (materialize). */
    int64_t fill = (bs - ((c + 1) & (bs - 1))) & (bs - 1);
    fill += kvsim_kvcache_fill_deferrable(kv, r);
    k = fill < k ? fill : k;
  }
  /* vllm-v1 cuts a row at max_model_len - 1 tokens; the step whose token
   * is the request's last is its own (update finishes it). */
  const int64_t to_len = s->cfg.max_model_len - 1 - c;
  const int64_t to_last = r->spec.output_tokens - r->num_output - 1;
  const int64_t to_end = bs - in_block; /* to the block's end, included */
  k = to_end < k ? to_end : k;
  k = to_len < k ? to_len : k;
  k = to_last < k ? to_last : k;
  if (k > m->mask)
    k = m->mask; /* an early event only looks again */
  return k > 0 ? k : 0;
}

/* The blocks `tokens` fill or start: the same for every count a request
 * has in the cohort (steps_to_event). */
static inline int64_t blocks_started(const kvsim_kvcache_t *kv, int64_t tokens) {
  const int32_t sh = kv->fast_shift;
  return (tokens + ((int64_t)1 << sh) - 1) >> sh;
}

/* Joins r to the cohort if it is in plain decode; false otherwise (or
 * when its bucket cannot grow: it stays explicit). */
static bool try_join(kvsim__imp_t *m, const kvsim_sched_t *s, kvsim_request_t *r) {
  const int64_t k = steps_to_event(m, s, r);
  if (k <= 0 || kvsim_reqvec_push(&m->ring[(m->clock + k) & m->mask], r) < 0)
    return false;
  r->imp = true;
  r->imp_base = m->clock;
  m->n++;
  m->ctx += r->num_computed;
  m->live += r->blocks[0].len;
  m->need += blocks_started(s->kv, r->num_computed);
  return true;
}

void kvsim__imp_stop(kvsim__imp_t *m, kvsim_sched_t *s) {
  if (!m->on)
    return;
  for (int32_t i = 0; i < s->running.n; i++) {
    kvsim_request_t *r = s->running.v[i];
    if (r->imp) {
      materialize(m, s->kv, r);
      r->imp = false;
    }
  }
  for (int64_t i = 0; i <= m->mask; i++)
    m->ring[i].n = 0;
  m->ex.n = 0;
  m->n = 0;
  m->ctx = 0;
  m->live = m->need = 0;
  m->on = false;
}

/* ex in running order (admission stamps): nearly sorted already. */
static void sort_ex(kvsim__imp_t *m) {
  kvsim_request_t **v = m->ex.v;
  for (int32_t i = 1; i < m->ex.n; i++) {
    kvsim_request_t *r = v[i];
    int32_t j = i - 1;
    for (; j >= 0 && v[j]->adm_seq > r->adm_seq; j--)
      v[j + 1] = v[j];
    v[j + 1] = r;
  }
}

bool kvsim__imp_begin(kvsim__imp_t *m, kvsim_sched_t *s, int64_t budget, int64_t threshold) {
  m->in_flight = false;
  if (!m->on)
    return false;
  /* The events due now leave the cohort. */
  kvsim_reqvec_t *due = &m->ring[m->clock & m->mask];
  if (due->n > 0) {
    if (kvsim_reqvec_reserve(&m->ex, m->ex.n + due->n) < 0) {
      kvsim__imp_stop(m, s);
      return false;
    }
    for (int32_t i = 0; i < due->n; i++) {
      kvsim_request_t *r = due->v[i];
      materialize(m, s->kv, r);
      r->imp = false;
      m->n--;
      m->ctx -= r->num_computed;
      m->live -= r->blocks[0].len;
      m->need -= blocks_started(s->kv, r->num_computed);
      m->ex.v[m->ex.n++] = r;
    }
    due->n = 0;
    sort_ex(m);
  }
  /* Every running request is in the cohort or ex, unless someone else
   * changed the running list: then the explicit loop. */
  if (m->n + m->ex.n != s->running.n) {
    kvsim__imp_stop(m, s);
    return false;
  }
  /* The explicit rows' tokens and the blocks they may take
   * (kvsim_kvcache_allocate's simple path takes what the tokens need
   * beyond the blocks held, if the free queue has them). */
  const kvsim_kvcache_t *kv = s->kv;
  const int64_t last_pos = s->cfg.max_model_len - 1, bs = kv->block_size;
  int64_t demand = m->n, blocks = 0;
  for (int32_t i = 0; i < m->ex.n; i++) {
    const kvsim_request_t *r = m->ex.v[i];
    int64_t n = r->num_tokens + r->num_spec - r->num_computed;
    if (threshold > 0 && n > threshold)
      n = threshold;
    if (n > last_pos - r->num_computed)
      n = last_pos - r->num_computed;
    if (n <= 0)
      continue;
    demand += n;
    int64_t need = r->num_computed + n;
    if (need > kv->max_model_len)
      need = kv->max_model_len;
    const int64_t more = (need + bs - 1) / bs - r->blocks[0].len;
    blocks += more > 0 ? more : 0;
  }
  if (demand > budget || blocks > kvsim_pool_num_free(&kv->pool)) {
    kvsim__imp_stop(m, s);
    return false;
  }
  return true;
}

int kvsim__imp_reserve(kvsim__imp_t *m, int64_t more) {
  return kvsim_reqvec_reserve(&m->ex, m->ex.n + more);
}

void kvsim__imp_admitted(kvsim__imp_t *m, kvsim_request_t *r) {
  assert(m->ex.n < m->ex.cap);
  r->adm_seq = ++m->seq;
  m->ex.v[m->ex.n++] = r;
}

void kvsim__imp_after_update(kvsim__imp_t *m, kvsim_sched_t *s, bool fast, int64_t window) {
  if (fast) {
    assert(m->on);
    if (m->step_new_set) {
      for (int32_t i = 0; i < s->running.n; i++)
        if (s->running.v[i]->imp)
          s->running.v[i]->step_new = 0;
      m->step_new_set = false;
    }
    /* The cohort computed one token each and sampled one. */
    m->clock++;
    m->ctx += m->n;
    s->generation_tokens_total += m->n;
    int32_t w = 0;
    for (int32_t i = 0; i < m->ex.n; i++) {
      kvsim_request_t *r = m->ex.v[i];
      if (r->status == KVSIM_REQ_RUNNING && !try_join(m, s, r))
        m->ex.v[w++] = r;
    }
    m->ex.n = w;
    return;
  }
  assert(!m->on);
  if (!kvsim__imp_allowed(s, window) || kvsim_reqvec_reserve(&m->ex, s->running.n) < 0)
    return;
  /* The cohort forms from the running list, stamped in its order. */
  m->on = true;
  for (int32_t i = 0; i < s->running.n; i++) {
    kvsim_request_t *r = s->running.v[i];
    r->adm_seq = ++m->seq;
    if (!try_join(m, s, r))
      m->ex.v[m->ex.n++] = r;
  }
}

void kvsim__imp_sync(kvsim__imp_t *m, kvsim_sched_t *s) {
  if (!m->on || m->n == 0)
    return;
  for (int32_t i = 0; i < s->running.n; i++) {
    kvsim_request_t *r = s->running.v[i];
    if (!r->imp)
      continue;
    materialize(m, s->kv, r);
    if (m->in_flight) {
      r->step_new = 1;
      /* The step in flight computed its token: a block it fills is
       * cached now, as the explicit loop's allocation did (done again,
       * to no effect, when the row next materializes). */
      fill_passed(s->kv, r, r->num_computed, r->num_computed + 1);
    }
  }
  m->step_new_set = m->in_flight;
}

bool kvsim__imp_sums(const kvsim__imp_t *m, const kvsim_sched_t *s, kvsim_sched_isums_t *out) {
  if (!m->on || m->n + m->ex.n != s->running.n)
    return false;
  /* A step in flight computes one token of each (sync's step_new). */
  out->blocks = m->live;
  out->tokens = m->ctx + (m->in_flight ? m->n : 0);
  out->needed = m->need;
  out->rest = m->ex.v;
  out->nrest = m->ex.n;
  return true;
}
