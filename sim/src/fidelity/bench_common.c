/* What the benchmark readers share (fidelity/bench.h): finding the run
 * in a result file, numbers as Python writes them, the per-request lists
 * and the aggregates. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "fidelity/bench.h"
#include "fidelity/fid.h"

/* ---- the run ---- */

/* A copy of text with the bare words Infinity, -Infinity and NaN outside
 * strings (Python's json.dumps of inf and nan) made JSON: 1e999 (read by
 * cJSON as infinity) and null. NULL when out of memory. */
static char *python_words(const char *text) {
  size_t n = strlen(text);
  char *out = kvsim__malloc(n + n / 2 + 16), *o = out;
  if (!out)
    return NULL;
  bool in_str = false;
  for (const char *p = text; *p;) {
    if (in_str) {
      if (*p == '\\' && p[1])
        *o++ = *p++;
      else if (*p == '"')
        in_str = false;
      *o++ = *p++;
    } else if (*p == '"') {
      in_str = true;
      *o++ = *p++;
    } else if (!strncmp(p, "Infinity", 8)) {
      memcpy(o, "1e999", 5), o += 5, p += 8;
    } else if (!strncmp(p, "NaN", 3)) {
      memcpy(o, "null", 4), o += 4, p += 3;
    } else {
      *o++ = *p++;
    }
  }
  *o = '\0';
  return out;
}

static int parse_object(const char *text, const char *where, cJSON **out, kvsim_err *err) {
  const char *end = NULL;
  *out = cJSON_ParseWithOpts(text, &end, 0);
  if (*out && cJSON_IsObject(*out)) {
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
      end++;
    if (!*end)
      return KVSIM_OK;
  }
  cJSON_Delete(*out);
  *out = NULL;
  return kvsim_err_set(err, KVSIM_EINVAL, "%s: not one JSON object (a benchmark run)", where);
}

int kvsim__bench_parse(const char *text, const char *path, cJSON **out, int *run, int *runs,
                       char *where, size_t cap, kvsim_err *err) {
  *out = NULL;
  snprintf(where, cap, "%s", path);
  char *t = python_words(text);
  if (!t)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  kvsim_err ignored = {0};
  *run = *runs = 1;
  if (parse_object(t, path, out, &ignored) == KVSIM_OK) {
    kvsim__free(t);
    return KVSIM_OK;
  }
  /* One run a line, appended: the last non-empty line is the latest. */
  *runs = 0;
  int lines = 0, last_line = 0;
  char *last = NULL;
  for (char *p = t; *p;) {
    char *nl = strchr(p, '\n');
    char *e = nl ? nl : p + strlen(p);
    lines++;
    char *q = p;
    while (q < e && (*q == ' ' || *q == '\t' || *q == '\r'))
      q++;
    if (q < e) {
      (*runs)++;
      last = p;
      last_line = lines;
    }
    if (!nl)
      break;
    *nl = '\0';
    p = nl + 1;
  }
  *run = *runs;
  int rc;
  if (!last) {
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: empty file", path);
  } else {
    snprintf(where, cap, "%s:%d", path, last_line);
    rc = parse_object(last, where, out, err);
  }
  kvsim__free(t);
  return rc;
}

int kvsim__bench_num(const cJSON *o, const char *key, const char *path, double lo, double hi,
                     double *out, kvsim_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v || cJSON_IsNull(v))
    return 0;
  double x = NAN;
  if (cJSON_IsNumber(v))
    x = v->valuedouble;
  else if (cJSON_IsString(v) && (!strcmp(v->valuestring, "inf") || !strcmp(v->valuestring, "Infinity")))
    x = INFINITY;
  if (!(x >= lo && x <= hi))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: \"%s\": not a number in [%g, %g]", path, key, lo, hi);
  *out = x;
  return 1;
}

/* ---- per-request lists ---- */

static const cJSON *arr(const cJSON *o, const char *key) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsArray(a) ? a : NULL;
}

/* The index of the first entry of list a that is or holds a number that is
 * not finite (cJSON reads 1e400 as inf), or -1. */
static int non_finite_at(const cJSON *a) {
  int i = 0;
  for (const cJSON *e = a ? a->child : NULL; e; e = e->next, i++) {
    if (cJSON_IsNumber(e) && !isfinite(e->valuedouble))
      return i;
    for (const cJSON *g = cJSON_IsArray(e) ? e->child : NULL; g; g = g->next)
      if (cJSON_IsNumber(g) && !isfinite(g->valuedouble))
        return i;
  }
  return -1;
}

enum { TTFT, ITLS, TPOTS, E2ELS, OUTS, INS, STARTS, ERRS, NLISTS };

static int check_lists(const cJSON *const l[NLISTS], const char *path, kvsim_err *err) {
  static const char *const names[NLISTS] = {"ttfts",       "itls",       "tpots",       "e2els",
                                            "output_lens", "input_lens", "start_times", "errors"};
  int n = cJSON_GetArraySize(l[TTFT]);
  for (int k = 1; k < NLISTS; k++)
    if (l[k] && cJSON_GetArraySize(l[k]) != n)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: \"%s\" has %d entries, \"ttfts\" %d", path, names[k],
                           cJSON_GetArraySize(l[k]), n);
  for (int k = 0; k < ERRS; k++) {
    int at = non_finite_at(l[k]);
    if (at >= 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: \"%s\" entry %d: not a finite number", path, names[k],
                           at);
  }
  return KVSIM_OK;
}

