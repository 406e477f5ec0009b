/* The library side of `kvsim trace stats|convert|gen`: a workload built
 * from a trace file and the tool's flags, or from a JSON spec; the
 * convert loop; the generator's event loop; and the statistics as JSON.
 * cli/trace.c only parses flags, calls these and prints. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/arith.h"
#include "core/heap.h"
#include "core/util.h"
#include "core/vec.h"
#include "workload/wl.h"

/* ---- building the workload ------------------------------------------------------ */

int kvsim_workload_for_trace(const char *file, const kvsim_trace_opts_t *o,
                             kvsim_workload_cfg_t **out, kvsim_err *err) {
  *out = NULL;
  if (strcmp(o->format, "auto") && !kvsim__format_find(o->format)) {
    char esc[KVSIM__ESCAPE_MAX];
    return kvsim_err_set(err, KVSIM_EINVAL, "--format: bad value '%s' (expected %s)",
                         kvsim__escape(o->format, strlen(o->format), esc, sizeof esc),
                         kvsim__format_choices());
  }
  /* workload.time_scale's range, the registry's (kvsim/params.h). */
  const kvsim_param_t *ts = kvsim_param_get(KVSIM_PARAM_WL_TIME_SCALE);
  if (!kvsim_param_in_range(ts, o->time_scale))
    return kvsim_err_set(err, KVSIM_EINVAL, "--time-scale: bad value %g (expected > %g and <= %g)",
                         o->time_scale, ts->min, ts->max);
  if (o->limit < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--limit: bad value %lld (expected >= 1)",
                         (long long)o->limit);
  if (o->max_total_tokens != 0 && o->max_total_tokens < 2)
    return kvsim_err_set(err, KVSIM_EINVAL, "--max-total-tokens: bad value %lld (expected >= 2)",
                         (long long)o->max_total_tokens);
  /* Every flag is checked here, by its name: the object built below would
   * name a bad one as a key of a "workload" no file holds. The top is a
   * scenario's (a JSON integer). */
  if (o->hash_block_tokens < 1 || o->hash_block_tokens > KVSIM__JSON_INT_MAX)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--hash-block-tokens: bad value %lld (expected 1..%lld)",
                         (long long)o->hash_block_tokens, (long long)KVSIM__JSON_INT_MAX);
  if (o->seed_given) /* a trace's requests are read, never drawn */
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--seed: applies to synthetic specs only (%s is a trace file)", file);
  cJSON *w = cJSON_CreateObject();
  if (!w)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", file);
  cJSON_AddStringToObject(w, "trace", file);
  cJSON_AddStringToObject(w, "format", o->format);
  cJSON_AddNumberToObject(w, "time_scale", o->time_scale);
  cJSON_AddBoolToObject(w, "skip_bad_rows", o->skip_bad_rows);
  cJSON_AddNumberToObject(w, "hash_block_tokens", (double)o->hash_block_tokens);
  int rc = kvsim__workload_parse_file(w, o->allow_lengths, out, err);
  cJSON_Delete(w);
  /* Integers straight from the flags: through a JSON double they would
   * lose their low bits (and INT64_MAX would not come back). */
  if (rc >= 0) {
    (*out)->limit = o->limit > 0 ? o->limit : -1;
    (*out)->max_total_tokens = o->max_total_tokens;
  }
  return rc;
}

static char *dirname_of(const char *path) {
  size_t n = strlen(path) + 2;
  char *d = kvsim__malloc(n);
  if (d)
    kvsim__dirname(path, d, n);
  return d;
}

