/* Readers of measured per-request files (kvsim/fidelity.h), the format
 * detected from the content, not the extension:
 * - LLMServingSim requests.jsonl: one JSON object per line with
 *   input_toks, output_toks and the engine's monotonic queued_ts,
 *   scheduled_ts, first_token_ts, last_token_ts. Latencies are anchored on
 *   queued_ts: TTFT = first - queued, TPOT = (last - first) / (out - 1),
 *   E2E = last - queued, queueing delay = scheduled - queued.
 * - kvsim's own requests.csv, rows with status "finished".
 * - vLLM's benchmark result JSON (`vllm bench serve --save-result
 *   --save-detailed`; vllm benchmarks/benchmark_serving.py): per-request
 *   lists "ttfts" (s), "itls" (list of inter-token gaps, s) or "tpots",
 *   optional "e2els", "output_lens", "input_lens", "start_times",
 *   "errors"; E2E = TTFT + sum(ITL) when "e2els" is absent, the makespan
 *   is "duration". It has no scheduling time, so no queueing delay. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/util.h"
#include "fidelity/fid.h"
#include "kvsim/fidelity.h"

const char *kvsim_fidelity_fmt_name(kvsim_fid_fmt_t f) {
  switch (f) {
  case KVSIM_FID_FMT_LLMSERVINGSIM:
    return "llmservingsim";
  case KVSIM_FID_FMT_KVSIM:
    return "kvsim";
  case KVSIM_FID_FMT_VLLM_BENCH:
    return "vllm-bench";
  default:
    return "unknown";
  }
}

/* ---- LLMServingSim requests.jsonl ---- */

static int num_field(const cJSON *o, const char *key, double *out, const char *path, int line,
                     kvsim_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s:%d: '%s' missing or not a number", path, line, key);
  *out = v->valuedouble;
  return KVSIM_OK;
}

static int read_llmservingsim(FILE *f, const char *path, kvsim_fid_lat_t *lat, kvsim_err *err) {
  char *line = NULL;
  size_t cap = 0;
  int lineno = 0, rc = KVSIM_OK;
  lat->has_queue = true;
  while (getline(&line, &cap, f) >= 0) {
    lineno++;
    char *s = line;
    while (isspace((unsigned char)*s))
      s++;
    if (!*s)
      continue;
    cJSON *o = cJSON_Parse(s);
    if (!cJSON_IsObject(o)) {
      cJSON_Delete(o);
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s:%d: not a JSON object", path, lineno);
      break;
    }
    double in = 0, out = 0, q = 0, sch = 0, first = 0, last = 0;
    if ((rc = num_field(o, "input_toks", &in, path, lineno, err)) < 0 ||
        (rc = num_field(o, "output_toks", &out, path, lineno, err)) < 0 ||
        (rc = num_field(o, "queued_ts", &q, path, lineno, err)) < 0 ||
        (rc = num_field(o, "scheduled_ts", &sch, path, lineno, err)) < 0 ||
        (rc = num_field(o, "first_token_ts", &first, path, lineno, err)) < 0 ||
        (rc = num_field(o, "last_token_ts", &last, path, lineno, err)) < 0) {
      cJSON_Delete(o);
      break;
    }
    cJSON_Delete(o);
    if (out < 1 || in < 1 || first < q || last < first || sch < q) {
      rc = kvsim_err_set(err, KVSIM_EINVAL,
                         "%s:%d: inconsistent request (input %g, output %g, queued %.6f, scheduled "
                         "%.6f, first %.6f, last %.6f)",
                         path, lineno, in, out, q, sch, first, last);
      break;
    }
    if ((rc = kvsim_fidelity_lat_add(lat, q, sch, first, last, (int64_t)in, (int64_t)out)) < 0) {
      kvsim_err_set(err, rc, "%s: out of memory", path);
      break;
    }
  }
  free(line);
  return rc;
}

/* ---- kvsim requests.csv ---- */

