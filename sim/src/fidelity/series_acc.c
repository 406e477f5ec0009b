/* Engine gauge samples into one measured series (fidelity/series_acc.h). */
#include "fidelity/series_acc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

static const struct {
  const char *name;
  int kind;
} names[] = {
    /* vllm/v1/metrics/loggers.py, PrometheusStatLogger.__init__ */
    {"vllm:num_requests_running", KVSIM__SER_RUNNING},
    {"vllm:num_requests_waiting", KVSIM__SER_WAITING},
    {"vllm:kv_cache_usage_perc", KVSIM__SER_KV},
    {"vllm:gpu_cache_usage_perc", KVSIM__SER_KV}, /* deprecated by vLLM PR #18354 */
    /* sglang python/sglang/srt/metrics/collector.py, SchedulerMetricsCollector */
    {"sglang:num_running_reqs", KVSIM__SER_RUNNING},
    {"sglang:num_queue_reqs", KVSIM__SER_WAITING},
    {"sglang:token_usage", KVSIM__SER_KV},
};

int kvsim__ser_kind(const char *name, size_t len) {
  for (size_t k = 0; k < sizeof names / sizeof *names; k++)
    if (strlen(names[k].name) == len && !memcmp(names[k].name, name, len))
      return names[k].kind;
  return -1;
}

void kvsim__ser_acc_fini(kvsim__ser_acc_t *a) {
  for (int64_t i = 0; i < a->ids.n; i++)
    free(a->ids.v[i].labels);
  kvsim__vec_free(&a->ids);
  kvsim__vec_free(&a->samples);
}

/* The series (kind, labels), added when new; -1 when out of memory. The
 * table is searched linearly: a scrape has a handful of engines. */
static int32_t series_of(kvsim__ser_acc_t *a, int kind, const char *labels, size_t len) {
  for (int64_t i = a->ids.n - 1; i >= 0; i--)
    if (a->ids.v[i].kind == kind && strlen(a->ids.v[i].labels) == len &&
        !memcmp(a->ids.v[i].labels, labels, len))
      return (int32_t)i;
  if (a->ids.n >= INT32_MAX)
    return -1;
  char *copy = kvsim__malloc(len + 1);
  if (!copy)
    return -1;
  memcpy(copy, labels, len);
  copy[len] = '\0';
  kvsim__ser_id_t id = {kind, copy};
  if (kvsim__vec_push(&a->ids, id) < 0) {
    free(copy);
    return -1;
  }
  return (int32_t)(a->ids.n - 1);
}

int kvsim__ser_acc_add(kvsim__ser_acc_t *a, int kind, const char *labels, size_t len, int64_t ms,
                       double v) {
  int32_t id = series_of(a, kind, labels, len);
  if (id < 0)
    return KVSIM_ENOMEM;
  kvsim__ser_sample_t s = {ms, a->samples.n, id, v};
  return kvsim__vec_push(&a->samples, s);
}

bool kvsim__ser_parse_ts(const char *text, size_t len, int64_t *ms) {
  char buf[64];
  if (len == 0 || len >= sizeof buf)
    return false;
  memcpy(buf, text, len);
  buf[len] = '\0';
  char *end;
  errno = 0;
  double x = strtod(buf, &end);
  if (end == buf || *end || errno || !isfinite(x))
    return false;
  bool seconds = strpbrk(buf, ".eE") || fabs(x) < 1e11;
  double v = seconds ? x * 1e3 : x;
  if (!(fabs(v) <= (double)KVSIM__SER_MAX_MS))
    return false;
  *ms = (int64_t)llround(v);
  return true;
}

