/* Prometheus HTTP API range queries as a measured series (kvsim/fidelity.h
 * kvsim_fidelity_read_series): the answer of /api/v1/query_range
 * (https://prometheus.io/docs/prometheus/latest/querying/api/#range-queries),
 * `{"status": "success", "data": {"resultType": "matrix", "result":
 * [{"metric": {"__name__": ..., labels}, "values": [[unix_s, "v"], ...]}]}}`,
 * one answer holding the three gauges (a query such as
 * `{__name__=~"vllm:num_requests_(running|waiting)|vllm:kv_cache_usage_perc"}`)
 * or a JSON array of answers, one a query. Timestamps are seconds (with
 * decimals), as the API gives them; values are strings. Results whose
 * __name__ is not an engine gauge of series_acc.h are skipped; a result
 * without __name__ (an aggregation such as sum(...) drops it) cannot be
 * placed and is an error. Errors name the file and the JSON path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/alloc.h"
#include "core/util.h"
#include "fidelity/fid.h"
#include "fidelity/series_acc.h"
#include "kvsim/fidelity.h"

/* A point [unix_s, "value"]. */
static int point(const cJSON *p, const char *path, const char *where, int64_t j, int kind,
                 const char *labels, kvsim__ser_acc_t *a, kvsim_err *err) {
  const cJSON *ts = cJSON_GetArrayItem(p, 0), *val = cJSON_GetArrayItem(p, 1);
  if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(ts) || !cJSON_IsString(val))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: %s.values[%lld]: expected [unix_seconds, \"value\"]",
                         path, where, (long long)j);
  double s = ts->valuedouble;
  if (!isfinite(s) || fabs(s) * 1e3 > (double)KVSIM__SER_MAX_MS)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: %s.values[%lld][0]: bad timestamp %g", path, where,
                         (long long)j, s);
  char *end;
  double v = strtod(val->valuestring, &end);
  if (end == val->valuestring || *end || !(isnan(v) || (isfinite(v) && v >= 0))) {
    char esc[64];
    snprintf(esc, sizeof esc, "%s", val->valuestring);
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %s.values[%lld][1]: bad value \"%s\" (expected a finite number >= 0)",
                         path, where, (long long)j, esc);
  }
  if (kvsim__ser_acc_add(a, kind, labels, strlen(labels), llround(s * 1e3), v) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  return KVSIM_OK;
}

/* The labels of a result's metric without __name__, as "k=\"v\",...":
 * what tells two engines apart. */
static bool is_label(const cJSON *e) { return cJSON_IsString(e) && strcmp(e->string, "__name__"); }

static char *labels_of(const cJSON *metric) {
  size_t cap = 1;
  const cJSON *e;
  cJSON_ArrayForEach(e, metric) {
    if (is_label(e))
      cap += strlen(e->string) + strlen(e->valuestring) + 4;
  }
  char *out = kvsim__malloc(cap);
  if (!out)
    return NULL;
  size_t o = 0;
  cJSON_ArrayForEach(e, metric) {
    if (is_label(e))
      o += (size_t)snprintf(out + o, cap - o, "%s%s=\"%s\"", o ? "," : "", e->string, e->valuestring);
  }
  out[o] = '\0';
  return out;
}

static int result(const cJSON *r, const char *path, const char *where, kvsim__ser_acc_t *a,
                  kvsim_err *err) {
  const cJSON *metric = cJSON_GetObjectItemCaseSensitive(r, "metric");
  const cJSON *values = cJSON_GetObjectItemCaseSensitive(r, "values");
  if (!cJSON_IsObject(metric) || !cJSON_IsArray(values))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %s: expected {\"metric\": {...}, \"values\": [...]} (a range query's "
                         "matrix)",
                         path, where);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(metric, "__name__");
  if (!cJSON_IsString(name))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %s.metric: no \"__name__\" (query the gauge itself, not an "
                         "aggregation of it)",
                         path, where);
  int kind = kvsim__ser_kind(name->valuestring, strlen(name->valuestring));
  if (kind < 0)
    return KVSIM_OK;
  char *labels = labels_of(metric);
  if (!labels)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  int rc = KVSIM_OK;
  int64_t j = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, values) {
    if ((rc = point(p, path, where, j++, kind, labels, a, err)) < 0)
      break;
  }
  free(labels);
  return rc;
}

/* One answer; where: its JSON path ("$" or "$[2]"). */
static int answer(const cJSON *o, const char *path, const char *where, kvsim__ser_acc_t *a,
                  kvsim_err *err) {
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(o, "status");
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
  if (!cJSON_IsString(status) || strcmp(status->valuestring, "success")) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
    char msg[128];
    snprintf(msg, sizeof msg, "%s", cJSON_IsString(e) ? e->valuestring : "");
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: %s.status: not \"success\"%s%s", path, where,
                         msg[0] ? ": " : "", msg);
  }
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(data, "resultType");
  const cJSON *res = cJSON_GetObjectItemCaseSensitive(data, "result");
  if (!cJSON_IsString(type) || strcmp(type->valuestring, "matrix") || !cJSON_IsArray(res))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %s.data: expected \"resultType\": \"matrix\" and a \"result\" array "
                         "(a query_range answer)",
                         path, where);
  int64_t i = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, res) {
    char w[96];
    snprintf(w, sizeof w, "%s.data.result[%lld]", where, (long long)i++);
    int rc = result(r, path, w, a, err);
    if (rc < 0)
      return rc;
  }
  return KVSIM_OK;
}

int kvsim__fid_read_prom_json(const char *path, kvsim__ser_origin_t *o, kvsim_fid_series_t *s,
                              kvsim_err *err) {
  cJSON *j = kvsim__json_load(path, err);
  if (!j)
    return kvsim__fid_recode(err->code, KVSIM_EINVAL, err);
  kvsim__ser_acc_t a;
  memset(&a, 0, sizeof a);
  int rc = KVSIM_OK;
  if (cJSON_IsArray(j)) {
    int64_t i = 0;
    const cJSON *one;
    cJSON_ArrayForEach(one, j) {
      char w[32];
      snprintf(w, sizeof w, "$[%lld]", (long long)i++);
      if ((rc = answer(one, path, w, &a, err)) < 0)
        break;
    }
  } else {
    rc = answer(j, path, "$", &a, err);
  }
  cJSON_Delete(j);
  if (rc == KVSIM_OK)
    rc = kvsim__ser_acc_finish(&a, o, path, s, err);
  kvsim__ser_acc_fini(&a);
  return rc;
}
