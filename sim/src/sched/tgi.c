/* tgi: the text-generation-inference v3 router and its block allocator
 * (huggingface/text-generation-inference, backends/v3/src):
 * - queue.rs State::next_batch: entries leave the queue FIFO; each
 *   reserves input_length + max_new_tokens - 1 tokens of blocks up front
 *   (speculate 0), so decode never runs out and nothing is ever preempted
 *   (no preempt/requeue anywhere in backends/v3); when `allocate` returns
 *   None the entry goes back to the front and the batch closes (head of
 *   line). The prompt's postfix counts against the prefill budget; with
 *   prefill chunking the last entry is cut to the budget, without it the
 *   entry goes back.
 * - backend.rs batching_task: with chunking the budget is
 *   max_batch_prefill_tokens minus the running batch's current tokens, and
 *   new entries join the running batch (mixed steps); without chunking a
 *   new batch forms only if it reaches floor(batch_size x
 *   waiting_served_ratio) entries or max_waiting_tokens decode steps have
 *   passed, and prefills alone before joining.
 * - radix.rs RadixAllocator: a prefix trie over whole blocks, incref while
 *   in use, LRU eviction of unreferenced leaves; kvsim's prefix cache
 *   (chained block hashes, free cached blocks evicted least recent first)
 *   follows the same rules. Only flashinfer and flashdecoding allow prefix
 *   caching (launcher resolve_attention); the plan says which.
 * max_new_tokens is the request's output length (what a client sends), or
 * with reserve_max_total_tokens the server's default max_total_tokens -
 * input_length (router validation.rs when the client gives none). */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/params_json.h"
#include "core/util.h"
#include "kvsim/params.h"
#include "kvsim/sched.h"
#include "sched/opts_print.h"

typedef struct tgi_opts {
  double cuda_memory_fraction;
  double waiting_served_ratio;
  int32_t max_input_tokens, max_total_tokens, max_batch_prefill_tokens, max_batch_total_tokens;
  int32_t max_waiting_tokens;
  int32_t version_major, version_minor, version_patch;
  int32_t attention;
  bool reserve_max_total_tokens;
} tgi_opts_t;
_Static_assert(sizeof(tgi_opts_t) <= KVSIM_SCHED_OPTS_BYTES, "tgi options fit the buffer");

static const char *const option_keys[] = {"cuda_memory_fraction",
                                          "tgi_version",
                                          "attention",
                                          "max_input_tokens",
                                          "max_total_tokens",
                                          "max_batch_prefill_tokens",
                                          "max_batch_total_tokens",
                                          "waiting_served_ratio",
                                          "max_waiting_tokens",
                                          "reserve_max_total_tokens",
                                          NULL};

