/* aiperf's per-request export (ai-dynamo/aiperf, profile_export.jsonl;
 * docs/tutorials/working-with-profile-exports.md, the MetricRecordInfo
 * model of src/aiperf/common/models/record_models.py), which genai-perf's
 * successor writes: one JSON object a line with
 *   "metadata": {"request_start_ns", "request_end_ns", "benchmark_phase",
 *                "was_cancelled", ...}  (older releases: "timestamp_ns")
 *   "metrics":  {"input_sequence_length": {"value", "unit": "tokens"},
 *                "output_sequence_length", "time_to_first_token": {"value",
 *                "unit": "ms"}, "request_latency", ...}
 *   "error":    null, or what failed.
 * Unknown keys are ignored. A record with an error, cancelled, outside the
 * "profiling" phase, or without the metrics above (failed requests carry
 * only error_isl) is not a finished request and is skipped.
 * - Read as a trace: arrivals at request_start_ns from the earliest, with
 *   the two lengths. Records are written as requests complete, so they
 *   are read whole and handed out by start time: memory O(rows).
 * - Read as a measured run: client-side times, TTFT and E2E from the
 *   request's start; no scheduling time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "workload/formats/format.h"

typedef struct rec {
  int64_t start_ns, line;
  int64_t prompt, output;
  double ttft_s, e2e_s;
} rec_t;

typedef struct state {
  kvsim__vec(rec_t) rows;
  int64_t next;
  bool loaded;
} state_t;

static bool detect(const char *l) {
  return kvsim__json_has(l, "metadata") && kvsim__json_has(l, "metrics");
}

static int open_(kvsim__reader_t *r, kvsim_err *err) {
  r->state = kvsim__calloc(1, sizeof(state_t));
  if (!r->state)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
  return 0;
}

/* A metric's value in seconds (unit ns, us, ms or s) or tokens; false when
 * absent. A value that is there but bad is an error naming the metric. */
static int metric(const kvsim__reader_t *r, const cJSON *metrics, const char *name, bool time,
                  double *out, kvsim_err *err) {
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(metrics, name);
  if (!m || cJSON_IsNull(m))
    return 0;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "value");
  const cJSON *u = cJSON_GetObjectItemCaseSensitive(m, "unit");
  const char *unit = cJSON_IsString(u) ? u->valuestring : "";
  double scale = 1;
  if (time) {
    static const struct {
      const char *unit;
      double scale;
    } units[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"sec", 1}};
    scale = 0;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
      if (!strcmp(unit, units[i].unit))
        scale = units[i].scale;
    if (scale == 0)
      return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: metric '%s': unit '%.32s' (expected ns, us, ms or s)",
                           r->path, (long long)r->line, name, unit);
  }
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
      (!time && (v->valuedouble != floor(v->valuedouble) ||
                 v->valuedouble > (double)KVSIM__MAX_TRACE_TOKENS)))
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: metric '%s': value missing or out of range (expected %s)",
                         r->path, (long long)r->line, name,
                         time ? "a finite time >= 0" : "a whole number of tokens");
  *out = v->valuedouble * scale;
  return 1;
}

/* A record of a finished request: 1 (into q), 0 (skipped), or an error. */
static int record(const kvsim__reader_t *r, const cJSON *o, rec_t *q, kvsim_err *err) {
  const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(o, "metrics");
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
  if (!cJSON_IsObject(md) || !cJSON_IsObject(mt))
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: no \"metadata\" and \"metrics\" objects", r->path,
                         (long long)r->line);
  const cJSON *ph = cJSON_GetObjectItemCaseSensitive(md, "benchmark_phase");
  if ((e && !cJSON_IsNull(e)) || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(md, "was_cancelled")) ||
      (cJSON_IsString(ph) && strcmp(ph->valuestring, "profiling")))
    return 0;
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(md, "request_start_ns");
  if (!st)
    st = cJSON_GetObjectItemCaseSensitive(md, "timestamp_ns");
  /* Epoch nanoseconds: up to 2^63, held exactly enough by a double. */
  if (!cJSON_IsNumber(st) || !(st->valuedouble >= 0 && st->valuedouble < 9.2e18))
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: metadata 'request_start_ns' missing or out of range",
                         r->path, (long long)r->line);
  double in, out, ttft, e2e;
  int a, b, c, d;
  if ((a = metric(r, mt, "input_sequence_length", false, &in, err)) < 0 ||
      (b = metric(r, mt, "output_sequence_length", false, &out, err)) < 0 ||
      (c = metric(r, mt, "time_to_first_token", true, &ttft, err)) < 0 ||
      (d = metric(r, mt, "request_latency", true, &e2e, err)) < 0)
    return KVSIM_EPARSE;
  if (!a || !b || !c || !d)
    return 0; /* a record without the metrics a request needs */
  if (in < 1 || out < 1 || e2e < ttft)
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:%lld: inconsistent request (input %.0f, output %.0f tokens, TTFT %.6f s, "
                         "latency %.6f s)",
                         r->path, (long long)r->line, in, out, ttft, e2e);
  *q = (rec_t){(int64_t)st->valuedouble, r->line, (int64_t)in, (int64_t)out, ttft, e2e};
  return 1;
}

static int by_start(const void *a, const void *b) {
  const rec_t *x = a, *y = b;
  if (x->start_ns != y->start_ns)
    return x->start_ns < y->start_ns ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

static int load(kvsim__reader_t *r, state_t *s, kvsim_err *err) {
  for (;;) {
    kvsim__row_t row;
    cJSON *o;
    int rc = kvsim__fmt_jsonl_row(r, &row, &o, err);
    if (rc <= 0)
      return rc;
    rec_t q;
    rc = record(r, o, &q, err);
    cJSON_Delete(o);
    if (rc < 0)
      return rc;
    if (rc == 1 && kvsim__vec_push(&s->rows, q) < 0)
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
  }
}

static int next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  state_t *s = r->state;
  if (!s->loaded) {
    int rc = load(r, s, err);
    if (rc < 0)
      return rc; /* a bad record: the file is refused (its rows are one document) */
    if (s->rows.n > 1)
      qsort(s->rows.v, (size_t)s->rows.n, sizeof *s->rows.v, by_start);
    s->loaded = true;
  }
  if (s->next == s->rows.n)
    return 0;
  const rec_t *q = &s->rows.v[s->next++];
  const rec_t *first = &s->rows.v[0];
  memset(row, 0, sizeof *row);
  row->line = q->line;
  row->session = -1;
  row->prompt_tokens = q->prompt;
  row->output_tokens = q->output;
  row->arrival = q->start_ns - first->start_ns;
  if (r->measured) {
    kvsim__measured_t *m = &row->measured;
    m->finished = true;
    m->arrival_s = (double)row->arrival / 1e9;
    m->scheduled_s = -1; /* the client does not see it */
    /* time.time_ns() of the client (aiperf's request_start_ns): the
     * anchor of a Prometheus scrape of the same run. */
    m->has_unix = true;
    m->unix_ns = q->start_ns;
    m->first_token_s = m->arrival_s + q->ttft_s;
    m->finish_s = m->arrival_s + q->e2e_s;
  }
  return 1;
}

static void close_(kvsim__reader_t *r) {
  state_t *s = r->state;
  if (s)
    kvsim__vec_free(&s->rows);
  kvsim__free(s);
  r->state = NULL;
}

const kvsim__format_t kvsim__format_aiperf = {
    .name = "aiperf",
    .arrival_column = "request_start_ns",
    .jsonl = true,
    .selectable = true,
    .measures = true,
    .detect = detect,
    .open = open_,
    .next = next,
    .close = close_,
};
