/* The measured time-series reader (kvsim/fidelity.h), over the workload
 * room's CSV row reader (workload/csvrow.h): quoting as RFC 4180 has it,
 * columns found by name, errors naming the line where the row starts. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "fidelity/fid.h"
#include "fidelity/series_acc.h"
#include "kvsim/fidelity.h"
#include "workload/csvrow.h"
#include "workload/text.h"

enum { T, RUNNING, WAITING, KV, NCOL };

/* LLMServingSim: t, running, waiting, kv_cache_pct (percent). kvsim:
 * time_s, replica, num_requests_running, num_requests_waiting,
 * kv_cache_usage_perc (a fraction, like vLLM's gauge). */
static const char *const llmservingsim_cols[NCOL] = {"t", "running", "waiting", "kv_cache_pct"};
static const char *const kvsim_cols[NCOL] = {"time_s", "num_requests_running",
                                             "num_requests_waiting", "kv_cache_usage_perc"};

/* A finite number in column c (named name), or KVSIM_EINVAL naming the
 * line, the column and the value. */
static int cell(const kvsim__csvrow_t *r, int c, const char *name, double *out, kvsim_err *err) {
  const char *v = kvsim__csvrow_field(r, c);
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (end == v || *end || errno || !isfinite(x)) {
    char esc[KVSIM__ESCAPE_MAX];
    kvsim__escape(v, strlen(v), esc, sizeof esc);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s:%lld: column '%s': bad value '%s' (expected a number)",
                         kvsim__csvrow_path(r), (long long)kvsim__csvrow_field_line(r, c), name, esc);
  }
  *out = x;
  return KVSIM_OK;
}

/* Adds the rows of r to s: replicas summed, KV usage averaged, per tick. */
static int read_rows(kvsim__csvrow_t *r, const int *col, const char *const *names, bool kvsim,
                     kvsim_fid_series_t *s, kvsim_err *err) {
  double kv_scale = kvsim ? 1 : 0.01;
  double cur = NAN, run = 0, wait = 0, kv = 0;
  int m = 0, rc;
  bool any_kv = false;
  while ((rc = kvsim__csvrow_next(r, err)) == 1) {
    double v[NCOL] = {0};
    for (int k = 0; k < NCOL; k++)
      if (col[k] >= 0 && (rc = cell(r, col[k], names[k], &v[k], err)) < 0)
        return rc;
    double t = v[T];
    /* kvsim writes extra rows at preemptions; keep the periodic ones (on
     * whole seconds, the default sample_interval_s). */
    if (kvsim && fabs(t - round(t)) > 1e-6)
      continue;
    if (v[KV] != 0)
      any_kv = true;
    if (m > 0 && t != cur) {
      if ((rc = kvsim_fidelity_series_push(s, cur, run, wait, kv / m)) < 0)
        return kvsim_err_set(err, rc, "%s: out of memory", kvsim__csvrow_path(r));
      run = wait = kv = 0;
      m = 0;
    }
    cur = t;
    run += v[RUNNING];
    wait += v[WAITING];
    kv += v[KV] * kv_scale;
    m++;
  }
  if (rc < 0)
    return kvsim__fid_recode(rc, KVSIM_EINVAL, err);
  if (m > 0 && (rc = kvsim_fidelity_series_push(s, cur, run, wait, kv / m)) < 0)
    return kvsim_err_set(err, rc, "%s: out of memory", kvsim__csvrow_path(r));
  /* A column of zeros means "not recorded" (LLMServingSim on RTXPRO6000). */
  s->has_kv = col[KV] >= 0 && any_kv;
  return KVSIM_OK;
}

static int read_csv(const char *path, kvsim_fid_series_t *s, kvsim_err *err) {
  kvsim__csvrow_t *r;
  int rc = kvsim__csvrow_open(path, true, &r, err);
  if (rc < 0)
    return kvsim__fid_recode(rc, KVSIM_EINVAL, err);
  bool kvsim = kvsim__csvrow_column(r, "t") < 0;
  const char *const *names = kvsim ? kvsim_cols : llmservingsim_cols;
  int col[NCOL];
  for (int k = 0; k < NCOL; k++)
    col[k] = kvsim__csvrow_column(r, names[k]);
  if (col[T] < 0 || col[RUNNING] < 0 || col[WAITING] < 0)
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s:1: expected columns t,running,waiting[,kv_cache_pct] (LLMServingSim), "
                       "kvsim's timeseries.csv header, a Prometheus text dump or query_range JSON",
                       path);
  else
    rc = read_rows(r, col, names, kvsim, s, err);
  kvsim__csvrow_close(r);
  if (rc == KVSIM_OK && s->n == 0)
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: no rows", path);
  return rc;
}

typedef enum { SER_CSV, SER_PROM_TEXT, SER_PROM_JSON } ser_fmt_t;

/* The format from the first bytes: JSON when they open an array or an
 * object whose first key is quoted ('{"status"'); Prometheus text when
 * they are a comment ('#'), a label set ('{__name__="..."', promtool tsdb
 * dump) or a metric name followed by '{' or a blank; CSV (a header of
 * comma-separated names) otherwise. */
static ser_fmt_t detect(const char *path) {
  char buf[512];
  size_t n = 0;
  FILE *f;
  kvsim_err ignored = {0};
  /* What cannot be opened is CSV: its reader says why. */
  if (kvsim__open_input(path, KVSIM_EIO, &f, &ignored) == KVSIM_OK) {
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
  }
  buf[n] = '\0';
  const char *p = buf;
  if (!strncmp(p, "\xef\xbb\xbf", 3)) /* a UTF-8 byte order mark */
    p += 3;
  p += strspn(p, " \t\r\n");
  if (*p == '[')
    return SER_PROM_JSON;
  if (*p == '{')
    return p[1 + strspn(p + 1, " \t\r\n")] == '"' ? SER_PROM_JSON : SER_PROM_TEXT;
  if (*p == '#')
    return SER_PROM_TEXT;
  size_t name = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:");
  return name > 0 && (p[name] == '{' || p[name] == ' ' || p[name] == '\t') ? SER_PROM_TEXT : SER_CSV;
}

int kvsim__fid_read_series_at(const char *path, kvsim__ser_origin_t *o, kvsim_fid_series_t *s,
                              kvsim_err *err) {
  ser_fmt_t f = detect(path);
  o->prom = f != SER_CSV;
  o->anchored = false;
  switch (f) {
  case SER_PROM_TEXT:
    return kvsim__fid_read_prom_text(path, o, s, err);
  case SER_PROM_JSON:
    return kvsim__fid_read_prom_json(path, o, s, err);
  default:
    return read_csv(path, s, err);
  }
}

int kvsim_fidelity_read_series(const char *path, kvsim_fid_series_t *s, kvsim_err *err) {
  kvsim__ser_origin_t o = {INT64_MIN, false, false};
  return kvsim__fid_read_series_at(path, &o, s, err);
}