static int read_kvsim_csv(FILE *f, const char *path, char *header, kvsim_fid_lat_t *lat, kvsim_err *err) {
  enum { MAXC = 64 };
  char *cols[MAXC];
  kvsim__fid_chomp(header);
  int nh = kvsim__fid_split_csv(header, cols, MAXC);
  if (nh > MAXC)
    nh = MAXC;
  static const char *const need[] = {"arrival_s", "first_scheduled_s", "first_token_s", "finish_s",
                                     "prompt_tokens", "output_tokens", "status"};
  int idx[7];
  for (int k = 0; k < 7; k++)
    if ((idx[k] = kvsim__fid_col_index(cols, nh, need[k])) < 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s:1: no column '%s' (expected kvsim's requests.csv header)",
                           path, need[k]);
  lat->has_queue = true;
  char *line = NULL;
  size_t cap = 0;
  int lineno = 1, rc = KVSIM_OK;
  while (getline(&line, &cap, f) >= 0) {
    lineno++;
    kvsim__fid_chomp(line);
    if (!line[0])
      continue;
    char *c[MAXC];
    int n = kvsim__fid_split_csv(line, c, MAXC);
    if (n != nh) {
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s:%d: %d columns, the header has %d", path, lineno, n, nh);
      break;
    }
    if (strcmp(c[idx[6]], "finished"))
      continue; /* rejected or still in flight when the run stopped */
    double v[6];
    for (int k = 0; k < 6; k++)
      if (kvsim__fid_parse_num(c[idx[k]], &v[k]) < 0) {
        rc = kvsim_err_set(err, KVSIM_EINVAL, "%s:%d: column '%s': bad value '%s'", path, lineno,
                           need[k], c[idx[k]]);
        goto out;
      }
    if ((rc = kvsim_fidelity_lat_add(lat, v[0], v[1], v[2], v[3], (int64_t)v[4], (int64_t)v[5])) < 0) {
      kvsim_err_set(err, rc, "%s: out of memory", path);
      break;
    }
  }
out:
  free(line);
  return rc;
}

/* ---- vLLM benchmark JSON ---- */

static const cJSON *arr(const cJSON *o, const char *key) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsArray(a) ? a : NULL;
}