static int parse_opts(const cJSON *engine, const char *w, kvsim_sched_opts_t *opts,
                      kvsim_err *err) {
  tgi_opts_t *o = (tgi_opts_t *)opts->bytes;
  /* launcher/src/main.rs Args defaults. */
  double frac = 1.0, ratio = 0.3;
  int64_t in = 0, tot = 0, pre = 0, btot = 0, wait = 20;
  char ver[16] = "3.3", attn[16] = "";
  int rc;
  const int64_t hi = KVSIM_MODEL_MAX_CONTEXT;
  if ((rc = kvsim__json_num(engine, "cuda_memory_fraction", &frac, w, err)) < 0)
    return rc;
  char name[600];
  snprintf(name, sizeof name, "%s.cuda_memory_fraction", w);
  if ((rc = kvsim_param_check_num(KVSIM_PARAM_CUDA_MEMORY_FRACTION, frac, name, err)) < 0)
    return rc;
  /* The version as a string ("3.3.7"), or as a JSON number (3.3). */
  const cJSON *vj = engine ? cJSON_GetObjectItemCaseSensitive(engine, "tgi_version") : NULL;
  if (cJSON_IsNumber(vj))
    snprintf(ver, sizeof ver, "%.1f", vj->valuedouble);
  if ((!cJSON_IsNumber(vj) &&
       (rc = kvsim__json_str(engine, "tgi_version", ver, sizeof ver, w, err)) < 0) ||
      (rc = kvsim__json_num_in(engine, "waiting_served_ratio", 0, 1e6, &ratio, w, err)) < 0 ||
      /* 0 is the plan's "the server computes it" (plan_tgi.c), never a
       * value to give: the launcher takes none of these as 0. Left out, or
       * null, they keep the server's default. */
      (rc = kvsim__json_param_int(engine, KVSIM_PARAM_MAX_INPUT_TOKENS, &in, w, err)) < 0 ||
      (rc = kvsim__json_param_int(engine, KVSIM_PARAM_MAX_TOTAL_TOKENS, &tot, w, err)) < 0 ||
      (rc = kvsim__json_param_int(engine, KVSIM_PARAM_MAX_BATCH_PREFILL_TOKENS, &pre, w, err)) <
          0 ||
      (rc = kvsim__json_param_int(engine, KVSIM_PARAM_MAX_BATCH_TOTAL_TOKENS, &btot, w, err)) < 0 ||
      (rc = kvsim__json_int_in(engine, "max_waiting_tokens", 0, hi, &wait, w, err)) < 0 ||
      (rc = kvsim__json_str(engine, "attention", attn, sizeof attn, w, err)) < 0 ||
      (rc = kvsim__json_bool(engine, "reserve_max_total_tokens", &o->reserve_max_total_tokens, w,
                             err)) < 0)
    return rc;
  int major = 3, minor = 3, patch = 0;
  if (kvsim_tgi_release_parse(ver, &major, &minor, &patch) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.tgi_version: '%s' (expected a TGI release 2.0.0 to 2.4.1 or 3.x, e.g. 3.3)",
                         w, ver);
  /* Left out, the backend the release's launcher picks (resolve_attention). */
  kvsim_tgi_attention a = kvsim_tgi_default_attention(major, minor);
  if (attn[0] && kvsim_tgi_attention_parse(attn, &a) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.attention: '%s' (expected flashinfer, flashdecoding or paged)", w,
                         attn);
  o->cuda_memory_fraction = frac;
  o->waiting_served_ratio = ratio;
  o->max_input_tokens = (int32_t)in;
  o->max_total_tokens = (int32_t)tot;
  o->max_batch_prefill_tokens = (int32_t)pre;
  o->max_batch_total_tokens = (int32_t)btot;
  o->max_waiting_tokens = (int32_t)wait;
  o->version_major = major;
  o->version_minor = minor;
  o->version_patch = patch;
  o->attention = (int32_t)a;
  return KVSIM_OK;
}

/* The options in option_keys' order; the memory share from the plan's
 * parameters (set_fraction), the release as MAJOR.MINOR.PATCH. */
static int print_opts(const kvsim_sched_opts_t *opts, const kvsim_plan_params_t *p, cJSON *engine) {
  const tgi_opts_t *o = (const tgi_opts_t *)opts->bytes;
  char ver[48];
  snprintf(ver, sizeof ver, "%d.%d.%d", o->version_major, o->version_minor, o->version_patch);
  kvsim__optout_t out = kvsim__optout(option_keys, opts, engine);
  kvsim__optout_num(&out, "cuda_memory_fraction", p->tgi.cuda_memory_fraction);
  kvsim__optout_str(&out, "tgi_version", ver);
  kvsim__optout_str(&out, "attention", kvsim_tgi_attention_name((kvsim_tgi_attention)o->attention));
  kvsim__optout_num(&out, "max_input_tokens", o->max_input_tokens);
  kvsim__optout_num(&out, "max_total_tokens", o->max_total_tokens);
  kvsim__optout_num(&out, "max_batch_prefill_tokens", o->max_batch_prefill_tokens);
  kvsim__optout_num(&out, "max_batch_total_tokens", o->max_batch_total_tokens);
  kvsim__optout_num(&out, "waiting_served_ratio", o->waiting_served_ratio);
  kvsim__optout_num(&out, "max_waiting_tokens", o->max_waiting_tokens);
  kvsim__optout_bool(&out, "reserve_max_total_tokens", o->reserve_max_total_tokens);
  return out.rc;
}

/* TGI's share is --cuda-memory-fraction (launcher); the plan derives the
 * utilization from it (memory/plan_tgi.c), so vLLM's key is never read. */
static const char *const ignored_keys[] = {"gpu_memory_utilization", NULL};

static void set_fraction(kvsim_plan_params_t *p, double f) { p->tgi.cuda_memory_fraction = f; }

