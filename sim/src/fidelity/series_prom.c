/* A Prometheus scrape over time as a measured series (kvsim/fidelity.h
 * kvsim_fidelity_read_series): the text exposition format with a
 * timestamp on every sample line, as `promtool tsdb dump` prints it
 * (`{__name__="vllm:num_requests_running", engine="0"} 3 1735689600000`,
 * milliseconds), as `promtool tsdb dump-openmetrics` and `kvsim run
 * --openmetrics` write it (`vllm:num_requests_running{engine="0"} 3
 * 1735689600.000`, seconds), or concatenated /metrics scrapes that carry
 * timestamps. Formats: https://prometheus.io/docs/instrumenting/exposition_formats/
 * and https://github.com/prometheus/OpenMetrics/blob/main/specification/OpenMetrics.md
 *
 * Only the engine gauges of series_acc.h are kept; every other sample
 * line is still checked for syntax. Comments (# TYPE, # HELP, # EOF) are
 * skipped; an OpenMetrics exemplar after the timestamp is ignored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/util.h"
#include "fidelity/fid.h"
#include "fidelity/series_acc.h"
#include "kvsim/fidelity.h"
#include "workload/text.h"

typedef struct line {
  const char *path;
  long long no;
  const char *p, *end; /* the unread rest */
} line_t;

/* "PATH:LINE: what at 'rest of the line'". */
static int bad(const line_t *l, const char *what, kvsim_err *err) {
  char esc[KVSIM__ESCAPE_MAX];
  kvsim__escape(l->p, (size_t)(l->end - l->p), esc, sizeof esc);
  return kvsim_err_set(err, KVSIM_EINVAL, "%s:%lld: %s at '%s'", l->path, l->no, what, esc);
}

static bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
static bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
static void skip_blank(line_t *l) {
  while (l->p < l->end && (*l->p == ' ' || *l->p == '\t'))
    l->p++;
}

/* A metric or label name at l->p: its length (0: none), l->p past it. */
static size_t take_name(line_t *l) {
  const char *s = l->p;
  if (l->p < l->end && name_start(*l->p))
    while (l->p < l->end && name_char(*l->p))
      l->p++;
  return (size_t)(l->p - s);
}

static bool escapable(char c) { return c == '\\' || c == '"' || c == 'n'; }

/* A quoted label value at l->p (escapes \\, \" and \n, the exposition
 * format's): *v, *vn the text between the quotes, escapes kept. NULL, or
 * what is wrong with l->p at the place to show. */
static const char *take_quoted(line_t *l, const char **v, size_t *vn) {
  if (l->p >= l->end || *l->p != '"')
    return "expected a quoted label value";
  const char *open = l->p;
  const char *s = ++l->p;
  while (l->p < l->end && *l->p != '"') {
    if (*l->p == '\\' && (l->p + 1 >= l->end || !escapable(l->p[1])))
      return "expected \\\\, \\\" or \\n after '\\' in a label value";
    l->p += *l->p == '\\' ? 2 : 1;
  }
  if (l->p >= l->end) {
    l->p = open; /* the message shows the value from its quote on */
    return "unclosed quote in a label value";
  }
  *v = s;
  *vn = (size_t)(l->p++ - s);
  return NULL;
}

/* The label set {a="x", b="y"} at l->p: *labels, *ln its inside; a
 * __name__ label's value into *name, *nn. */
static int take_labels(line_t *l, const char **labels, size_t *ln, const char **name, size_t *nn,
                       kvsim_err *err) {
  *labels = ++l->p; /* past '{' */
  for (;;) {
    skip_blank(l);
    if (l->p < l->end && *l->p == '}')
      break;
    const char *k = l->p;
    size_t kn = take_name(l);
    if (!kn)
      return bad(l, "expected a label name", err);
    skip_blank(l);
    if (l->p >= l->end || *l->p != '=')
      return bad(l, "expected '=' after the label name", err);
    l->p++;
    skip_blank(l);
    const char *v;
    size_t vn;
    const char *why = take_quoted(l, &v, &vn);
    if (why)
      return bad(l, why, err);
    if (kn == 8 && !memcmp(k, "__name__", 8)) {
      *name = v;
      *nn = vn;
    }
    skip_blank(l);
    if (l->p < l->end && *l->p == ',')
      l->p++;
    else if (l->p >= l->end || *l->p != '}')
      return bad(l, "expected ',' or '}' in the label set", err);
  }
  *ln = (size_t)(l->p - *labels);
  l->p++; /* past '}' */
  return KVSIM_OK;
}