/* Request i: 1 when finished (into lat), 0 when failed, or an error. */
static int one_request(const cJSON *const l[NLISTS], int i, const char *path, kvsim_fid_lat_t *lat,
                       kvsim_err *err) {
  const cJSON *e = l[ERRS] ? cJSON_GetArrayItem(l[ERRS], i) : NULL;
  if (cJSON_IsString(e) && e->valuestring[0])
    return 0; /* a failed request */
  const cJSON *t = cJSON_GetArrayItem(l[TTFT], i);
  if (!cJSON_IsNumber(t) || t->valuedouble <= 0)
    return 0; /* failed requests carry ttft 0 */
  double ttft = t->valuedouble, start = 0, e2e = NAN;
  int64_t out = 0, in = 0;
  const cJSON *x;
  if (l[OUTS] && cJSON_IsNumber(x = cJSON_GetArrayItem(l[OUTS], i)))
    out = (int64_t)x->valuedouble;
  if (l[INS] && cJSON_IsNumber(x = cJSON_GetArrayItem(l[INS], i)))
    in = (int64_t)x->valuedouble;
  if (l[STARTS] && cJSON_IsNumber(x = cJSON_GetArrayItem(l[STARTS], i)))
    start = x->valuedouble;
  if (l[E2ELS] && cJSON_IsNumber(x = cJSON_GetArrayItem(l[E2ELS], i))) {
    e2e = x->valuedouble;
  } else if (l[ITLS] && cJSON_IsArray(x = cJSON_GetArrayItem(l[ITLS], i))) {
    double sum = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, x) if (cJSON_IsNumber(g)) sum += g->valuedouble;
    e2e = ttft + sum;
    if (out == 0)
      out = cJSON_GetArraySize(x) + 1;
  } else if (l[TPOTS] && cJSON_IsNumber(x = cJSON_GetArrayItem(l[TPOTS], i)) && out > 1) {
    e2e = ttft + x->valuedouble * (double)(out - 1);
  }
  if (!isfinite(e2e) || e2e < ttft)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: request %d: no usable end-to-end latency", path, i);
  if (out < 1)
    out = 1;
  if (kvsim_fidelity_lat_add(lat, start, -1, start + ttft, start + e2e, in, out) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  return 1;
}

int kvsim__bench_lists(const cJSON *o, const char *path, kvsim_fid_lat_t *lat, bool *starts,
                       kvsim_err *err) {
  /* vLLM's end-to-end list is "latencies" (vllm/benchmarks/serve.py,
   * benchmark()); "e2els" is read too. */
  const cJSON *e2e = arr(o, "e2els");
  const cJSON *l[NLISTS] = {arr(o, "ttfts"),       e2e ? NULL : arr(o, "itls"),
                            arr(o, "tpots"),       e2e ? e2e : arr(o, "latencies"),
                            arr(o, "output_lens"), arr(o, "input_lens"),
                            arr(o, "start_times"), arr(o, "errors")};
  *starts = l[STARTS] != NULL;
  if (!l[TTFT] || (!l[ITLS] && !l[E2ELS] && !l[TPOTS]))
    return 0;
  int rc = check_lists(l, path, err);
  if (rc < 0)
    return rc;
  lat->has_queue = false;
  int n = cJSON_GetArraySize(l[TTFT]);
  for (int i = 0; i < n; i++)
    if ((rc = one_request(l, i, path, lat, err)) < 0)
      return rc;
  double dur;
  if (!*starts && kvsim__bench_num(o, "duration", path, 0, 1e12, &dur, err) == 1 && dur > 0) {
    /* Without start times the makespan is the benchmark's own duration. */
    lat->t_first = 0;
    lat->t_last = dur;
  }
  return 1;
}

/* ---- aggregates ---- */

int kvsim__bench_aggregates(const cJSON *o, const char *path, const char *const stems[3],
                            kvsim_fid_measured_t *m, kvsim_err *err) {
  static const char *const q[] = {"mean", "median", "p90", "p99"};
  int found = 0, rc;
  for (int k = 0; k < KVSIM_FID_NLAT; k++)
    m->stated[k] = (kvsim_fid_stat_t){NAN, NAN, NAN, NAN, 0};
  for (int k = 0; k < 3; k++) {
    double *slot[] = {&m->stated[k].mean, &m->stated[k].p50, &m->stated[k].p90, &m->stated[k].p99};
    for (int j = 0; j < 4; j++) {
      char key[64];
      snprintf(key, sizeof key, "%s_%s_ms", q[j], stems[k]);
      double ms = NAN;
      if ((rc = kvsim__bench_num(o, key, path, 0, 1e12, &ms, err)) < 0)
        return rc;
      if (rc == 1) {
        *slot[j] = ms / 1e3;
        found++;
      }
    }
  }
  double done = 0, dur = NAN, tokens = NAN;
  if ((rc = kvsim__bench_num(o, "completed", path, 0, 1e15, &done, err)) < 0 ||
      (rc = kvsim__bench_num(o, "duration", path, 0, 1e12, &dur, err)) < 0 ||
      (rc = kvsim__bench_num(o, "total_output_tokens", path, 0, 1e18, &tokens, err)) < 0)
    return rc;
  if (!found)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: neither per-request lists (\"ttfts\", \"itls\") nor aggregates "
                         "(\"mean_ttft_ms\", ...): not a benchmark result",
                         path);
  if (done < 1)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: no finished request (\"completed\" missing or 0)", path);
  m->aggregates_only = true;
  m->stated_n = (int64_t)done;
  for (int k = 0; k < 3; k++)
    m->stated[k].n = m->stated_n;
  m->stated_makespan = dur > 0 ? dur : NAN;
  m->stated_tput = dur > 0 && isfinite(tokens) ? tokens / dur : NAN;
  return KVSIM_OK;
}
