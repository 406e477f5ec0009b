/* Synthetic workloads: an open-loop arrival process (Poisson, Gamma,
 * constant, bursts, diurnal) or closed-loop clients, lengths from
 * distributions or a length file, and prefix structure (shared system
 * prompts, few-shot templates, multi-turn sessions), tenants, priorities.
 *
 * Randomness: the open-loop process and the requests it creates draw from
 * one mt19937 seeded with `seed`. Sessions and closed-loop clients draw
 * from their own small taus2 stream seeded from (seed, index), so a
 * session's lengths do not depend on the order in which the engine
 * finishes requests, and two engine settings see the same traffic.
 * Steady state allocates nothing: session slots, their rngs and segment
 * arrays are reused through a free list. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/arith.h"
#include "core/heap.h"
#include "core/vec.h"
#include "workload/wl.h"

typedef struct stream {
  gsl_rng *r;
  kvsim_segment_t *segs; /* context so far: previous prompts and answers */
  int32_t n, cap;
  int64_t ctx;           /* tokens in segs */
  int64_t session;       /* -1: none */
  int32_t turn, turns;
  int32_t tenant, priority;
  int32_t lora;          /* the session's LoRA adapter (0: the base model) */
  int64_t fresh;         /* closed loop: fresh prompts this client has started */
  bool active;           /* a session is in progress */
  int32_t next_free;
} stream_t;

typedef struct hentry {
  kvsim_time_ns t;
  uint64_t seq;
  int32_t slot;
} hentry_t;

struct kvsim__synth {
  const kvsim__synth_cfg_t *c;
  uint64_t seed;
  gsl_rng *main;
  /* The requests' LoRA adapters: a stream of their own, so that the
   * traffic drawn is the same with and without adapters. */
  gsl_rng *lora;
  /* open loop */
  bool open_done;
  bool past_horizon; /* ended at MAX_ARRIVAL_S, not by duration_s */
  bool have_next;
  kvsim_time_ns next_open;
  int64_t open_index;
  double t_s;
  kvsim_time_ns dur_ns; /* KVSIM_TIME_NEVER: no duration cap */
  /* streams (sessions or clients) */
  stream_t *st;
  int32_t nst, capst, free_head;
  kvsim__u64map_t sess_map;
  /* pending next turns / client requests */
  kvsim__vec(hentry_t) h;
  uint64_t seq;
  int64_t emitted, busy;
  int64_t next_session;
  uint64_t next_user_seg;
  int64_t *template_len;
  kvsim_segment_t *out;
  int32_t outcap;
};

static uint64_t splitmix(uint64_t x) { return kvsim__splitmix64(&x); }

static unsigned long stream_seed(uint64_t seed, uint64_t kind, uint64_t index) {
  return (unsigned long)splitmix(splitmix(seed ^ (kind << 56)) ^ index);
}

/* A request's LoRA adapter (0: the base model): the next draw of the
 * adapters' own stream, or, with key >= 0, a draw of that stream seeded
 * from (seed, kind, key), so that a session or a closed-loop client gets
 * the same adapter whatever order the engine finishes requests in. */
static int32_t draw_lora(kvsim__synth_t *s, uint64_t kind, int64_t key) {
  const kvsim__synth_cfg_t *c = s->c;
  if (c->lora_adapters <= 0)
    return 0;
  if (key >= 0)
    gsl_rng_set(s->lora, stream_seed(s->seed, kind, (uint64_t)key));
  if (c->lora_fraction < 1 && !(gsl_rng_uniform(s->lora) < c->lora_fraction))
    return 0;
  return (int32_t)kvsim__pick_draw(&c->lora_pick, s->lora) + 1;
}

/* ---- pending requests: core/heap.h ordered by (time, seq) ----------------- */