static void plan_opts(const kvsim_sched_opts_t *opts, kvsim_plan_params_t *p) {
  const tgi_opts_t *o = (const tgi_opts_t *)opts->bytes;
  p->tgi.cuda_memory_fraction = o->cuda_memory_fraction;
  p->tgi.version_major = o->version_major;
  p->tgi.version_minor = o->version_minor;
  p->tgi.version_patch = o->version_patch;
  p->tgi.attention = (kvsim_tgi_attention)o->attention;
  p->tgi.max_input_tokens = o->max_input_tokens;
  p->tgi.max_total_tokens = o->max_total_tokens;
  p->tgi.max_batch_prefill_tokens = o->max_batch_prefill_tokens;
  p->tgi.max_batch_total_tokens = o->max_batch_total_tokens;
}

typedef struct tgi {
  kvsim_sched_t s;
  int64_t waiting_tokens; /* decode steps since the last new batch (backend.rs) */
  bool prefix;            /* prefix lookups: the attention backend allows them */
} tgi_t;

static int init(kvsim_sched_t *s, kvsim_err *err) {
  (void)err;
  tgi_t *v = (tgi_t *)s;
  /* The plan chunks prefill exactly when the backend is flashinfer or
   * flashdecoding, the two that allow prefix caching. */
  v->prefix = s->cfg.enable_prefix_caching && s->cfg.enable_chunked_prefill;
  v->waiting_tokens = 1;
  /* radix.rs RadixAllocator::free: only the prompt's blocks enter the trie. */
  s->kv->cache_prompt_only = true;
  return KVSIM_OK;
}

/* Tokens of KV r reserves: input + max_new_tokens - 1, within max_total_tokens. */
static int64_t reservation(const kvsim_sched_t *s, const kvsim_request_t *r) {
  const tgi_opts_t *o = kvsim_sched_opts(s);
  int64_t total =
      o->reserve_max_total_tokens ? s->cfg.max_model_len : kvsim_request_total_tokens(r);
  if (total > s->cfg.max_model_len)
    total = s->cfg.max_model_len;
  return total > r->num_tokens ? total - 1 : r->num_tokens;
}

static void step_add(kvsim_step_t *step, kvsim_request_t *r, int64_t n) {
  r->step_new = (int32_t)n;
  step->reqs.v[step->reqs.n++] = r;
  step->num_tokens += n;
}

/* next_batch: admits from the queue's front into running and the step,
 * within `budget` prefill tokens; stops at the first entry whose blocks do
 * not fit. Returns the number admitted, or a negative code. */
static int64_t next_batch(tgi_t *v, kvsim_time_ns now, int64_t budget, kvsim_step_t *step) {
  kvsim_sched_t *s = &v->s;
  int64_t admitted = 0;
  while (s->waiting.n && budget > 0 && s->running.n < s->cfg.max_num_seqs) {
    kvsim_request_t *r = kvsim_waitq_peek(&s->waiting);
    if (kvsim_reqvec_reserve(&s->running, s->running.n + 1) < 0 ||
        kvsim_reqvec_reserve(&step->reqs, step->reqs.n + 1) < 0)
      return KVSIM_ENOMEM;
    int64_t hit = 0;
    /* radix.rs find: whole blocks, at least one prompt token computed. */
    if (v->prefix && (hit = kvsim_kvcache_lookup(s->kv, r, false)) < 0)
      return hit;
    int64_t n = r->num_tokens - hit;
    if (n > budget) {
      /* Without chunking the entry goes back and the batch closes. TGI's
       * validation refuses prompts past max_input_tokens (<=
       * max_batch_prefill_tokens, a launcher rule); kvsim's gateway checks
       * the total length only, so such a prompt runs alone on an idle
       * replica rather than block the queue for ever. */
      if (!s->cfg.enable_chunked_prefill && (admitted || s->running.n))
        break;
      if (s->cfg.enable_chunked_prefill)
        n = budget;
    }
    int64_t ahead = reservation(s, r) - hit - n;
    int rc = kvsim_kvcache_allocate(s->kv, r, hit, n, ahead > 0 ? ahead : 0);
    if (rc < 0)
      return rc;
    if (!rc)
      break; /* "Over budget: not enough free blocks" */
    kvsim_waitq_pop(&s->waiting);
    r->num_computed = hit;
    r->first_scheduled = now;
    r->num_cached_tokens = hit;
    r->status = KVSIM_REQ_RUNNING;
    s->running.v[s->running.n++] = r;
    step_add(step, r, n);
    budget -= n;
    admitted++;
  }
  return admitted;
}