int kvsim_workload_for_spec(const char *file, int64_t *seed, bool seed_given,
                            kvsim_workload_cfg_t **out, kvsim_err *err) {
  *out = NULL;
  cJSON *j = kvsim__json_load(file, err);
  if (!j)
    return err ? err->code : KVSIM_EPARSE;
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "workload");
  char where[KVSIM__WL_PATH_MAX + 16];
  snprintf(where, sizeof where, "%s: workload", file);
  if (w) {
    /* A scenario: its seed unless one was given. */
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(j, "seed");
    int64_t v;
    if (!seed_given && cJSON_IsNumber(sd) && kvsim__double_to_i64(sd->valuedouble, &v))
      *seed = v;
  } else {
    w = j;
  }
  char *dir = dirname_of(file);
  int rc = dir ? kvsim_workload_parse(w, dir, where, out, err)
           : kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", file);
  kvsim__free(dir);
  cJSON_Delete(j);
  if (rc >= 0 && seed_given && !(*out)->synthetic) {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "--seed: applies to synthetic specs only (%s's workload is a trace)", file);
    kvsim_workload_cfg_free(*out);
    *out = NULL;
  }
  return rc;
}

bool kvsim_workload_reads(const kvsim_workload_cfg_t *cfg, const char *path) {
  const char *in[] = {cfg && !cfg->synthetic ? cfg->path : NULL,
                      cfg && cfg->synthetic && cfg->syn.lengths_file ? cfg->syn.lengths_path
                                                                     : NULL};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
    if (in[i] && kvsim__same_file(in[i], path))
      return true;
  return false;
}

static int check_out_not_input(const kvsim_workload_cfg_t *cfg, const char *input, const char *out,
                               kvsim_err *err) {
  const char *in = input && kvsim__same_file(input, out) ? input
                   : kvsim_workload_reads(cfg, out)
                       ? (cfg->synthetic ? cfg->syn.lengths_path : cfg->path)
                       : NULL;
  if (in)
    return kvsim_err_set(err, KVSIM_EINVAL, "--out: %s is the same file as the input %s", out, in);
  return KVSIM_OK;
}

int kvsim_trace_parse_lru_caps(const char *s, int64_t *caps, int *n) {
  *n = 0;
  const char *p = s;
  while (*p) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno || end == p || v < 1 || v > 100000000 || (*end && *end != ','))
      return -1;
    if (*n >= KVSIM_TRACE_MAX_LRU)
      return -1;
    caps[(*n)++] = v;
    if (*end == ',' && !end[1]) /* "1,": a trailing empty item */
      return -1;
    p = *end ? end + 1 : end;
  }
  return *n > 0 ? 0 : -1;
}

/* ---- convert ------------------------------------------------------------------------ */

int kvsim_trace_convert(const kvsim_workload_cfg_t *cfg, const char *input, kvsim_source_t *src,
                        const char *out, int64_t *n, kvsim_err *err) {
  kvsim__csv_writer_t w;
  *n = 0;
  int rc = check_out_not_input(cfg, input, out, err);
  if (rc < 0)
    return rc;
  rc = kvsim__csv_writer_open(&w, out, kvsim__source_columns(src), err);
  if (rc < 0)
    return rc;
  kvsim_req_spec_t spec;
  while ((rc = kvsim_source_next(src, &spec, err)) == KVSIM_SOURCE_REQUEST) {
    if ((rc = kvsim__csv_writer_row(&w, &spec, err)) < 0)
      break;
    (*n)++;
  }
  if (rc < 0) {
    kvsim__csv_writer_abort(&w);
    return rc;
  }
  return kvsim__csv_writer_commit(&w, err);
}

/* ---- gen: a small event loop, so that closed-loop clients and sessions get
 * their finish feedback (a server that answers after `latency`). ------------ */

typedef struct gev {
  bool finish;
  kvsim_req_spec_t spec; /* segments owned (copied) for arrivals */
} gev_t;

/* Heap entries stay small (core/heap.h moves at most 64 bytes); the
 * events sit in a pool whose free slots are reused. */
typedef struct gkey {
  kvsim_time_ns t;
  uint64_t seq;
  int64_t slot;
} gkey_t;

typedef struct gen {
  kvsim__vec(gkey_t) h; /* a binary heap ordered by (t, seq) */
  kvsim__vec(gev_t) ev;
  kvsim__vec(int64_t) free;
  uint64_t seq;
} gen_t;