static int h_less(const void *a, const void *b) {
  const hentry_t *x = a, *y = b;
  return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static int h_push(kvsim__synth_t *s, kvsim_time_ns t, int32_t slot) {
  if (kvsim__vec_reserve(&s->h, s->h.n + 1) < 0)
    return KVSIM_ENOMEM;
  hentry_t e = {t, s->seq++, slot};
  s->h.v[s->h.n++] = e;
  kvsim__heap_up(s->h.v, sizeof e, s->h.n - 1, h_less);
  return 0;
}

static hentry_t h_pop(kvsim__synth_t *s) {
  hentry_t top;
  kvsim__heap_pop(s->h.v, sizeof top, s->h.n--, &top, h_less);
  return top;
}

/* ---- streams ----------------------------------------------------------------- */

static int32_t stream_alloc(kvsim__synth_t *s) {
  if (s->free_head >= 0) {
    int32_t i = s->free_head;
    s->free_head = s->st[i].next_free;
    return i;
  }
  if (kvsim__grow32((void **)&s->st, &s->capst, (int64_t)s->nst + 1, sizeof *s->st) < 0)
    return -1;
  stream_t *t = &s->st[s->nst];
  memset(t, 0, sizeof *t);
  t->r = gsl_rng_alloc(gsl_rng_taus2);
  if (!t->r)
    return -1;
  return s->nst++;
}

static void stream_release(kvsim__synth_t *s, int32_t slot) {
  stream_t *t = &s->st[slot];
  if (t->session >= 0)
    kvsim__u64map_del(&s->sess_map, (uint64_t)t->session);
  t->active = false;
  t->session = -1;
  t->next_free = s->free_head;
  s->free_head = slot;
}

static int seg_push(kvsim_segment_t **a, int32_t *n, int32_t *cap, uint64_t id, int64_t len) {
  if (kvsim__grow32((void **)a, cap, (int64_t)*n + 1, sizeof **a) < 0)
    return KVSIM_ENOMEM;
  (*a)[*n].id = id;
  (*a)[*n].len = len;
  (*n)++;
  return 0;
}

/* ---- drawing a request's content ------------------------------------------------ */

static void draw_lengths(const kvsim__synth_t *s, gsl_rng *r, bool later_turn, int64_t *p,
                         int64_t *o) {
  const kvsim__synth_cfg_t *c = s->c;
  if (c->lengths_file) {
    int64_t i = (int64_t)gsl_rng_uniform_int(r, (unsigned long)c->num_lengths);
    *p = c->lengths[2 * i];
    *o = c->lengths[2 * i + 1];
  } else {
    *p = kvsim__dist_draw(&c->prompt, r);
    *o = kvsim__dist_draw(&c->output, r);
  }
  if (later_turn && c->user_set)
    *p = kvsim__dist_draw(&c->user, r);
}

/* The start of a fresh prompt: tenant, priority, system prompt, template,
 * then the user's text. Appends segments to (*a, *n). */
static int fresh_prompt(kvsim__synth_t *s, gsl_rng *r, kvsim_segment_t **a, int32_t *n,
                        int32_t *cap, int32_t *tenant, int32_t *prio, int64_t *prompt,
                        int64_t *output) {
  const kvsim__synth_cfg_t *c = s->c;
  int64_t tok = 0;
  *tenant = c->tenants > 0 ? (int32_t)kvsim__pick_draw(&c->tenant_pick, r) : 0;
  *prio = c->priority_levels > 0 ? (int32_t)gsl_ran_discrete(r, c->priority_table) : 0;
  if (c->prefix && (c->prefix_fraction >= 1 || gsl_rng_uniform(r) < c->prefix_fraction)) {
    int64_t g = kvsim__pick_draw(&c->group_pick, r);
    if (seg_push(a, n, cap, KVSIM__SEG_GROUP | (uint64_t)g, c->shared_tokens) < 0)
      return KVSIM_ENOMEM;
    tok += c->shared_tokens;
  }
  if (c->few_shot && (c->few_shot_fraction >= 1 || gsl_rng_uniform(r) < c->few_shot_fraction)) {
    int64_t t = kvsim__pick_draw(&c->template_pick, r);
    if (seg_push(a, n, cap, KVSIM__SEG_TEMPLATE | (uint64_t)t, s->template_len[t]) < 0)
      return KVSIM_ENOMEM;
    tok += s->template_len[t];
  }
  int64_t p, o;
  draw_lengths(s, r, false, &p, &o);
  if (seg_push(a, n, cap, KVSIM__SEG_USER | s->next_user_seg++, p) < 0)
    return KVSIM_ENOMEM;
  *prompt = tok + p;
  *output = o;
  return 0;
}

static int out_copy(kvsim__synth_t *s, const kvsim_segment_t *a, int32_t n) {
  if (kvsim__grow32((void **)&s->out, &s->outcap, n, sizeof *s->out) < 0)
    return KVSIM_ENOMEM;
  memcpy(s->out, a, (size_t)n * sizeof *a);
  return 0;
}

/* Builds the next request of stream `slot` at time t. Returns 1 when a
 * request was built, 0 when the session ended instead (max_context). */
static int stream_request(kvsim__synth_t *s, int32_t slot, kvsim_time_ns t,
                          kvsim_req_spec_t *spec) {
  const kvsim__synth_cfg_t *c = s->c;
  stream_t *st = &s->st[slot];
  int64_t prompt, output;
  if (!c->sessions || !st->active) {
    st->n = 0;
    if (fresh_prompt(s, st->r, &st->segs, &st->n, &st->cap, &st->tenant, &st->priority, &prompt,
                     &output) < 0)
      return KVSIM_ENOMEM;
    st->ctx = prompt;
    st->turn = 0;
    /* Every turn of a session talks to the same adapter. Clients are
     * keyed by (slot, fresh prompts so far), open sessions by their id. */
    st->lora = c->arrival == KVSIM__ARR_CLOSED
                   ? draw_lora(s, 5, (int64_t)(((uint64_t)slot << 40) | (uint64_t)st->fresh++))
                   : draw_lora(s, 6, st->session);
    if (c->sessions) {
      int64_t turns = kvsim__dist_draw(&c->turns, st->r);
      st->turns = (int32_t)(turns > INT32_MAX ? INT32_MAX : turns);
      st->active = true;
      if (st->session < 0)
        st->session = s->next_session++;
    }
  } else {
    int64_t p;
    draw_lengths(s, st->r, true, &p, &output);
    if (c->max_context > 0 && st->ctx + p + output > c->max_context)
      return 0;
    if (seg_push(&st->segs, &st->n, &st->cap, KVSIM__SEG_USER | s->next_user_seg++, p) < 0)
      return KVSIM_ENOMEM;
    st->ctx += p;
    prompt = st->ctx;
  }
  if (out_copy(s, st->segs, st->n) < 0)
    return KVSIM_ENOMEM;
  spec->arrival = t;
  spec->prompt_tokens = prompt;
  spec->output_tokens = output;
  spec->tenant = st->tenant;
  spec->priority = st->priority;
  spec->lora = st->lora;
  spec->session = c->sessions ? st->session : -1;
  spec->turn = st->turn;
  spec->segments = s->out;
  spec->num_segments = st->n;
  return 1;
}

/* ---- open-loop arrival process --------------------------------------------------- */

static double rate_at(const kvsim__synth_cfg_t *c, double t) {
  if (c->arrival == KVSIM__ARR_BURSTS)
    return fmod(t, c->period_s) < c->burst_s ? c->burst_rate : c->rate;
  return c->rate * (1 + c->amplitude * sin(2 * 3.14159265358979323846 * (t + c->phase_s) / c->period_s));
}

/* Arrivals past KVSIM_TIME_MAX_S (285 years) end the open-loop stream:
 * the run could not hold them (a tiny rate would get there). */
#define MAX_ARRIVAL_S KVSIM_TIME_MAX_S

static void advance_open(kvsim__synth_t *s) {
  const kvsim__synth_cfg_t *c = s->c;
  int64_t i = s->open_index++;
  switch (c->arrival) {
  case KVSIM__ARR_CONSTANT:
    /* From the index, so that rounding never accumulates. */
    s->t_s = (double)i / c->rate;
    if (s->t_s <= MAX_ARRIVAL_S)
      s->next_open = (kvsim_time_ns)llround((double)i * 1e9 / c->rate);
    break;
  case KVSIM__ARR_POISSON:
  case KVSIM__ARR_GAMMA:
    /* Like vLLM's benchmark: the first request at t = 0, then gaps. */
    if (i > 0)
      s->t_s += c->arrival == KVSIM__ARR_POISSON
                    ? gsl_ran_exponential(s->main, 1.0 / c->rate)
                    : gsl_ran_gamma(s->main, 1.0 / (c->cv * c->cv), c->cv * c->cv / c->rate);
    if (s->t_s <= MAX_ARRIVAL_S)
      s->next_open = kvsim_time_from_s(s->t_s);
    break;
  default: {
    /* Non-homogeneous Poisson by thinning (Lewis and Shedler). */
    double lmax = c->arrival == KVSIM__ARR_BURSTS ? fmax(c->rate, c->burst_rate)
                                                  : c->rate * (1 + c->amplitude);
    for (;;) {
      /* Bursts with no traffic between them: nothing can arrive before the
       * next window, so start there (the process has no memory). Thinning
       * through the gap cost one draw per 1 / burst_rate seconds of it. */
      if (c->arrival == KVSIM__ARR_BURSTS && c->rate == 0 &&
          fmod(s->t_s, c->period_s) >= c->burst_s)
        s->t_s = (floor(s->t_s / c->period_s) + 1) * c->period_s;
      s->t_s += gsl_ran_exponential(s->main, 1.0 / lmax);
      if (gsl_rng_uniform(s->main) * lmax < rate_at(c, s->t_s))
        break;
      if (!(s->t_s <= MAX_ARRIVAL_S)) /* rate 0 for ever: give up */
        break;
    }
    if (s->t_s <= MAX_ARRIVAL_S)
      s->next_open = kvsim_time_from_s(s->t_s);
    break;
  }
  }
  if (!(s->t_s <= MAX_ARRIVAL_S))
    s->open_done = s->past_horizon = true;
  else if (s->next_open > s->dur_ns)
    s->open_done = true;
  s->have_next = !s->open_done;
}

/* ---- API ---------------------------------------------------------------------------- */

int kvsim__synth_open(const kvsim__synth_cfg_t *c, uint64_t seed, kvsim__synth_t **out,
                      kvsim_err *err) {
  *out = NULL;
  kvsim__synth_t *s = kvsim__calloc(1, sizeof *s);
  if (!s)
    return kvsim_err_set(err, KVSIM_ENOMEM, "synthetic workload: out of memory");
  s->c = c;
  s->seed = seed;
  s->free_head = -1;
  s->dur_ns = c->duration_s > 0 ? kvsim_time_from_s(c->duration_s) : KVSIM_TIME_NEVER;
  s->main = gsl_rng_alloc(gsl_rng_mt19937);
  if (!s->main || kvsim__u64map_init(&s->sess_map, 64) < 0)
    goto oom;
  gsl_rng_set(s->main, (unsigned long)seed);
  if (c->lora_adapters > 0) {
    if (!(s->lora = gsl_rng_alloc(gsl_rng_taus2)))
      goto oom;
    gsl_rng_set(s->lora, stream_seed(seed, 4, 0));
  }
  if (c->few_shot) {
    /* Template lengths: fixed per source, from their own stream. */
    s->template_len = kvsim__malloc((size_t)c->templates * sizeof *s->template_len);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_taus2);
    if (!s->template_len || !r) {
      if (r)
        gsl_rng_free(r);
      goto oom;
    }
    gsl_rng_set(r, stream_seed(seed, 3, 0));
    for (int64_t i = 0; i < c->templates; i++)
      s->template_len[i] = kvsim__dist_draw(&c->template_tokens, r);
    gsl_rng_free(r);
  }
  if (c->arrival == KVSIM__ARR_CLOSED) {
    s->open_done = true;
    for (int64_t i = 0; i < c->clients; i++) {
      int32_t slot = stream_alloc(s);
      if (slot < 0)
        goto oom;
      s->st[slot].session = -1;
      gsl_rng_set(s->st[slot].r, stream_seed(seed, 1, (uint64_t)i));
      if (h_push(s, 0, slot) < 0)
        goto oom;
    }
  } else {
    advance_open(s);
  }
  *out = s;
  return 0;
oom:
  kvsim__synth_close(s);
  return kvsim_err_set(err, KVSIM_ENOMEM, "synthetic workload: out of memory");
}

