/* kvsim trace stats|convert|gen: inspect a trace (counts, rate,
 * burstiness, length percentiles, prefix reuse), convert any format to
 * kvsim CSV, and write a synthetic workload out as kvsim CSV. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "core/util.h"
#include "kvsim/report.h"
#include "kvsim/workload.h"
#include "workload/wl.h"

#define DEFAULT_LRU "1000,5000,20000,50000"

typedef struct trace_opts {
  const char *format;
  double time_scale;
  int64_t limit, max_total, hash_block;
  bool skip_bad;
} trace_opts;

static char *dirname_of(const char *path) {
  char *d = strdup(path);
  char *slash = d ? strrchr(d, '/') : NULL;
  if (!d)
    return NULL;
  if (slash)
    *slash = '\0';
  else
    strcpy(d, ".");
  return d;
}

static bool is_spec(const char *path) { return kvsim__ends_with(path, ".json"); }

/* Builds the workload for FILE: a trace (with the flags) or, for a .json
 * file, the workload object it holds (a workload, or a scenario's
 * "workload"). *seed takes the scenario's seed unless --seed was given. */
static int load_workload(const char *cmd, const char *file, const trace_opts *o, bool trace_flags,
                         int64_t *seed, bool seed_given, kvsim_workload_cfg_t **cfg) {
  kvsim_err err = {0};
  if (is_spec(file)) {
    if (trace_flags)
      return cli_fail(cmd, "%s: --format, --time-scale, --limit, --skip-bad-rows and "
                           "--hash-block-tokens apply to trace files, not to a JSON spec",
                      file);
    char *text;
    if (kvsim__read_file(file, &text, NULL, &err) < 0)
      return cli_fail(cmd, "%s", err.msg);
    cJSON *j = kvsim__json_parse(text, file, &err);
    free(text);
    if (!j)
      return cli_fail(cmd, "%s", err.msg);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "workload");
    char where[4200];
    snprintf(where, sizeof where, "%s: workload", file);
    if (w) {
      const cJSON *sd = cJSON_GetObjectItemCaseSensitive(j, "seed");
      if (!seed_given && cJSON_IsNumber(sd))
        *seed = (int64_t)sd->valuedouble;
    } else {
      w = j;
    }
    char *dir = dirname_of(file);
    int rc = kvsim_workload_parse(w, dir, where, cfg, &err);
    free(dir);
    cJSON_Delete(j);
    if (rc < 0)
      return cli_fail(cmd, "%s", err.msg);
    if (o->max_total > 0)
      fprintf(stderr, "kvsim %s: note: --max-total-tokens ignored for a JSON spec (set "
                      "workload.max_total_tokens)\n", cmd);
    return 0;
  }
  if (kvsim__fmt_from_name(o->format) < 0)
    return cli_fail(cmd, "--format: bad value '%s' (expected auto, azure, vidur, mooncake, "
                         "llmservingsim or kvsim)",
                    o->format);
  if (!(o->time_scale > 0))
    return cli_fail(cmd, "--time-scale: bad value %g (expected > 0)", o->time_scale);
  if (o->limit < 0)
    return cli_fail(cmd, "--limit: bad value %lld (expected >= 1)", (long long)o->limit);
  if (o->max_total != 0 && o->max_total < 2)
    return cli_fail(cmd, "--max-total-tokens: bad value %lld (expected >= 2)",
                    (long long)o->max_total);
  if (o->hash_block < 1)
    return cli_fail(cmd, "--hash-block-tokens: bad value %lld (expected >= 1)",
                    (long long)o->hash_block);
  cJSON *w = cJSON_CreateObject();
  cJSON_AddStringToObject(w, "trace", file);
  cJSON_AddStringToObject(w, "format", o->format);
  cJSON_AddNumberToObject(w, "time_scale", o->time_scale);
  if (o->limit > 0)
    cJSON_AddNumberToObject(w, "limit", (double)o->limit);
  if (o->max_total > 0)
    cJSON_AddNumberToObject(w, "max_total_tokens", (double)o->max_total);
  cJSON_AddBoolToObject(w, "skip_bad_rows", o->skip_bad);
  cJSON_AddNumberToObject(w, "hash_block_tokens", (double)o->hash_block);
  int rc = kvsim_workload_parse(w, NULL, "workload", cfg, &err);
  cJSON_Delete(w);
  if (rc < 0)
    return cli_fail(cmd, "%s", err.msg);
  return 0;
}

