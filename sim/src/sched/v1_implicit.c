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
  kvsim_reqvec_fini(&m->takes);
  kvsim_reqvec_fini(&m->kept);
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

/* Decode: past the prompt (a chunk cut one token short of it leaves the
 * prompt's last token, whose step samples the first), one known token
 * left to compute. */
static inline bool plain_decode(const kvsim_request_t *r) {
  return r->status == KVSIM_REQ_RUNNING && r->num_spec == 0 && r->num_tokens - r->num_computed == 1 &&
         r->num_computed >= r->num_prompt && !r->hold_kv;
}

/* The steps a plain decode row with c computed tokens (not a block's
 * start), a table of len blocks and nout outputs stays plain, the
 * calendar's reach at most (0: none). */
static inline int64_t event_in(const kvsim__imp_t *m, const kvsim_sched_t *s, const kvsim_request_t *r,
                        int64_t c, int64_t len, int64_t nout) {
  const kvsim_kvcache_t *kv = s->kv;
  const int32_t sh = kv->fast_shift;
  const int64_t bs = (int64_t)1 << sh, in_block = c & (bs - 1);
  /* kvsim_kvcache_allocate_running's fast case: the token fits the
   * blocks held and (with prefix caching) fills none. */
  int64_t k = (len << sh) - c;
  if (kv->prefix_caching) {
    /* The step that fills a block caches it. Where that may wait, the
     * row stays through it and leaves the step after (to take the next
     * block, usually), its caching done as it leaves (materialize). */
    int64_t fill = (bs - ((c + 1) & (bs - 1))) & (bs - 1);
    fill += kvsim_kvcache_fill_deferrable(kv, r);
    k = fill < k ? fill : k;
  }
  /* vllm-v1 cuts a row at max_model_len - 1 tokens; the step whose token
   * is the request's last is its own (update finishes it). Its tokens
   * stay within one block, so that the blocks they fill or start are one
   * number (kvsim__imp_sums). */
  const int64_t to_len = s->cfg.max_model_len - 1 - c;
  const int64_t to_last = r->spec.output_tokens - nout - 1;
  const int64_t to_end = bs - in_block; /* to the block's end, included */
  k = to_end < k ? to_end : k;
  k = to_len < k ? to_len : k;
  k = to_last < k ? to_last : k;
  if (k > m->mask - 1)
    k = m->mask - 1; /* an early event only looks again */
  return k > 0 ? k : 0;
}

/* A row whose token starts a block its table lacks, and is neither its
 * last nor max_model_len's: in plain decode but for that block, which it
 * may take without leaving the cohort (kvsim__imp_begin). */
static inline bool wants_block(const kvsim_sched_t *s, const kvsim_request_t *r) {
  const int64_t c = r->num_computed;
  return ((int64_t)r->blocks[0].len << s->kv->fast_shift) == c && c < s->cfg.max_model_len - 1 &&
         r->num_output + 1 < r->spec.output_tokens;
}

/* The steps from now until r is not a plain decode row any more, or 0
 * when it only wants its next block now (due at the next step), or -1
 * when it is not one now. A row at a block's start holding more is not
 * kept (its tokens would cross a block). */
static int64_t steps_to_event(const kvsim__imp_t *m, const kvsim_sched_t *s, const kvsim_request_t *r) {
  if (!plain_decode(r))
    return -1;
  const int64_t c = r->num_computed;
  if ((c & (((int64_t)1 << s->kv->fast_shift) - 1)) == 0)
    return wants_block(s, r) ? 0 : -1;
  const int64_t k = event_in(m, s, r, c, r->blocks[0].len, r->num_output);
  return k > 0 ? k : -1;
}

/* The blocks `tokens` fill or start: the same for every count a request
 * has in the cohort (steps_to_event). */
static inline int64_t blocks_started(const kvsim_kvcache_t *kv, int64_t tokens) {
  const int32_t sh = kv->fast_shift;
  return (tokens + ((int64_t)1 << sh) - 1) >> sh;
}

/* r enters the cohort's running sums (the sampling pass reads them). */
static inline void count_in(kvsim__imp_t *m, const kvsim_sched_t *s, kvsim_request_t *r) {
  r->imp = true;
  r->imp_base = m->clock;
  m->n++;
  m->ctx += r->num_computed;
  m->live += r->blocks[0].len;
  m->need += blocks_started(s->kv, r->num_computed);
}

/* Joins r to the cohort if it is in plain decode; false otherwise (or
 * when its bucket cannot grow: it stays explicit). */
static inline bool try_join(kvsim__imp_t *m, const kvsim_sched_t *s, kvsim_request_t *r) {
  const int64_t k = steps_to_event(m, s, r);
  if (k < 0 || kvsim_reqvec_push(&m->ring[(m->clock + k) & m->mask], r) < 0)
    return false;
  r->imp_due = m->clock + k;
  count_in(m, s, r);
  return true;
}