static int oom(kvsim_err *err) {
  return kvsim_err_set(err, KVSIM_ENOMEM, "synthetic workload: out of memory");
}

/* The next turn of a session or closed-loop client from the heap of
 * their due times: 1 emitted, 0 none (the stream ended past the run's
 * duration or its context), < 0 out of memory. */
static int next_from_heap(kvsim__synth_t *s, bool closed, kvsim_req_spec_t *spec) {
  hentry_t e = h_pop(s);
  if (e.t > s->dur_ns) {
    if (!closed)
      stream_release(s, e.slot);
    return 0;
  }
  int rc = stream_request(s, e.slot, e.t, spec);
  if (rc < 0)
    return rc;
  if (rc == 0) {
    /* The session would outgrow max_context: it ends here. */
    if (!closed) {
      stream_release(s, e.slot);
      return 0;
    }
    s->st[e.slot].active = false;
    s->st[e.slot].session = -1;
    if ((rc = stream_request(s, e.slot, e.t, spec)) < 0)
      return rc;
  }
  if (closed)
    spec->client = e.slot;
  s->busy++;
  return 1;
}

/* A new session opens with its first turn. */
static int open_session(kvsim__synth_t *s, kvsim_req_spec_t *spec) {
  kvsim_time_ns t = s->next_open;
  advance_open(s);
  int32_t slot = stream_alloc(s);
  if (slot < 0)
    return KVSIM_ENOMEM;
  stream_t *st = &s->st[slot];
  st->active = false;
  st->session = s->next_session++;
  gsl_rng_set(st->r, stream_seed(s->seed, 2, (uint64_t)st->session));
  if (kvsim__u64map_put(&s->sess_map, (uint64_t)st->session, slot) < 0)
    return KVSIM_ENOMEM;
  if (stream_request(s, slot, t, spec) < 0)
    return KVSIM_ENOMEM;
  s->busy++;
  return 1;
}