/* The next blank-separated token: *t, its length (0 at the end). */
static size_t take_token(line_t *l, const char **t) {
  skip_blank(l);
  *t = l->p;
  while (l->p < l->end && *l->p != ' ' && *l->p != '\t')
    l->p++;
  return (size_t)(l->p - *t);
}

/* A sample value: a number, NaN or [+-]Inf, as both formats write it. */
static bool parse_value(const char *t, size_t n, double *out) {
  char buf[64];
  if (n == 0 || n >= sizeof buf)
    return false;
  memcpy(buf, t, n);
  buf[n] = '\0';
  char *end;
  double x = strtod(buf, &end);
  if (end == buf || *end)
    return false;
  *out = x;
  return true;
}

/* One sample line: its engine gauge, if any, into a. */
static int sample(line_t *l, kvsim__ser_acc_t *a, kvsim_err *err) {
  const char *name = l->p, *labels = "";
  size_t nn = take_name(l), ln = 0;
  int rc;
  if (l->p < l->end && *l->p == '{' && (rc = take_labels(l, &labels, &ln, &name, &nn, err)) < 0)
    return rc;
  if (nn == 0)
    return bad(l, "expected a metric name (or {__name__=\"...\"})", err);
  if (l->p < l->end && *l->p != ' ' && *l->p != '\t')
    return bad(l, "expected a blank after the metric", err);
  const char *vt, *tt, *rest;
  size_t vn = take_token(l, &vt), tn = take_token(l, &tt);
  double v;
  if (!parse_value(vt, vn, &v)) {
    l->p = vt;
    return bad(l, "expected a sample value", err);
  }
  size_t rn = take_token(l, &rest);
  if (rn && *rest != '#') {
    l->p = rest;
    return bad(l, "unexpected text after the timestamp", err);
  }
  int kind = kvsim__ser_kind(name, nn);
  if (kind < 0)
    return KVSIM_OK;
  int64_t ms;
  if (tn == 0 || *tt == '#') {
    l->p = vt;
    return bad(l, "a sample without a timestamp (a scrape over time needs one per sample)", err);
  }
  if (!kvsim__ser_parse_ts(tt, tn, &ms)) {
    l->p = tt;
    return bad(l, "bad timestamp (expected seconds or milliseconds since the epoch)", err);
  }
  /* NaN is Prometheus' staleness marker: the series has ended. */
  if (!isnan(v) && !(v >= 0 && isfinite(v))) {
    l->p = vt;
    return bad(l, "bad value (expected a finite number >= 0, or NaN)", err);
  }
  if (kvsim__ser_acc_add(a, kind, labels, ln, ms, v) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", l->path);
  return KVSIM_OK;
}

static int read_lines(FILE *f, const char *path, kvsim__ser_acc_t *a, kvsim_err *err) {
  char *buf = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = KVSIM_OK;
  line_t l = {path, 0, NULL, NULL};
  while (rc == KVSIM_OK && (n = getline(&buf, &cap, f)) >= 0) {
    l.no++;
    l.p = buf;
    l.end = buf + n;
    if (memchr(buf, '\0', (size_t)n)) {
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s:%lld: a NUL byte (a binary file?)", path, l.no);
      break;
    }
    while (l.end > l.p && (l.end[-1] == '\n' || l.end[-1] == '\r'))
      l.end--;
    skip_blank(&l);
    if (l.p == l.end || *l.p == '#')
      continue;
    rc = sample(&l, a, err);
  }
  free(buf);
  if (rc == KVSIM_OK && ferror(f))
    rc = kvsim_err_set(err, KVSIM_EIO, "%s: read error", path);
  return rc;
}

int kvsim__fid_read_prom_text(const char *path, kvsim__ser_origin_t *o, kvsim_fid_series_t *s,
                              kvsim_err *err) {
  FILE *f;
  int rc = kvsim__open_input(path, KVSIM_EIO, &f, err);
  if (rc < 0)
    return rc;
  kvsim__ser_acc_t a;
  memset(&a, 0, sizeof a);
  rc = read_lines(f, path, &a, err);
  fclose(f);
  if (rc == KVSIM_OK)
    rc = kvsim__ser_acc_finish(&a, o, path, s, err);
  kvsim__ser_acc_fini(&a);
  return rc;
}