/* Dissolves the cohort. With `keep`, for a step the explicit loop runs
 * (kvsim__imp_begin's budget or blocks), its rows keep their calendar
 * entries (m->kept): one that the step advances by its one token, as a
 * fast step would, joins again after it without a new event
 * (kvsim__imp_after_update). */
static void stop(kvsim__imp_t *m, kvsim_sched_t *s, bool keep) {
  if (!m->on)
    return;
  m->kept.n = 0;
  keep = keep && kvsim_reqvec_reserve(&m->kept, m->n) == KVSIM_OK;
  for (int32_t i = 0; i < s->running.n; i++) {
    kvsim_request_t *r = s->running.v[i];
    if (r->imp) {
      materialize(m, s->kv, r);
      r->imp = false;
      if (keep && r->imp_due > m->clock) { /* the due ones' entries are gone */
        r->imp_kept = true;
        r->imp_c = r->num_computed;
        m->kept.v[m->kept.n++] = r;
      }
    }
  }
  if (!keep)
    for (int64_t i = 0; i <= m->mask; i++)
      m->ring[i].n = 0;
  m->ex.n = 0;
  m->takes.n = 0;
  m->n = 0;
  m->ctx = 0;
  m->live = m->need = 0;
  m->on = false;
}

void kvsim__imp_stop(kvsim__imp_t *m, kvsim_sched_t *s) { stop(m, s, false); }

/* Takes r's calendar entry out (its bucket is short). */
static void drop_entry(kvsim__imp_t *m, const kvsim_request_t *r) {
  kvsim_reqvec_t *b = &m->ring[r->imp_due & m->mask];
  for (int32_t i = 0; i < b->n; i++)
    if (b->v[i] == r) {
      b->v[i] = b->v[--b->n];
      return;
    }
  assert(!"a kept row has its calendar entry");
}

/* r leaves the cohort for ex (room reserved). */
static void leave(kvsim__imp_t *m, const kvsim_kvcache_t *kv, kvsim_request_t *r) {
  r->imp = false;
  m->n--;
  m->ctx -= r->num_computed;
  m->live -= r->blocks[0].len;
  m->need -= blocks_started(kv, r->num_computed);
  m->ex.v[m->ex.n++] = r;
}

/* A list in running order (admission stamps): nearly sorted already. */
static void sort_seq(kvsim_reqvec_t *a) {
  kvsim_request_t **v = a->v;
  for (int32_t i = 1; i < a->n; i++) {
    kvsim_request_t *r = v[i];
    int32_t j = i - 1;
    for (; j >= 0 && v[j]->adm_seq > r->adm_seq; j--)
      v[j + 1] = v[j];
    v[j + 1] = r;
  }
}

static void sort_ex(kvsim__imp_t *m) { sort_seq(&m->ex); }

/* The n rows of v (in running order) leave the cohort for ex (in running
 * order, room reserved), merged from the back. */
static void leave_sorted(kvsim__imp_t *m, const kvsim_kvcache_t *kv, kvsim_request_t *const *v,
                         int32_t n) {
  int32_t i = m->ex.n - 1, k = m->ex.n + n - 1;
  for (int32_t j = 0; j < n; j++)
    leave(m, kv, v[j]); /* appended: overwritten below */
  kvsim_request_t **e = m->ex.v;
  for (int32_t j = n - 1; j >= 0; k--) {
    if (i >= 0 && e[i]->adm_seq > v[j]->adm_seq)
      e[k] = e[i--];
    else
      e[k] = v[j--];
  }
}

/* The due rows that only want their next block (m->takes, still in the
 * cohort) take it in place, in running order, as long as what an explicit
 * row before them does to the pool cannot change which block they get or
 * what taking it does: no row before them takes blocks (`first_alloc`,
 * its admission stamp), and none caches blocks (`first_cache`) unless the
 * block taken carries no hash (its taking then leaves the prefix map
 * alone, all the caching touches). The rest leave for ex, where the
 * explicit rows take theirs in running order (schedule_fast), as the
 * explicit loop does. A counted pool has no order. Each stays for the
 * step and waits for its next event from the counts the step leaves. */
static void take_in_place(kvsim__imp_t *m, kvsim_sched_t *s, int64_t first_alloc,
                          int64_t first_cache) {
  kvsim_kvcache_t *kv = s->kv;
  const kvsim_pool_t *pool = &kv->pool;
  sort_seq(&m->takes);
  int32_t i = 0;
  for (; i < m->takes.n; i++) {
    kvsim_request_t *r = m->takes.v[i];
    if (!pool->counted &&
        (r->adm_seq > first_alloc ||
         (r->adm_seq > first_cache && pool->head >= 0 && kvsim_pool_cached(pool, pool->head) &&
          !kvsim_pool_anon(pool, pool->head))))
      break;
    const int64_t k = event_in(m, s, r, r->num_computed + 1, r->blocks[0].len + 1, r->num_output + 1);
    kvsim_reqvec_t *b = &m->ring[(m->clock + 1 + k) & m->mask];
    if (kvsim_reqvec_reserve(b, b->n + 1) < 0 || !kvsim_kvcache_take_next(kv, r))
      break;
    b->v[b->n++] = r;
    r->imp_due = m->clock + 1 + k;
    m->live++;
    m->need++; /* its token starts the block: computed + 1 tokens in flight */
  }
  if (i < m->takes.n)
    leave_sorted(m, kv, m->takes.v + i, m->takes.n - i);
  m->takes.n = 0;
}