/* Undoes the admission of the last `n` running requests (a new batch
 * below min_size: next_batch returns None and its allocations drop). */
static void cancel(kvsim_sched_t *s, kvsim_step_t *step, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    kvsim_request_t *r = s->running.v[--s->running.n];
    kvsim_kvcache_free(s->kv, r);
    r->num_computed = 0;
    r->step_new = 0;
    r->status = KVSIM_REQ_WAITING;
    r->first_scheduled = KVSIM_TIME_NEVER;
    r->num_cached_tokens = 0;
    step->reqs.n--;
    kvsim_waitq_push_front(&s->waiting, r); /* room: it just left the queue */
  }
  step->num_tokens = 0;
  for (int32_t i = 0; i < step->reqs.n; i++)
    step->num_tokens += step->reqs.v[i]->step_new;
}

static int schedule(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step) {
  tgi_t *v = (tgi_t *)s;
  const tgi_opts_t *o = kvsim_sched_opts(s);
  if (kvsim_reqvec_reserve(&step->reqs, s->running.n) < 0)
    return KVSIM_ENOMEM;
  int64_t budget = s->cfg.max_num_batched_tokens;
  if (s->cfg.enable_chunked_prefill) {
    /* The running batch: a decode token each, or the next prompt chunk;
     * their blocks are reserved, so this cannot fail for want of blocks. */
    for (int32_t i = 0; i < s->running.n; i++) {
      kvsim_request_t *r = s->running.v[i];
      int64_t n = r->num_tokens - r->num_computed;
      if (r->num_computed < r->num_prompt && n > budget)
        n = budget > 0 ? budget : 0;
      if (n <= 0)
        continue;
      int rc = kvsim_kvcache_allocate_running(s->kv, r, n);
      if (rc <= 0)
        return rc < 0 ? rc : KVSIM_EINVAL; /* 0: a reservation was short (a bug) */
      step_add(step, r, n);
      budget -= n;
    }
    int64_t rc = next_batch(v, now, budget, step);
    return rc < 0 ? (int)rc : KVSIM_OK;
  }
  /* Without chunking: try a new batch first; it prefills alone. */
  if (s->waiting.n) {
    int64_t min_size = 0;
    if (s->running.n && v->waiting_tokens < o->max_waiting_tokens)
      min_size = (int64_t)floor((double)s->running.n * o->waiting_served_ratio);
    int64_t n = next_batch(v, now, budget, step);
    if (n < 0)
      return (int)n;
    if (n > 0 && n < min_size)
      cancel(s, step, n);
    else if (n > 0) {
      v->waiting_tokens = 1;
      return KVSIM_OK;
    }
  }
  for (int32_t i = 0; i < s->running.n; i++) {
    kvsim_request_t *r = s->running.v[i];
    /* One token, or a whole prompt admitted by a step that then failed. */
    int64_t n = r->num_tokens - r->num_computed;
    int rc = kvsim_kvcache_allocate_running(s->kv, r, n);
    if (rc <= 0)
      return rc < 0 ? rc : KVSIM_EINVAL;
    step_add(step, r, n);
  }
  if (s->running.n)
    v->waiting_tokens++;
  return KVSIM_OK;
}

static int add(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now) {
  (void)now;
  return kvsim_waitq_push_back(&s->waiting, r);
}

const kvsim_sched_ops_t kvsim__sched_tgi = {
    .name = "tgi",
    .help = "HF TGI v3: warmup-sized pool, prompt + max_new_tokens reserved up front (no "
            "preemption), FCFS with head-of-line blocking, prefix trie",
    .size = sizeof(tgi_t),
    /* PREFIX_CACHING defaults to true (launcher resolve_attention); no swap. */
    .plan_engine = KVSIM_PLAN_TGI,
    .defaults = {.enable_prefix_caching = true, .recompute_only = true},
    .option_keys = option_keys,
    .parse_opts = parse_opts,
    .print_opts = print_opts,
    .plan_params = plan_opts,
    .ignored_keys = ignored_keys,
    .fraction_key = "cuda_memory_fraction",
    .set_fraction = set_fraction,
    .init = init,
    .add = add,
    .schedule = schedule,
    .update = kvsim_sched_update_tokens,
};