/* An open-loop arrival with a fresh prompt. */
static int open_arrival(kvsim__synth_t *s, kvsim_req_spec_t *spec) {
  kvsim_time_ns t = s->next_open;
  advance_open(s);
  int32_t n = 0;
  int64_t prompt, output;
  int32_t tenant, prio;
  if (fresh_prompt(s, s->main, &s->out, &n, &s->outcap, &tenant, &prio, &prompt, &output) < 0)
    return KVSIM_ENOMEM;
  spec->arrival = t;
  spec->prompt_tokens = prompt;
  spec->output_tokens = output;
  spec->tenant = tenant;
  spec->priority = prio;
  spec->lora = draw_lora(s, 0, -1); /* open-loop arrivals: in arrival order */
  /* A prompt of only its own text needs no segments. */
  bool shared = n > 1;
  spec->segments = shared ? s->out : NULL;
  spec->num_segments = shared ? n : 0;
  if (!shared)
    s->next_user_seg--;
  return 1;
}

int kvsim__synth_next(kvsim__synth_t *s, kvsim_req_spec_t *spec, kvsim_err *err) {
  const kvsim__synth_cfg_t *c = s->c;
  bool closed = c->arrival == KVSIM__ARR_CLOSED;
  for (;;) {
    if (c->requests > 0 && s->emitted >= c->requests)
      return KVSIM_SOURCE_END;
    bool from_heap = s->h.n > 0 && (!s->have_next || s->h.v[0].t <= s->next_open);
    if (!from_heap && !s->have_next && s->past_horizon && c->requests > 0)
      return kvsim_err_set(
          err, KVSIM_EINVAL,
          "synthetic workload: arrivals passed %g s (285 years) after %lld of the %lld requests; "
          "raise the arrival rate, lower think_s or lower requests",
          MAX_ARRIVAL_S, (long long)s->emitted, (long long)c->requests);
    if (!from_heap && !s->have_next)
      return s->busy > 0 ? KVSIM_SOURCE_BLOCKED : KVSIM_SOURCE_END;
    memset(spec, 0, sizeof *spec);
    spec->client = -1;
    spec->session = -1;
    int rc = from_heap ? next_from_heap(s, closed, spec)
             : c->sessions ? open_session(s, spec)
                           : open_arrival(s, spec);
    if (rc < 0)
      return oom(err);
    if (rc == 0)
      continue;
    s->emitted++;
    return KVSIM_SOURCE_REQUEST;
  }
}