bool kvsim__imp_begin(kvsim__imp_t *m, kvsim_sched_t *s, int64_t budget, int64_t threshold) {
  m->in_flight = false;
  if (!m->on)
    return false;
  kvsim_kvcache_t *kv = s->kv;
  /* The events due now: rows that only want their next block stay for
   * now (m->takes), the others leave the cohort. */
  kvsim_reqvec_t *due = &m->ring[m->clock & m->mask];
  m->takes.n = 0;
  if (due->n > 0) {
    if (kvsim_reqvec_reserve(&m->ex, m->ex.n + due->n) < 0 ||
        kvsim_reqvec_reserve(&m->takes, due->n) < 0) {
      kvsim__imp_stop(m, s);
      return false;
    }
    for (int32_t i = 0; i < due->n; i++) {
      kvsim_request_t *r = due->v[i];
      materialize(m, kv, r);
      if (plain_decode(r) && wants_block(s, r))
        m->takes.v[m->takes.n++] = r;
      else
        leave(m, kv, r);
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
   * beyond the blocks held, if the free queue has them), with the due
   * rows' next blocks; and the first explicit row, in running order,
   * that takes blocks, and the first that caches blocks it fills (not
   * kvsim_kvcache_allocate_running's fast case either way). */
  const int32_t sh = kv->fast_shift;
  const int64_t last_pos = s->cfg.max_model_len - 1, bs = kv->block_size;
  int64_t demand = m->n, blocks = m->takes.n, first_alloc = INT64_MAX, first_cache = INT64_MAX;
  for (int32_t i = 0; i < m->ex.n; i++) {
    const kvsim_request_t *r = m->ex.v[i];
    const int64_t c = r->num_computed;
    int64_t n = r->num_tokens + r->num_spec - c;
    if (threshold > 0 && n > threshold)
      n = threshold;
    if (n > last_pos - c)
      n = last_pos - c;
    if (n <= 0)
      continue;
    demand += n;
    int64_t need = c + n;
    if (need > kv->max_model_len)
      need = kv->max_model_len;
    const int64_t more = (need + bs - 1) / bs - r->blocks[0].len;
    blocks += more > 0 ? more : 0;
    const int64_t end = c + n;
    if (first_alloc != INT64_MAX)
      continue;
    if (end > ((int64_t)r->blocks[0].len << sh))
      first_alloc = r->adm_seq; /* takes blocks (and may cache) */
    else if (first_cache == INT64_MAX && kv->prefix_caching && (end >> sh) != (c >> sh))
      first_cache = r->adm_seq; /* caches the blocks it fills */
  }
  if (demand > budget || blocks > kvsim_pool_num_free(&kv->pool)) {
    stop(m, s, true);
    return false;
  }
  if (m->takes.n > 0)
    take_in_place(m, s, first_alloc, first_cache);
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
  if (!kvsim__imp_allowed(s, window) || kvsim_reqvec_reserve(&m->ex, s->running.n) < 0) {
    /* No cohort: nothing kept either. */
    for (int32_t i = 0; i < m->kept.n; i++)
      m->kept.v[i]->imp_kept = false;
    m->kept.n = 0;
    for (int64_t i = 0; i <= m->mask; i++)
      m->ring[i].n = 0;
    return;
  }
  /* The step advanced the kept rows it scheduled by one token each, as
   * a fast step: the clock moves on, and those still in plain decode keep
   * their entries. The cohort forms from the running list, stamped in its
   * order. */
  if (m->kept.n > 0)
    m->clock++;
  m->on = true;
  for (int32_t i = 0; i < s->running.n; i++) {
    kvsim_request_t *r = s->running.v[i];
    r->adm_seq = ++m->seq;
    if (r->imp_kept) {
      r->imp_kept = false;
      if (plain_decode(r) && r->num_computed == r->imp_c + 1) {
        assert(r->imp_due >= m->clock);
        count_in(m, s, r);
        continue;
      }
      drop_entry(m, r);
    }
    if (!try_join(m, s, r))
      m->ex.v[m->ex.n++] = r;
  }
  /* Those no longer running (preempted) give their entries back. */
  for (int32_t i = 0; i < m->kept.n; i++) {
    kvsim_request_t *r = m->kept.v[i];
    if (r->imp_kept) {
      r->imp_kept = false;
      drop_entry(m, r);
    }
  }
  m->kept.n = 0;
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