static int by_series_time(const void *p, const void *q) {
  const kvsim__ser_sample_t *x = p, *y = q;
  if (x->series != y->series)
    return x->series < y->series ? -1 : 1;
  if (x->ms != y->ms)
    return x->ms < y->ms ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_i64(const void *p, const void *q) {
  int64_t x = *(const int64_t *)p, y = *(const int64_t *)q;
  return x < y ? -1 : x > y;
}

/* Sorted by (series, time), of two samples of a series at one time the
 * later; the start of each series' run into first[] (ids.n + 1 entries). */
static int group(kvsim__ser_acc_t *a, int64_t **first) {
  kvsim__ser_sample_t *s = a->samples.v;
  if (a->samples.n)
    qsort(s, (size_t)a->samples.n, sizeof *s, by_series_time);
  int64_t w = 0;
  for (int64_t i = 0; i < a->samples.n; i++) {
    if (w > 0 && s[w - 1].series == s[i].series && s[w - 1].ms == s[i].ms)
      w--;
    s[w++] = s[i];
  }
  a->samples.n = w;
  *first = kvsim__calloc((size_t)a->ids.n + 1, sizeof **first);
  if (!*first)
    return KVSIM_ENOMEM;
  int64_t j = 0;
  for (int64_t k = 0; k <= a->ids.n; k++) {
    while (j < w && s[j].series < k)
      j++;
    (*first)[k] = j;
  }
  return KVSIM_OK;
}

/* The distinct sample times at or after origin, ascending. */
static int times_of(const kvsim__ser_acc_t *a, int64_t origin, int64_t **out, int64_t *n) {
  int64_t *t = kvsim__malloc(((size_t)a->samples.n + 1) * sizeof *t);
  if (!t)
    return KVSIM_ENOMEM;
  int64_t m = 0;
  for (int64_t i = 0; i < a->samples.n; i++)
    if (a->samples.v[i].ms >= origin)
      t[m++] = a->samples.v[i].ms;
  if (m)
    qsort(t, (size_t)m, sizeof *t, by_i64);
  int64_t w = 0;
  for (int64_t i = 0; i < m; i++)
    if (w == 0 || t[w - 1] != t[i])
      t[w++] = t[i];
  *out = t;
  *n = w;
  return KVSIM_OK;
}

/* Walks the sample times, each series' cursor at its last sample at or
 * before the time, and pushes the sums and the mean. */
static int walk(const kvsim__ser_acc_t *a, const int64_t *first, const int64_t *t, int64_t nt,
                int64_t origin, kvsim_fid_series_t *s) {
  int64_t *cur = kvsim__malloc(((size_t)a->ids.n + 1) * sizeof *cur);
  if (!cur)
    return KVSIM_ENOMEM;
  for (int64_t k = 0; k < a->ids.n; k++)
    cur[k] = first[k] - 1; /* before its first sample */
  const kvsim__ser_sample_t *v = a->samples.v;
  int rc = KVSIM_OK;
  for (int64_t i = 0; i < nt && rc == KVSIM_OK; i++) {
    double sum[KVSIM__SER_NKIND] = {0};
    int cnt[KVSIM__SER_NKIND] = {0};
    for (int64_t k = 0; k < a->ids.n; k++) {
      while (cur[k] + 1 < first[k + 1] && v[cur[k] + 1].ms <= t[i])
        cur[k]++;
      /* In force: sampled at or before t, and t not past its last sample. */
      if (cur[k] < first[k] || (v[cur[k]].ms < t[i] && cur[k] + 1 == first[k + 1]) ||
          isnan(v[cur[k]].v))
        continue;
      sum[a->ids.v[k].kind] += v[cur[k]].v;
      cnt[a->ids.v[k].kind]++;
    }
    double kv = cnt[KVSIM__SER_KV] ? sum[KVSIM__SER_KV] / cnt[KVSIM__SER_KV] : 0;
    rc = kvsim_fidelity_series_push(s, (double)(t[i] - origin) / 1e3, sum[KVSIM__SER_RUNNING],
                                    sum[KVSIM__SER_WAITING], kv);
  }
  free(cur);
  return rc;
}

int kvsim__ser_acc_finish(kvsim__ser_acc_t *a, kvsim__ser_origin_t *o, const char *path,
                          kvsim_fid_series_t *s, kvsim_err *err) {
  bool has[KVSIM__SER_NKIND] = {false};
  int64_t origin = INT64_MAX, last = INT64_MIN;
  for (int64_t i = 0; i < a->samples.n; i++) {
    has[a->ids.v[a->samples.v[i].series].kind] = true;
    if (a->samples.v[i].ms < origin)
      origin = a->samples.v[i].ms;
    if (a->samples.v[i].ms > last)
      last = a->samples.v[i].ms;
  }
  if (!has[KVSIM__SER_RUNNING] || !has[KVSIM__SER_WAITING])
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: no %s samples (expected vllm:num_requests_running and "
                         "vllm:num_requests_waiting, or sglang:num_running_reqs and "
                         "sglang:num_queue_reqs, each with a timestamp)",
                         path, has[KVSIM__SER_RUNNING] ? "waiting" : "running");
  /* The anchor only when it falls in the scrape: a request file of
   * another day would otherwise shift every sample out of the run. */
  o->anchored = o->origin_ms != INT64_MIN && o->origin_ms >= origin - 3600000 && o->origin_ms <= last;
  if (o->anchored)
    origin = o->origin_ms;
  int64_t *first = NULL, *t = NULL, nt = 0;
  int rc = group(a, &first);
  if (rc == KVSIM_OK)
    rc = times_of(a, origin, &t, &nt);
  if (rc == KVSIM_OK)
    rc = walk(a, first, t, nt, origin, s);
  free(first);
  free(t);
  if (rc < 0)
    return kvsim_err_set(err, rc, "%s: out of memory", path);
  if (s->n == 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: no sample at or after the first request's arrival",
                         path);
  s->has_kv = has[KVSIM__SER_KV];
  return KVSIM_OK;
}