static int read_vllm_bench(const char *text, const char *path, kvsim_fid_lat_t *lat, kvsim_err *err) {
  cJSON *o = cJSON_Parse(text);
  int rc = KVSIM_OK;
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: not a JSON object", path);
  }
  const cJSON *ttfts = arr(o, "ttfts"), *itls = arr(o, "itls"), *tpots = arr(o, "tpots"),
              *e2els = arr(o, "e2els"), *outs = arr(o, "output_lens"), *ins = arr(o, "input_lens"),
              *starts = arr(o, "start_times"), *errs = arr(o, "errors");
  if (!ttfts || (!itls && !e2els && !tpots)) {
    cJSON_Delete(o);
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: no per-request lists (expected \"ttfts\" and one of \"itls\", "
                         "\"tpots\", \"e2els\": vllm bench serve --save-result --save-detailed)",
                         path);
  }
  int n = cJSON_GetArraySize(ttfts);
  const cJSON *lists[] = {itls, tpots, e2els, outs, ins, starts, errs};
  const char *names[] = {"itls", "tpots", "e2els", "output_lens", "input_lens", "start_times", "errors"};
  for (int k = 0; k < 7; k++)
    if (lists[k] && cJSON_GetArraySize(lists[k]) != n) {
      /* The size is read before the document goes. */
      int got = cJSON_GetArraySize(lists[k]);
      cJSON_Delete(o);
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: \"%s\" has %d entries, \"ttfts\" %d", path, names[k],
                           got, n);
    }
  lat->has_queue = false;
  for (int i = 0; i < n; i++) {
    const cJSON *e = errs ? cJSON_GetArrayItem(errs, i) : NULL;
    if (cJSON_IsString(e) && e->valuestring[0])
      continue; /* a failed request */
    const cJSON *t = cJSON_GetArrayItem(ttfts, i);
    if (!cJSON_IsNumber(t) || t->valuedouble <= 0)
      continue; /* failed requests carry ttft 0 */
    double ttft = t->valuedouble, start = 0, e2e = NAN;
    int64_t out = 0, in = 0;
    const cJSON *x;
    if (outs && cJSON_IsNumber(x = cJSON_GetArrayItem(outs, i)))
      out = (int64_t)x->valuedouble;
    if (ins && cJSON_IsNumber(x = cJSON_GetArrayItem(ins, i)))
      in = (int64_t)x->valuedouble;
    if (starts && cJSON_IsNumber(x = cJSON_GetArrayItem(starts, i)))
      start = x->valuedouble;
    if (e2els && cJSON_IsNumber(x = cJSON_GetArrayItem(e2els, i))) {
      e2e = x->valuedouble;
    } else if (itls && cJSON_IsArray(x = cJSON_GetArrayItem(itls, i))) {
      double sum = 0;
      const cJSON *g;
      cJSON_ArrayForEach(g, x) if (cJSON_IsNumber(g)) sum += g->valuedouble;
      e2e = ttft + sum;
      if (out == 0)
        out = cJSON_GetArraySize(x) + 1;
    } else if (tpots && cJSON_IsNumber(x = cJSON_GetArrayItem(tpots, i)) && out > 1) {
      e2e = ttft + x->valuedouble * (double)(out - 1);
    }
    if (!isfinite(e2e) || e2e < ttft) {
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: request %d: no usable end-to-end latency", path, i);
      break;
    }
    if (out < 1)
      out = 1;
    if ((rc = kvsim_fidelity_lat_add(lat, start, -1, start + ttft, start + e2e, in, out)) < 0) {
      kvsim_err_set(err, rc, "%s: out of memory", path);
      break;
    }
  }
  const cJSON *dur = cJSON_GetObjectItemCaseSensitive(o, "duration");
  if (rc == KVSIM_OK && cJSON_IsNumber(dur) && dur->valuedouble > 0 && !starts) {
    /* Without start times the makespan is the benchmark's own duration. */
    lat->t_first = 0;
    lat->t_last = dur->valuedouble;
  }
  cJSON_Delete(o);
  return rc;
}

int kvsim_fidelity_read_measured(const char *path, kvsim_fid_lat_t *lat, kvsim_fid_fmt_t *fmt, kvsim_err *err) {
  FILE *f = fopen(path, "r");
  if (!f)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
  char *first = NULL;
  size_t cap = 0;
  ssize_t got = getline(&first, &cap, f);
  if (got <= 0) {
    free(first);
    fclose(f);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: empty file", path);
  }
  const char *s = first;
  while (isspace((unsigned char)*s))
    s++;
  int rc;
  if (*s == '{' && strstr(s, "\"queued_ts\"")) {
    /* JSON lines whose first object has the LLMServingSim keys. */
    *fmt = KVSIM_FID_FMT_LLMSERVINGSIM;
    rewind(f);
    rc = read_llmservingsim(f, path, lat, err);
  } else if (*s == '{') {
    *fmt = KVSIM_FID_FMT_VLLM_BENCH;
    fclose(f);
    f = NULL;
    char *text = NULL;
    rc = kvsim__read_file(path, &text, NULL, err);
    if (rc == KVSIM_OK)
      rc = read_vllm_bench(text, path, lat, err);
    free(text);
  } else if (!strncmp(s, "request_id,", 11)) {
    *fmt = KVSIM_FID_FMT_KVSIM;
    rc = read_kvsim_csv(f, path, first, lat, err);
  } else {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: unknown format (expected LLMServingSim requests.jsonl, kvsim requests.csv "
                       "or a vLLM benchmark JSON)",
                       path);
  }
  free(first);
  if (f)
    fclose(f);
  if (rc == KVSIM_OK && lat->finished == 0)
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: no finished request", path);
  return rc;
}

