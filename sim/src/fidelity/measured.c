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
 *   is "duration". It has no scheduling time, so no queueing delay.
 * The first two are read row by row by the workload room's format readers
 * (workload/formats/llmservingsim.c, requests.c: what a trace needs and
 * the recorded times of each request); the third is one JSON document. */
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
#include "workload/wl.h"

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

/* ---- per-request files: the workload room's readers ---- */

/* The public format of each measured format of the workload room. */
static const struct {
  kvsim_fid_fmt_t fmt;
  const char *name; /* the workload room's */
} row_formats[] = {
    {KVSIM_FID_FMT_LLMSERVINGSIM, "llmservingsim"},
    {KVSIM_FID_FMT_KVSIM, "requests"},
};

/* Reads every finished request of a file that the workload room reads
 * (wf: its format, or NULL to detect) into lat. */
static int read_rows(const char *path, const kvsim__format_t *wf, kvsim_fid_lat_t *lat,
                     kvsim_err *err) {
  kvsim__reader_t *r;
  int rc = kvsim__reader_open_measured(path, wf, &r, err);
  if (rc < 0)
    return kvsim__fid_recode(rc, KVSIM_EINVAL, err);
  lat->has_queue = true;
  kvsim__row_t row;
  while ((rc = kvsim__reader_next(r, &row, err)) == 1) {
    const kvsim__measured_t *m = &row.measured;
    if (!m->finished)
      continue; /* rejected or still in flight when the run stopped */
    if ((rc = kvsim_fidelity_lat_add(lat, m->arrival_s, m->scheduled_s, m->first_token_s,
                                     m->finish_s, row.prompt_tokens, row.output_tokens)) < 0) {
      kvsim_err_set(err, rc, "%s: out of memory", path);
      break;
    }
  }
  kvsim__reader_close(r);
  return rc < 0 ? kvsim__fid_recode(rc, KVSIM_EINVAL, err) : KVSIM_OK;
}

/* The workload format of a CSV measured run (kvsim's requests.csv), and
 * its public name; false when the header is no such file. */
static bool csv_format(const char *path, const kvsim__format_t **wf, kvsim_fid_fmt_t *fmt) {
  kvsim_err ignored = {0};
  if (kvsim__detect_format(path, wf, &ignored) < 0 || !kvsim__format_measures(*wf))
    return false;
  for (size_t k = 0; k < sizeof row_formats / sizeof *row_formats; k++)
    if (kvsim__format_find(row_formats[k].name) == *wf) {
      *fmt = row_formats[k].fmt;
      return true;
    }
  return false;
}

/* ---- vLLM benchmark JSON ---- */

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

static int read_vllm_bench(const char *text, const char *path, kvsim_fid_lat_t *lat, kvsim_err *err) {
  /* As any JSON file: one value and nothing after it but white space. */
  cJSON *o = kvsim__json_parse(text, path, err);
  int rc = KVSIM_OK;
  if (!o)
    return kvsim__fid_recode(KVSIM_EPARSE, KVSIM_EINVAL, err);
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
  const cJSON *all[] = {ttfts, itls, tpots, e2els, outs, ins, starts};
  const char *all_names[] = {"ttfts",       "itls",       "tpots",      "e2els",
                             "output_lens", "input_lens", "start_times"};
  for (int k = 0; k < 7; k++) {
    int at = non_finite_at(all[k]);
    if (at >= 0) {
      cJSON_Delete(o);
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: \"%s\" entry %d: not a finite number", path,
                           all_names[k], at);
    }
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

/* How much of the first line tells the format: far past any first
 * request row or the opening of a benchmark JSON. */
#define FIRST_LINE_MAX ((size_t)1 << 20)

int kvsim_fidelity_read_measured(const char *path, kvsim_fid_lat_t *lat, kvsim_fid_fmt_t *fmt, kvsim_err *err) {
  FILE *f;
  int rc = kvsim__open_input(path, KVSIM_EIO, &f, err);
  if (rc < 0)
    return rc;
  /* The format is told by the start of the first line, read to a bound:
   * a file of NUL bytes or one endless line once took all of its size
   * here. A vLLM benchmark JSON may be one line of many MiB; it is read
   * whole below, under the whole-file cap. */
  char *first = malloc(FIRST_LINE_MAX + 1);
  if (!first) {
    fclose(f);
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  }
  size_t got = fread(first, 1, FIRST_LINE_MAX, f);
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    free(first);
    return kvsim_err_set(err, KVSIM_EIO, "%s: read error", path);
  }
  const char *nl = memchr(first, '\n', got);
  size_t len = nl ? (size_t)(nl - first) : got;
  if (memchr(first, '\0', len)) {
    free(first);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s:1: a NUL byte (a binary file?)", path);
  }
  first[len] = '\0';
  if (got == 0) {
    free(first);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: empty file", path);
  }
  const char *s = first;
  while (isspace((unsigned char)*s))
    s++;
  const kvsim__format_t *wf = NULL;
  if (*s == '{' && strstr(s, "\"queued_ts\"")) {
    /* JSON lines whose first object has the LLMServingSim keys. */
    *fmt = KVSIM_FID_FMT_LLMSERVINGSIM;
    rc = read_rows(path, kvsim__format_find("llmservingsim"), lat, err);
  } else if (*s == '{') {
    *fmt = KVSIM_FID_FMT_VLLM_BENCH;
    char *text = NULL;
    rc = kvsim__read_file(path, &text, NULL, err);
    if (rc == KVSIM_OK)
      rc = read_vllm_bench(text, path, lat, err);
    free(text);
  } else if (csv_format(path, &wf, fmt)) {
    rc = read_rows(path, wf, lat, err);
  } else {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: unknown format (expected LLMServingSim requests.jsonl, kvsim requests.csv "
                       "or a vLLM benchmark JSON)",
                       path);
  }
  free(first);
  if (rc == KVSIM_OK && lat->finished == 0)
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: no finished request", path);
  return rc;
}