static int gkey_less(const void *a, const void *b) {
  const gkey_t *x = a, *y = b;
  return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static int gen_push(gen_t *g, kvsim_time_ns t, gev_t e) {
  /* Room first, so that a failure changes nothing. */
  if (kvsim__vec_reserve(&g->h, g->h.n + 1) < 0 ||
      (g->free.n == 0 && kvsim__vec_reserve(&g->ev, g->ev.n + 1) < 0))
    return KVSIM_ENOMEM;
  int64_t slot = g->free.n > 0 ? g->free.v[--g->free.n] : g->ev.n++;
  g->ev.v[slot] = e;
  gkey_t k = {t, g->seq++, slot};
  g->h.v[g->h.n++] = k;
  kvsim__heap_up(g->h.v, sizeof k, g->h.n - 1, gkey_less);
  return 0;
}

static int gen_pop(gen_t *g, kvsim_time_ns *t, gev_t *e) {
  gkey_t k;
  kvsim__heap_pop(g->h.v, sizeof k, g->h.n--, &k, gkey_less);
  *t = k.t;
  *e = g->ev.v[k.slot];
  return kvsim__vec_push(&g->free, k.slot);
}

/* Pulls one request from the source as an arrival event. */
static int gen_pull(kvsim_source_t *src, gen_t *g, kvsim_err *err) {
  kvsim_req_spec_t s;
  int rc = kvsim_source_next(src, &s, err);
  if (rc != KVSIM_SOURCE_REQUEST)
    return rc;
  gev_t e = {.finish = false, .spec = s};
  if (s.num_segments > 0) {
    kvsim_segment_t *c = kvsim__malloc((size_t)s.num_segments * sizeof *c);
    if (!c)
      return kvsim_err_set(err, KVSIM_ENOMEM, "trace gen: out of memory");
    memcpy(c, s.segments, (size_t)s.num_segments * sizeof *c);
    e.spec.segments = c;
  }
  if (gen_push(g, s.arrival, e) < 0) {
    kvsim__free((void *)e.spec.segments);
    return kvsim_err_set(err, KVSIM_ENOMEM, "trace gen: out of memory");
  }
  return rc;
}

static int gen_loop(kvsim_source_t *src, kvsim__csv_writer_t *w, kvsim_time_ns latency, gen_t *g,
                    int64_t *n, kvsim_err *err) {
  int rc = gen_pull(src, g, err);
  while (rc >= 0 && g->h.n > 0) {
    kvsim_time_ns t;
    gev_t e;
    if (gen_pop(g, &t, &e) < 0) {
      if (!e.finish)
        kvsim__free((void *)e.spec.segments);
      return kvsim_err_set(err, KVSIM_ENOMEM, "trace gen: out of memory");
    }
    if (e.finish) {
      if (kvsim_source_on_finish(src, &e.spec, t, e.spec.output_tokens) > 0)
        rc = gen_pull(src, g, err);
      continue;
    }
    rc = kvsim__csv_writer_row(w, &e.spec, err);
    (*n)++;
    kvsim__free((void *)e.spec.segments);
    e.spec.segments = NULL;
    e.spec.num_segments = 0;
    e.finish = true;
    kvsim_time_ns done;
    if (!kvsim__add_i64(t, latency, &done))
      done = KVSIM_TIME_NEVER;
    if (rc >= 0 && gen_push(g, done, e) < 0)
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "trace gen: out of memory");
    if (rc >= 0)
      rc = gen_pull(src, g, err);
  }
  return rc;
}

