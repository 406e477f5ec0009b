/* The search block of a study (kvsim/deploy.h): its lists, checked once
 * with a message naming the key, and the configurations they span. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/deploy.h"
#include "kvsim/gpu.h"

#define DEFAULT_MAX_REPLICAS 32

/* The list under key: absent (0), or a non-empty array of at most
 * KVSIM_DEPLOY_MAX_VALUES (1); errors name the key. */
static int list(const cJSON *block, const char *key, const char *where, const cJSON **out,
                kvsim_err *err) {
  *out = cJSON_GetObjectItemCaseSensitive(block, key);
  if (!*out)
    return 0;
  if (!cJSON_IsArray(*out) || cJSON_GetArraySize(*out) < 1)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s: expected a non-empty list", where, key);
  if (cJSON_GetArraySize(*out) > KVSIM_DEPLOY_MAX_VALUES)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s: %d values, at most %d", where, key,
                         cJSON_GetArraySize(*out), KVSIM_DEPLOY_MAX_VALUES);
  return 1;
}

/* Integers in [lo, hi], each once. */
static int ints(const cJSON *block, const char *key, int64_t lo, int64_t hi, const char *where,
                int64_t *v, int *n, kvsim_err *err) {
  const cJSON *a;
  int rc = list(block, key, where, &a, err);
  if (rc <= 0)
    return rc;
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    if (!(x >= (double)lo && x <= (double)hi && x == floor(x)))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s[%d]: expected an integer in [%lld, %lld]",
                           where, key, *n, (long long)lo, (long long)hi);
    for (int j = 0; j < *n; j++)
      if (v[j] == (int64_t)x)
        return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s[%d]: %lld is given twice", where, key, *n,
                             (long long)x);
    v[(*n)++] = (int64_t)x;
  }
  return KVSIM_OK;
}

/* Strings (cap bytes each), each once. */
static int strs(const cJSON *block, const char *key, const char *where, char *v, size_t cap,
                int *n, kvsim_err *err) {
  const cJSON *a;
  int rc = list(block, key, where, &a, err);
  if (rc <= 0)
    return rc;
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    if (!cJSON_IsString(e) || !e->valuestring[0] || strlen(e->valuestring) >= cap)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s[%d]: expected a name (1 to %zu characters)",
                           where, key, *n, cap - 1);
    for (int j = 0; j < *n; j++)
      if (!strcmp(v + (size_t)j * cap, e->valuestring))
        return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s[%d]: '%s' is given twice", where, key, *n,
                             e->valuestring);
    snprintf(v + (size_t)(*n)++ * cap, cap, "%s", e->valuestring);
  }
  return KVSIM_OK;
}

static int gpus(const cJSON *block, const char *where, kvsim_deploy_space_t *s, kvsim_err *err) {
  int rc = strs(block, "gpus", where, &s->gpus[0][0], sizeof s->gpus[0], &s->ngpus, err);
  if (rc < 0)
    return rc;
  if (s->ngpus == 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing key 'gpus' (the GPU kinds to search)",
                         where);
  for (int i = 0; i < s->ngpus; i++) {
    char name[64];
    if (!kvsim_gpu_catalog_name(s->gpus[i], name, sizeof name))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.gpus[%d]: '%s' is not a GPU of the catalog (kvsim list gpus)",
                           where, i, s->gpus[i]);
    snprintf(s->gpus[i], sizeof s->gpus[i], "%s", name);
    for (int j = 0; j < i; j++)
      if (!strcmp(s->gpus[j], name))
        return kvsim_err_set(err, KVSIM_EINVAL, "%s.gpus[%d]: %s is given twice", where, i, name);
  }
  return KVSIM_OK;
}

