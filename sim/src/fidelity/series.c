/* The measured time-series reader (kvsim/fidelity.h), over the workload
 * room's CSV row reader (workload/csvrow.h): quoting as RFC 4180 has it,
 * columns found by name, errors naming the line where the row starts. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fidelity/fid.h"
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

int kvsim_fidelity_read_series(const char *path, kvsim_fid_series_t *s, kvsim_err *err) {
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
                       "%s:1: expected columns t,running,waiting[,kv_cache_pct] (LLMServingSim) or "
                       "kvsim's timeseries.csv header",
                       path);
  else
    rc = read_rows(r, col, names, kvsim, s, err);
  kvsim__csvrow_close(r);
  if (rc == KVSIM_OK && s->n == 0)
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: no rows", path);
  return rc;
}