int kvsim__synth_on_finish(kvsim__synth_t *s, const kvsim_req_spec_t *spec, kvsim_time_ns t,
                           int64_t generated) {
  const kvsim__synth_cfg_t *c = s->c;
  bool closed = c->arrival == KVSIM__ARR_CLOSED;
  int32_t slot = -1;
  if (closed) {
    if (spec->client < 0 || spec->client >= s->nst)
      return 0;
    slot = spec->client;
  } else if (c->sessions && spec->session >= 0) {
    slot = kvsim__u64map_get(&s->sess_map, (uint64_t)spec->session);
    if (slot < 0)
      return 0;
  } else {
    return 0;
  }
  if (s->busy > 0)
    s->busy--;
  stream_t *st = &s->st[slot];
  bool cap_hit = c->requests > 0 && s->emitted >= c->requests;
  kvsim_time_ns next = t;
  bool session_goes_on = false;
  if (c->sessions && st->active && !cap_hit) {
    if (generated > 0 && st->turn + 1 < st->turns) {
      if (seg_push(&st->segs, &st->n, &st->cap, kvsim_output_segment_id(spec->id), generated) < 0)
        return 0;
      st->ctx += generated;
      st->turn++;
      session_goes_on = true;
      if (!kvsim__add_i64(t, kvsim_time_from_s(c->session_think_s), &next))
        next = KVSIM_TIME_NEVER;
    } else {
      st->active = false;
    }
  }
  if (!session_goes_on) {
    if (!closed || cap_hit) {
      if (!closed)
        stream_release(s, slot);
      return 0;
    }
    st->active = false;
    st->session = -1;
    if (!kvsim__add_i64(t, kvsim_time_from_s(c->think_s), &next))
      next = KVSIM_TIME_NEVER;
  }
  /* Past the duration, or past the end of time: the stream ends here. */
  if (next > s->dur_ns || next == KVSIM_TIME_NEVER || next > kvsim_time_from_s(MAX_ARRIVAL_S)) {
    if (next <= s->dur_ns || s->dur_ns == KVSIM_TIME_NEVER)
      s->past_horizon = true; /* kvsim__synth_next says so if requests are left */
    if (!closed)
      stream_release(s, slot);
    return 0;
  }
  if (h_push(s, next, slot) < 0)
    return 0;
  return 1;
}

void kvsim__synth_close(kvsim__synth_t *s) {
  if (!s)
    return;
  for (int32_t i = 0; i < s->nst; i++) {
    gsl_rng_free(s->st[i].r);
    free(s->st[i].segs);
  }
  free(s->st);
  kvsim__vec_free(&s->h);
  free(s->out);
  free(s->template_len);
  kvsim__u64map_fini(&s->sess_map);
  if (s->main)
    gsl_rng_free(s->main);
  if (s->lora)
    gsl_rng_free(s->lora);
  free(s);
}