int kvsim_deploy_space_parse(const cJSON *block, const char *where, kvsim_deploy_space_t *s,
                             kvsim_err *err) {
  memset(s, 0, sizeof *s);
  s->max_replicas = DEFAULT_MAX_REPLICAS;
  if (!cJSON_IsObject(block))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: expected an object of lists", where);
  static const char *const keys[] = {"gpus", "tensor_parallel_size", "max_num_seqs",
                                     "max_num_batched_tokens", "kv_cache_dtype", "quantization",
                                     "max_replicas", NULL};
  int64_t tp[KVSIM_DEPLOY_MAX_VALUES];
  int rc;
  if ((rc = kvsim__json_only_keys(block, keys, where, err)) < 0 || (rc = gpus(block, where, s, err)) < 0 ||
      (rc = ints(block, "tensor_parallel_size", 1, 64, where, tp, &s->ntp, err)) < 0 ||
      (rc = ints(block, "max_num_seqs", 1, 65536, where, s->max_num_seqs, &s->nseqs, err)) < 0 ||
      (rc = ints(block, "max_num_batched_tokens", 1, 10000000, where, s->max_num_batched_tokens,
                 &s->nmbt, err)) < 0 ||
      (rc = strs(block, "kv_cache_dtype", where, &s->kv_cache_dtype[0][0], sizeof s->kv_cache_dtype[0],
                 &s->nkv, err)) < 0 ||
      (rc = strs(block, "quantization", where, &s->quantization[0][0], sizeof s->quantization[0],
                 &s->nquant, err)) < 0)
    return rc;
  for (int i = 0; i < s->ntp; i++)
    s->tp[i] = (int)tp[i];
  const cJSON *mr = cJSON_GetObjectItemCaseSensitive(block, "max_replicas");
  if (mr) {
    double x = cJSON_IsNumber(mr) ? mr->valuedouble : NAN;
    if (!(x >= 1 && x <= KVSIM_DEPLOY_MAX_REPLICAS && x == floor(x)))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.max_replicas: expected an integer in [1, %d]",
                           where, KVSIM_DEPLOY_MAX_REPLICAS);
    s->max_replicas = (int)x;
  }
  return KVSIM_OK;
}

static int64_t len(int n) { return n > 0 ? n : 1; }

int64_t kvsim_deploy_space_count(const kvsim_deploy_space_t *s) {
  return len(s->ngpus) * len(s->ntp) * len(s->nquant) * len(s->nkv) * len(s->nseqs) * len(s->nmbt);
}

void kvsim_deploy_space_config(const kvsim_deploy_space_t *s, int64_t i, kvsim_deploy_config_t *out) {
  memset(out, 0, sizeof *out);
  /* Innermost last: the index's digits in mixed radix. */
  int64_t k = i % len(s->nmbt);
  i /= len(s->nmbt);
  if (s->nmbt)
    out->max_num_batched_tokens = s->max_num_batched_tokens[k];
  k = i % len(s->nseqs);
  i /= len(s->nseqs);
  if (s->nseqs)
    out->max_num_seqs = s->max_num_seqs[k];
  k = i % len(s->nkv);
  i /= len(s->nkv);
  if (s->nkv)
    snprintf(out->kv_cache_dtype, sizeof out->kv_cache_dtype, "%s", s->kv_cache_dtype[k]);
  k = i % len(s->nquant);
  i /= len(s->nquant);
  if (s->nquant)
    snprintf(out->quantization, sizeof out->quantization, "%s", s->quantization[k]);
  k = i % len(s->ntp);
  i /= len(s->ntp);
  if (s->ntp)
    out->tp = s->tp[k];
  snprintf(out->gpu, sizeof out->gpu, "%s", s->gpus[i % len(s->ngpus)]);
}

/* One key of the scenario tree set to a number or a string. */
static int put(cJSON *root, const char *key, cJSON *v, kvsim_err *err) {
  if (!v)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  return kvsim_json_set_value(root, key, v, err);
}

int kvsim_deploy_config_scenario(const kvsim_compare_t *c, const kvsim_deploy_config_t *cfg,
                                 kvsim_scenario_t *sc, kvsim_err *err) {
  memset(sc, 0, sizeof *sc);
  cJSON *root = cJSON_Duplicate(c->scenario, 1);
  if (!root)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  int rc = put(root, "hardware.gpu", cJSON_CreateString(cfg->gpu), err);
  if (rc == KVSIM_OK && cfg->tp > 0)
    rc = put(root, "hardware.tensor_parallel_size", cJSON_CreateNumber(cfg->tp), err);
  if (rc == KVSIM_OK && cfg->max_num_seqs > 0)
    rc = put(root, "engine.max_num_seqs", cJSON_CreateNumber((double)cfg->max_num_seqs), err);
  if (rc == KVSIM_OK && cfg->max_num_batched_tokens > 0)
    rc = put(root, "engine.max_num_batched_tokens",
             cJSON_CreateNumber((double)cfg->max_num_batched_tokens), err);
  if (rc == KVSIM_OK && cfg->kv_cache_dtype[0])
    rc = put(root, "engine.kv_cache_dtype", cJSON_CreateString(cfg->kv_cache_dtype), err);
  if (rc == KVSIM_OK && cfg->quantization[0])
    rc = put(root, "engine.quantization", cJSON_CreateString(cfg->quantization), err);
  if (rc == KVSIM_OK)
    rc = kvsim_scenario_from_json(root, c->scenario_where, c->base_dir, sc, err);
  else
    cJSON_Delete(root);
  if (rc == KVSIM_OK && !c->scenario_inline)
    snprintf(sc->path, sizeof sc->path, "%s", c->scenario_where);
  if (rc == KVSIM_OK)
    rc = kvsim_study_set_rate(sc, "rate", c->target_rate, err);
  return rc;
}
