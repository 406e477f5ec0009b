/* A sweep's identity (the hash every shard records) and the record a
 * shard leaves beside its table, so that shards run on several machines
 * (Slurm job arrays, GNU parallel, Kubernetes indexed jobs) can be joined
 * and checked to belong together. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arith.h"
#include "kvsim/report.h"
#include "study/shard.h"

/* Bytes folded through splitmix64's mixer, 8 at a time; the length ends
 * each part so that ("ab", "c") and ("a", "bc") differ. */
static uint64_t fold(uint64_t h, const char *text) {
  size_t n = strlen(text), i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, text + i, 8);
    h = kvsim__mix64(h ^ w);
  }
  uint64_t w = 0;
  memcpy(&w, text + i, n - i);
  h = kvsim__mix64(h ^ w);
  return kvsim__mix64(h ^ (uint64_t)n);
}

/* A tree printed with fixed number formatting (report.h), folded. */
static int fold_json(uint64_t *h, const cJSON *j) {
  if (!j) {
    *h = fold(*h, "null");
    return KVSIM_OK;
  }
  char *text = kvsim_report_json_string(j);
  if (!text)
    return KVSIM_ENOMEM;
  *h = fold(*h, text);
  free(text);
  return KVSIM_OK;
}

int kvsim_sweep_hash(const kvsim_sweep_t *s, uint64_t *out, kvsim_err *err) {
  uint64_t h = fold(0, "kvsim sweep 1");
  h = fold(h, s->name);
  h = fold(h, s->mode == KVSIM_SWEEP_ZIP ? "zip" : "grid");
  int rc = fold_json(&h, s->scenario);
  if (rc == KVSIM_OK)
    rc = fold_json(&h, s->set);
  for (int k = 0; k < s->nkeys && rc == KVSIM_OK; k++) {
    h = fold(h, s->keys[k]);
    rc = fold_json(&h, s->values[k]);
  }
  if (rc < 0)
    return kvsim_err_set(err, rc, "%s: out of memory for the sweep's hash", s->name);
  *out = h;
  return KVSIM_OK;
}

int kvsim__shard_record_write(const kvsim_sweep_t *s, const char *out, int shard, int nshards,
                              kvsim_err *err) {
  uint64_t h;
  int rc = kvsim_sweep_hash(s, &h, err);
  if (rc < 0)
    return rc;
  char hex[17], table[64], path[4400];
  snprintf(hex, sizeof hex, "%016" PRIx64, h);
  snprintf(table, sizeof table, KVSIM__SHARD_TABLE, shard);
  snprintf(path, sizeof path, "%s/" KVSIM__SHARD_RECORD, out, shard);
  cJSON *j = cJSON_CreateObject();
  char *text = NULL;
  if (j && cJSON_AddStringToObject(j, "sweep", s->name) &&
      cJSON_AddStringToObject(j, "sweep_hash", hex) && cJSON_AddNumberToObject(j, "shard", shard) &&
      cJSON_AddNumberToObject(j, "shards", nshards) &&
      cJSON_AddNumberToObject(j, "points", (double)s->points) &&
      cJSON_AddStringToObject(j, "table", table) &&
      cJSON_AddStringToObject(j, "kvsim_version", KVSIM_VERSION))
    text = kvsim_report_json_string(j);
  cJSON_Delete(j);
  if (!text)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  size_t len = strlen(text);
  text[len] = '\n';
  rc = kvsim_report_write_atomic(path, text, len + 1, err);
  free(text);
  return rc;
}

int kvsim_sweep_parse_shard(const char *s, int *shard, int *nshards, kvsim_err *err) {
  const char *slash = strchr(s, '/');
  long long v[2];
  for (int k = 0; k < 2; k++) {
    const char *b = k ? (slash ? slash + 1 : NULL) : s, *e = k ? s + strlen(s) : slash;
    size_t n = b && e ? (size_t)(e - b) : 0;
    bool digits = n > 0;
    for (size_t i = 0; digits && i < n; i++)
      digits = b[i] >= '0' && b[i] <= '9';
    if (!digits)
      return kvsim_err_set(err, KVSIM_EINVAL, "--shard: '%s' is not I/N (two integers, 0 <= I < N)",
                           s);
    errno = 0;
    v[k] = strtoll(b, NULL, 10);
    if (errno == ERANGE || v[k] > INT_MAX)
      return kvsim_err_set(err, KVSIM_EINVAL, "--shard: '%s': %s is out of range [%d, %d]", s,
                           k ? "N" : "I", k, INT_MAX);
  }
  if (v[1] < 1 || v[0] >= v[1])
    return kvsim_err_set(err, KVSIM_EINVAL, "--shard: '%s' is not I/N with 0 <= I < N", s);
  *shard = (int)v[0];
  *nshards = (int)v[1];
  return KVSIM_OK;
}