static int parse_caps(const char *s, int64_t *caps, int *n) {
  *n = 0;
  const char *p = s;
  while (*p) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno || end == p || v < 1 || v > 100000000 || (*end && *end != ','))
      return -1;
    if (*n >= KVSIM__MAX_LRU)
      return -1;
    caps[(*n)++] = v;
    p = *end ? end + 1 : end;
  }
  return *n > 0 ? 0 : -1;
}

static cJSON *len_json(const kvsim__len_stats_t *l) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "mean", l->mean);
  cJSON_AddNumberToObject(o, "p50", l->p50);
  cJSON_AddNumberToObject(o, "p90", l->p90);
  cJSON_AddNumberToObject(o, "p99", l->p99);
  cJSON_AddNumberToObject(o, "min", l->min);
  cJSON_AddNumberToObject(o, "max", l->max);
  return o;
}

static void len_text(const char *name, const kvsim__len_stats_t *l) {
  printf("%s: mean %.1f, p50 %.0f, p90 %.0f, p99 %.0f, min %.0f, max %.0f\n", name, l->mean,
         l->p50, l->p90, l->p99, l->min, l->max);
}

static int cmd_stats(int argc, char **argv) {
  const char *cmd = "trace stats";
  trace_opts o = {"auto", 1.0, 0, 0, 512, false};
  bool json = false, tflag = false, seed_given = false;
  int64_t block = 0, seed = 1;
  const char *lru = NULL;
  const cli_arg args[] = {
      {"--format", ARG_STR, &o.format, "auto (default), azure, vidur, mooncake, llmservingsim, kvsim", &tflag},
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {"--prefix-block-size", ARG_INT, &block, "count prefix reuse in blocks of B tokens (512 = Mooncake hash ids)", NULL},
      {"--lru-blocks", ARG_STR, &lru, "LRU capacities in blocks, comma-separated (default " DEFAULT_LRU ")", NULL},
      {"--time-scale", ARG_NUM, &o.time_scale, "multiply inter-arrival times (0.5 = twice as fast)", &tflag},
      {"--limit", ARG_INT, &o.limit, "first N requests only", &tflag},
      {"--skip-bad-rows", ARG_FLAG, &o.skip_bad, "skip and count malformed rows", &tflag},
      {"--max-total-tokens", ARG_INT, &o.max_total, "clip prompt (then output) so prompt + output <= N", NULL},
      {"--hash-block-tokens", ARG_INT, &o.hash_block, "tokens per Mooncake hash id (default 512)", &tflag},
      {"--seed", ARG_INT, &seed, "seed for a synthetic JSON spec (default: the scenario's, else 1)", &seed_given},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse(cmd, "FILE|SPEC.json [flags]", args, argc, argv, 3, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (npos != 1)
    return cli_fail(cmd, "expected one trace file (see kvsim trace stats --help)");
  if (block < 0)
    return cli_fail(cmd, "--prefix-block-size: bad value %lld (expected >= 1)", (long long)block);
  if (lru && !block)
    return cli_fail(cmd, "--lru-blocks: needs --prefix-block-size");
  kvsim__tstats_t st;
  memset(&st, 0, sizeof st);
  st.prefix_block = block;
  if (block && parse_caps(lru ? lru : DEFAULT_LRU, st.lru_capacity, &st.nlru) < 0)
    return cli_fail(cmd, "--lru-blocks: bad value '%s' (expected up to %d integers >= 1, "
                         "comma-separated)",
                    lru, KVSIM__MAX_LRU);
  kvsim_workload_cfg_t *cfg = NULL;
  if ((rc = load_workload(cmd, pos[0], &o, tflag && is_spec(pos[0]), &seed, seed_given, &cfg)))
    return rc;
  kvsim_err err = {0};
  kvsim_source_t *src;
  if (kvsim_source_open(cfg, (uint64_t)seed, &src, &err) < 0) {
    kvsim_workload_cfg_free(cfg);
    return cli_fail(cmd, "%s", err.msg);
  }
  int fmt = kvsim__source_format(src);
  rc = kvsim__trace_stats(src, true, &st, &err);
  kvsim_source_close(src);
  kvsim_workload_cfg_free(cfg);
  if (rc < 0)
    return cli_fail(cmd, "%s", err.msg);

  if (json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "file", pos[0]);
    cJSON_AddStringToObject(j, "format", fmt >= 0 ? kvsim__fmt_name(fmt) : "synthetic");
    cJSON_AddNumberToObject(j, "requests", (double)st.requests);
    cJSON_AddNumberToObject(j, "skipped_rows", (double)st.skipped);
    cJSON_AddNumberToObject(j, "clipped_requests", (double)st.clipped);
    cJSON_AddNumberToObject(j, "duration_s", st.duration_s);
    cJSON_AddNumberToObject(j, "rate_rps", st.rate_rps);
    cJSON_AddNumberToObject(j, "interarrival_mean_s", st.interarrival_mean_s);
    cJSON_AddNumberToObject(j, "interarrival_cv", st.interarrival_cv);
    cJSON_AddNumberToObject(j, "max_gap_s", st.max_gap_s);
    cJSON_AddNumberToObject(j, "peak_requests_in_1s", (double)st.peak_1s);
    cJSON_AddItemToObject(j, "prompt_tokens", len_json(&st.prompt));
    cJSON_AddItemToObject(j, "output_tokens", len_json(&st.output));
    if (block) {
      cJSON_AddNumberToObject(j, "prefix_block_size", (double)block);
      cJSON_AddNumberToObject(j, "prefix_blocks", (double)st.blocks);
      cJSON_AddNumberToObject(j, "prefix_blocks_distinct", (double)st.distinct_blocks);
      cJSON_AddNumberToObject(j, "ideal_prefix_hit_rate_blocks", st.ideal_hit_rate_blocks);
      cJSON_AddNumberToObject(j, "ideal_prefix_hit_rate_tokens", st.ideal_hit_rate_tokens);
      cJSON *l = cJSON_AddObjectToObject(j, "lru_hit_rate");
      for (int i = 0; i < st.nlru; i++) {
        char k[32];
        snprintf(k, sizeof k, "%lld", (long long)st.lru_capacity[i]);
        cJSON_AddNumberToObject(l, k, st.lru_hit_rate[i]);
      }
    }
    char *s = kvsim_report_json_string(j);
    puts(s);
    free(s);
    cJSON_Delete(j);
    return 0;
  }
  char a[32], b[32];
  printf("trace: %s (format %s)\n", pos[0], fmt >= 0 ? kvsim__fmt_name(fmt) : "synthetic");
  printf("requests: %s", kvsim__commas(st.requests, a, sizeof a));
  if (st.skipped)
    printf(" (%s bad rows skipped)", kvsim__commas(st.skipped, b, sizeof b));
  if (st.clipped)
    printf(" (%s clipped)", kvsim__commas(st.clipped, b, sizeof b));
  printf("\nduration: %.1f s\nrate: %.2f req/s\n", st.duration_s, st.rate_rps);
  printf("inter-arrival: mean %.3f s, CV %.2f, max gap %.1f s\n", st.interarrival_mean_s,
         st.interarrival_cv, st.max_gap_s);
  printf("peak: %lld requests in one second\n", (long long)st.peak_1s);
  len_text("prompt tokens", &st.prompt);
  len_text("output tokens", &st.output);
  if (block) {
    printf("prefix blocks of %lld tokens: %s in all, %s distinct\n", (long long)block,
           kvsim__commas(st.blocks, a, sizeof a), kvsim__commas(st.distinct_blocks, b, sizeof b));
    printf("ideal prefix hit rate: %.2f%% of blocks, %.2f%% of tokens\n",
           100 * st.ideal_hit_rate_blocks, 100 * st.ideal_hit_rate_tokens);
    for (int i = 0; i < st.nlru; i++)
      printf("LRU hit rate at %s blocks: %.2f%%\n", kvsim__commas(st.lru_capacity[i], a, sizeof a),
             100 * st.lru_hit_rate[i]);
  }
  return 0;
}

static int cmd_convert(int argc, char **argv) {
  const char *cmd = "trace convert";
  trace_opts o = {"auto", 1.0, 0, 0, 512, false};
  const char *out = NULL;
  bool tflag = false, seed_given = false;
  int64_t seed = 1;
  const cli_arg args[] = {
      {"--out", ARG_STR, &out, "output kvsim CSV (written atomically)", NULL},
      {"--format", ARG_STR, &o.format, "auto (default), azure, vidur, mooncake, llmservingsim, kvsim", &tflag},
      {"--time-scale", ARG_NUM, &o.time_scale, "multiply inter-arrival times", &tflag},
      {"--limit", ARG_INT, &o.limit, "first N requests only", &tflag},
      {"--skip-bad-rows", ARG_FLAG, &o.skip_bad, "skip malformed rows (their count goes to stderr)", &tflag},
      {"--max-total-tokens", ARG_INT, &o.max_total, "clip prompt (then output) so prompt + output <= N", NULL},
      {"--hash-block-tokens", ARG_INT, &o.hash_block, "tokens per Mooncake hash id (default 512)", &tflag},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse(cmd, "FILE --out OUT.csv [flags]", args, argc, argv, 3, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (npos != 1)
    return cli_fail(cmd, "expected one trace file (see kvsim trace convert --help)");
  if (!out)
    return cli_fail(cmd, "--out: missing (the kvsim CSV to write)");
  if (is_spec(pos[0]))
    return cli_fail(cmd, "%s: a JSON spec; use kvsim trace gen", pos[0]);
  kvsim_workload_cfg_t *cfg = NULL;
  if ((rc = load_workload(cmd, pos[0], &o, false, &seed, seed_given, &cfg)))
    return rc;
  kvsim_err err = {0};
  kvsim_source_t *src;
  if (kvsim_source_open(cfg, (uint64_t)seed, &src, &err) < 0) {
    kvsim_workload_cfg_free(cfg);
    return cli_fail(cmd, "%s", err.msg);
  }
  kvsim__csv_writer_t w;
  rc = kvsim__csv_writer_open(&w, out, kvsim__source_columns(src), &err);
  kvsim_req_spec_t spec;
  int64_t n = 0;
  while (rc >= 0 && (rc = kvsim_source_next(src, &spec, &err)) == KVSIM_SOURCE_REQUEST) {
    rc = kvsim__csv_writer_row(&w, &spec, &err);
    n++;
  }
  if (rc >= 0)
    rc = kvsim__csv_writer_commit(&w, &err);
  else
    kvsim__csv_writer_abort(&w);
  int64_t skipped = kvsim_source_skipped(src);
  kvsim_source_close(src);
  kvsim_workload_cfg_free(cfg);
  if (rc < 0)
    return cli_fail(cmd, "%s", err.msg);
  if (skipped)
    fprintf(stderr, "kvsim %s: skipped %lld bad rows\n", cmd, (long long)skipped);
  fprintf(stderr, "kvsim %s: wrote %lld requests to %s\n", cmd, (long long)n, out);
  return 0;
}

/* ---- gen: a tiny event loop so that closed-loop clients and sessions get
 * their finish feedback (a server that answers after --latency-s). ------ */

typedef struct gev {
  kvsim_time_ns t;
  uint64_t seq;
  bool finish;
  kvsim_req_spec_t spec; /* segments owned (malloc'd) for arrivals */
} gev;

typedef struct gheap {
  gev *a;
  size_t n, cap;
  uint64_t seq;
} gheap;

static bool gless(const gev *x, const gev *y) {
  return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static int gpush(gheap *h, gev e) {
  if (h->n == h->cap) {
    size_t c = h->cap ? h->cap * 2 : 64;
    gev *g = realloc(h->a, c * sizeof *g);
    if (!g)
      return -1;
    h->a = g;
    h->cap = c;
  }
  e.seq = h->seq++;
  size_t i = h->n++;
  while (i > 0 && gless(&e, &h->a[(i - 1) / 2])) {
    h->a[i] = h->a[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->a[i] = e;
  return 0;
}

static gev gpop(gheap *h) {
  gev top = h->a[0], last = h->a[--h->n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    const gev *b = &last;
    if (l < h->n && gless(&h->a[l], b)) {
      m = l;
      b = &h->a[l];
    }
    if (l + 1 < h->n && gless(&h->a[l + 1], b))
      m = l + 1;
    if (m == i)
      break;
    h->a[i] = h->a[m];
    i = m;
  }
  if (h->n)
    h->a[i] = last;
  return top;
}

static int gpull(kvsim_source_t *src, gheap *h, kvsim_err *err) {
  kvsim_req_spec_t s;
  int rc = kvsim_source_next(src, &s, err);
  if (rc != KVSIM_SOURCE_REQUEST)
    return rc;
  gev e = {.t = s.arrival, .finish = false, .spec = s};
  if (s.num_segments > 0) {
    kvsim_segment_t *c = malloc((size_t)s.num_segments * sizeof *c);
    if (!c)
      return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    memcpy(c, s.segments, (size_t)s.num_segments * sizeof *c);
    e.spec.segments = c;
  }
  if (gpush(h, e) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  return rc;
}

static int cmd_gen(int argc, char **argv) {
  const char *cmd = "trace gen";
  const char *out = NULL;
  int64_t seed = 1;
  double latency = 0;
  bool seed_given = false;
  const cli_arg args[] = {
      {"--out", ARG_STR, &out, "output kvsim CSV (written atomically)", NULL},
      {"--seed", ARG_INT, &seed, "random seed (default: the scenario's, else 1)", &seed_given},
      {"--latency-s", ARG_NUM, &latency, "closed loop and sessions: each request finishes this long after it arrives (default 0)", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse(cmd, "SPEC.json --out OUT.csv [flags]", args, argc, argv, 3, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (npos != 1)
    return cli_fail(cmd, "expected one workload spec (see kvsim trace gen --help)");
  if (!out)
    return cli_fail(cmd, "--out: missing (the kvsim CSV to write)");
  if (!(latency >= 0))
    return cli_fail(cmd, "--latency-s: bad value %g (expected >= 0)", latency);
  if (!is_spec(pos[0]))
    return cli_fail(cmd, "%s: expected a JSON workload spec (SPEC.json)", pos[0]);
  trace_opts o = {"auto", 1.0, 0, 0, 512, false};
  kvsim_workload_cfg_t *cfg = NULL;
  if ((rc = load_workload(cmd, pos[0], &o, false, &seed, seed_given, &cfg)))
    return rc;
  kvsim_err err = {0};
  kvsim_source_t *src;
  if (kvsim_source_open(cfg, (uint64_t)seed, &src, &err) < 0) {
    kvsim_workload_cfg_free(cfg);
    return cli_fail(cmd, "%s", err.msg);
  }
  kvsim__csv_writer_t w;
  gheap h = {0};
  int64_t n = 0;
  kvsim_time_ns lat = kvsim_time_from_s(latency);
  rc = kvsim__csv_writer_open(&w, out, kvsim__source_columns(src), &err);
  if (rc >= 0)
    rc = gpull(src, &h, &err);
  while (rc >= 0 && h.n > 0) {
    gev e = gpop(&h);
    if (!e.finish) {
      rc = kvsim__csv_writer_row(&w, &e.spec, &err);
      n++;
      free((void *)e.spec.segments);
      e.spec.segments = NULL;
      e.spec.num_segments = 0;
      gev f = {.t = e.t + lat, .finish = true, .spec = e.spec};
      if (rc >= 0 && gpush(&h, f) < 0)
        rc = kvsim_err_set(&err, KVSIM_ENOMEM, "out of memory");
      if (rc >= 0)
        rc = gpull(src, &h, &err);
    } else if (kvsim_source_on_finish(src, &e.spec, e.t, e.spec.output_tokens) > 0) {
      rc = gpull(src, &h, &err);
    }
  }
  for (size_t i = 0; i < h.n; i++)
    if (!h.a[i].finish)
      free((void *)h.a[i].spec.segments);
  free(h.a);
  if (rc >= 0)
    rc = kvsim__csv_writer_commit(&w, &err);
  else
    kvsim__csv_writer_abort(&w);
  kvsim_source_close(src);
  kvsim_workload_cfg_free(cfg);
  if (rc < 0)
    return cli_fail(cmd, "%s", err.msg);
  fprintf(stderr, "kvsim %s: wrote %lld requests to %s (seed %lld)\n", cmd, (long long)n, out,
          (long long)seed);
  return 0;
}

int cmd_trace(int argc, char **argv) {
  const char *sub = argc > 2 ? argv[2] : NULL;
  if (!sub || !strcmp(sub, "--help") || !strcmp(sub, "-h")) {
    FILE *f = sub ? stdout : stderr;
    fprintf(f, "usage: kvsim trace stats FILE [--json] [--prefix-block-size B] [--lru-blocks "
               "C1,C2,...] [flags]\n"
               "       kvsim trace convert FILE --out OUT.csv [flags]\n"
               "       kvsim trace gen SPEC.json --out OUT.csv [--seed N] [--latency-s X]\n\n"
               "Formats (detected from the header or given with --format): azure, vidur, "
               "mooncake, llmservingsim, kvsim.\n"
               "`kvsim trace SUBCOMMAND --help` describes its flags; workloads/README.md the "
               "formats.\n");
    return sub ? 0 : 2;
  }
  if (!strcmp(sub, "stats"))
    return cmd_stats(argc, argv);
  if (!strcmp(sub, "convert"))
    return cmd_convert(argc, argv);
  if (!strcmp(sub, "gen"))
    return cmd_gen(argc, argv);
  return cli_fail("trace", "unknown subcommand '%s' (expected stats, convert or gen)", sub);
}
