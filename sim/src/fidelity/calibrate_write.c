/* Writing calibrated coefficients into a GPU JSON file: the catalog's (or
 * the given file's) text with its "perf" object replaced, everything else
 * kept byte for byte (kvsim/fidelity.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/alloc.h"
#include "core/catalog.h"
#include "core/util.h"
#include "core/vec.h"
#include "kvsim/fidelity.h"
#include "kvsim/report.h"

/* Where the top-level "perf" member of a JSON object sits in `t`: from the
 * comma before it (or its key) to the end of its value. Strings are
 * skipped so that a "perf" inside a text does not count. Returns false
 * when there is none. */
static bool find_perf_member(const char *t, size_t *from, size_t *to) {
  int depth = 0;
  size_t last_comma = 0;
  bool have_comma = false;
  for (size_t i = 0; t[i]; i++) {
    char ch = t[i];
    if (ch == '"') {
      size_t k = i + 1;
      while (t[k] && t[k] != '"')
        k += t[k] == '\\' && t[k + 1] ? 2 : 1;
      if (!t[k])
        return false;
      if (depth == 1 && k - i - 1 == 4 && !strncmp(t + i + 1, "perf", 4)) {
        size_t v = k + 1;
        while (t[v] == ' ' || t[v] == '\t' || t[v] == '\n' || t[v] == '\r')
          v++;
        if (t[v] == ':') {
          /* The value: an object (or a scalar up to the next , or }). */
          size_t e = v + 1;
          int d = 0;
          for (; t[e]; e++) {
            if (t[e] == '"') {
              e++;
              while (t[e] && t[e] != '"')
                e += t[e] == '\\' && t[e + 1] ? 2 : 1;
              if (!t[e])
                return false;
              continue;
            }
            if (t[e] == '{' || t[e] == '[')
              d++;
            else if (t[e] == '}' || t[e] == ']') {
              if (d == 0)
                break;
              if (--d == 0) {
                e++;
                break;
              }
            } else if (t[e] == ',' && d == 0)
              break;
          }
          if (!have_comma) {
            /* The first member: take the comma after it instead. */
            size_t f = e;
            while (t[f] == ' ' || t[f] == '\t' || t[f] == '\n' || t[f] == '\r')
              f++;
            if (t[f] == ',')
              e = f + 1;
          }
          *from = have_comma ? last_comma : i;
          *to = e;
          return true;
        }
      }
      i = k;
      continue;
    }
    if (ch == '{' || ch == '[')
      depth++;
    else if (ch == '}' || ch == ']')
      depth--;
    else if (ch == ',' && depth == 1) {
      last_comma = i;
      have_comma = true;
    }
  }
  return false;
}

/* Appends `fmt` to a growable buffer. */
static int cat(char **buf, size_t *len, int64_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int cat(char **buf, size_t *len, int64_t *cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || kvsim__grow((void **)buf, cap, (int64_t)(*len + (size_t)n + 1), 1) < 0)
    return -1;
  va_start(ap, fmt);
  vsnprintf(*buf + *len, (size_t)*cap - *len, fmt, ap);
  va_end(ap);
  *len += (size_t)n;
  return 0;
}

/* The GPU's JSON with the fitted "perf" object. Only that member is
 * replaced (or added), as text, so the hardware facts stay byte for byte
 * as they were. */
int kvsim_fidelity_write_gpu_json(const char *gpu_name, const char *gpu_arg, const kvsim_gpu_perf_t *p,
                                  const char *out, kvsim_err *err) {
  char *text = NULL;
  const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_GPU, gpu_name);
  int rc;
  if (e && !strchr(gpu_arg, '/') && !kvsim__ends_with(gpu_arg, ".json")) {
    text = kvsim__strdup(e->json);
    if (!text)
      return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  } else if ((rc = kvsim__read_file(gpu_arg, &text, NULL, err)) < 0) {
    return rc;
  }
  cJSON *j = cJSON_Parse(text);
  bool ok = cJSON_IsObject(j);
  cJSON_Delete(j);
  if (!ok) {
    free(text);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: not a JSON object", gpu_arg);
  }
  size_t from, to;
  /* Every top-level "perf" goes (a hand-edited file may repeat the key;
   * cJSON would read the first). */
  while (find_perf_member(text, &from, &to))
    memmove(text + from, text + to, strlen(text + to) + 1);
  /* Insert before the object's closing brace, after its last member. */
  char *close = strrchr(text, '}');
  if (!close) {
    free(text);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: no closing brace", gpu_arg);
  }
  size_t head = (size_t)(close - text);
  while (head > 0 && (text[head - 1] == ' ' || text[head - 1] == '\n' || text[head - 1] == '\r' ||
                      text[head - 1] == '\t'))
    head--;
  char *buf = NULL;
  size_t len = 0;
  int64_t cap = 0;
  cJSON *src = cJSON_CreateString(p->source);
  char *src_json = src ? cJSON_PrintUnformatted(src) : NULL;
  cJSON_Delete(src);
  /* A user's own host figure on their GPU's kernel tables; the client
   * latency is the benchmark's, not the GPU's, and is not written. */
  int bad = !src_json || cat(&buf, &len, &cap, "%.*s,\n  \"perf\": {\n", (int)head, text) < 0 ||
            cat(&buf, &len, &cap,
                "    \"kernels\": \"%s\",\n    \"status\": \"%s\",\n    \"host_us\": %.1f,\n"
                "    \"host_per_seq_us\": %.2f,\n    \"source\": %s\n  }\n}\n",
                p->kernels, kvsim_cal_status_name(p->status), p->host_us > 0 ? p->host_us : 0.0,
                p->host_per_seq_us > 0 ? p->host_per_seq_us : 0.0, src_json) < 0;
  free(src_json);
  free(text);
  if (bad) {
    kvsim__free(buf);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  }
  /* The result must still be a GPU kvsim reads. */
  kvsim_gpu_t check;
  if ((rc = kvsim_gpu_parse(buf, out, &check, err)) < 0) {
    kvsim__free(buf);
    return rc;
  }
  rc = kvsim_report_write_atomic(out, buf, len, err);
  kvsim__free(buf);
  return rc;
}