int kvsim_trace_gen(const kvsim_workload_cfg_t *cfg, const char *input, kvsim_source_t *src,
                    const char *out, kvsim_time_ns latency, int64_t *n, kvsim_err *err) {
  kvsim__csv_writer_t w;
  gen_t g = {0};
  *n = 0;
  int rc = check_out_not_input(cfg, input, out, err);
  if (rc < 0)
    return rc;
  rc = kvsim__csv_writer_open(&w, out, kvsim__source_columns(src), err);
  if (rc < 0)
    return rc;
  rc = gen_loop(src, &w, latency, &g, n, err);
  for (int64_t i = 0; i < g.h.n; i++)
    if (!g.ev.v[g.h.v[i].slot].finish)
      kvsim__free((void *)g.ev.v[g.h.v[i].slot].spec.segments);
  kvsim__vec_free(&g.h);
  kvsim__vec_free(&g.ev);
  kvsim__vec_free(&g.free);
  if (rc < 0) {
    kvsim__csv_writer_abort(&w);
    return rc;
  }
  return kvsim__csv_writer_commit(&w, err);
}

/* ---- statistics as JSON ------------------------------------------------------------- */

static cJSON *len_json(const kvsim_len_stats_t *l) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "mean", l->mean);
  cJSON_AddNumberToObject(o, "p50", l->p50);
  cJSON_AddNumberToObject(o, "p90", l->p90);
  cJSON_AddNumberToObject(o, "p99", l->p99);
  cJSON_AddNumberToObject(o, "min", l->min);
  cJSON_AddNumberToObject(o, "max", l->max);
  return o;
}

cJSON *kvsim_trace_stats_json(const kvsim_trace_stats_t *st, const char *file, const char *format) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "file", file);
  cJSON_AddStringToObject(j, "format", format);
  cJSON_AddNumberToObject(j, "requests", (double)st->requests);
  cJSON_AddNumberToObject(j, "skipped_rows", (double)st->skipped);
  cJSON_AddNumberToObject(j, "clipped_requests", (double)st->clipped);
  /* A length table's timing figures are not known: null, and
   * "arrival_times": false says why. */
  if (!st->arrivals) {
    cJSON_AddFalseToObject(j, "arrival_times");
    static const char *const timing[] = {"duration_s",      "rate_rps",  "interarrival_mean_s",
                                         "interarrival_cv", "max_gap_s", "peak_requests_in_1s"};
    for (size_t k = 0; k < sizeof timing / sizeof *timing; k++)
      cJSON_AddNullToObject(j, timing[k]);
  } else {
    cJSON_AddNumberToObject(j, "duration_s", st->duration_s);
    cJSON_AddNumberToObject(j, "rate_rps", st->rate_rps);
    cJSON_AddNumberToObject(j, "interarrival_mean_s", st->interarrival_mean_s);
    cJSON_AddNumberToObject(j, "interarrival_cv", st->interarrival_cv);
    cJSON_AddNumberToObject(j, "max_gap_s", st->max_gap_s);
    cJSON_AddNumberToObject(j, "peak_requests_in_1s", (double)st->peak_1s);
  }
  cJSON_AddItemToObject(j, "prompt_tokens", len_json(&st->prompt));
  cJSON_AddItemToObject(j, "output_tokens", len_json(&st->output));
  if (st->prefix_block) {
    cJSON_AddNumberToObject(j, "prefix_block_size", (double)st->prefix_block);
    cJSON_AddNumberToObject(j, "prefix_blocks", (double)st->blocks);
    cJSON_AddNumberToObject(j, "prefix_blocks_distinct", (double)st->distinct_blocks);
    cJSON_AddNumberToObject(j, "ideal_prefix_hit_rate_blocks", st->ideal_hit_rate_blocks);
    cJSON_AddNumberToObject(j, "ideal_prefix_hit_rate_tokens", st->ideal_hit_rate_tokens);
    cJSON *l = cJSON_AddObjectToObject(j, "lru_hit_rate");
    for (int i = 0; i < st->nlru; i++) {
      char k[32];
      snprintf(k, sizeof k, "%lld", (long long)st->lru_capacity[i]);
      cJSON_AddNumberToObject(l, k, st->lru_hit_rate[i]);
    }
  }
  return j;
}
