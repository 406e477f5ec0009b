/* The search block of a study (kvsim/deploy.h): its lists, checked once
 * with a message naming the key, and the configurations they span. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "engine/scenario_keys.h"
#include "kvsim/deploy.h"
#include "kvsim/gpu.h"
#include "study/deploy_int.h"

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

#define MAX_SIDE_REPLICAS 64

/* One side's lists ("prefill" or "decode") into reps and tps. */
static int side_lists(const cJSON *d, const char *name, const char *where, int *reps, int *nreps,
                      int *tps, int *ntps, kvsim_err *err) {
  char w[4300];
  snprintf(w, sizeof w, "%s.disaggregation.%s", where, name);
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(d, name);
  if (!o)
    return KVSIM_OK;
  if (!cJSON_IsObject(o))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: expected an object of lists (replicas, tensor_parallel_size)", w);
  static const char *const keys[] = {"replicas", "tensor_parallel_size", NULL};
  int64_t v[2][KVSIM_DEPLOY_MAX_VALUES];
  int rc;
  if ((rc = kvsim__json_only_keys(o, keys, w, err)) < 0 ||
      (rc = ints(o, "replicas", 1, MAX_SIDE_REPLICAS, w, v[0], nreps, err)) < 0 ||
      (rc = ints(o, "tensor_parallel_size", 1, 64, w, v[1], ntps, err)) < 0)
    return rc;
  for (int i = 0; i < *nreps; i++)
    reps[i] = (int)v[0][i];
  for (int i = 0; i < *ntps; i++)
    tps[i] = (int)v[1][i];
  return KVSIM_OK;
}

/* The "disaggregation" object: the layouts searched beside the aggregated
 * configurations (kvsim/deploy.h). */
static int disagg(const cJSON *block, const char *where, kvsim_deploy_space_t *s, kvsim_err *err) {
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(block, "disaggregation");
  if (!d)
    return KVSIM_OK;
  char w[4300];
  snprintf(w, sizeof w, "%s.disaggregation", where);
  if (!cJSON_IsObject(d))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: expected an object (prefill, decode)", w);
  static const char *const keys[] = {"prefill", "decode", NULL};
  int rc;
  if ((rc = kvsim__json_only_keys(d, keys, w, err)) < 0 ||
      (rc = side_lists(d, "prefill", where, s->prefill_replicas, &s->nprefill, s->prefill_tp,
                       &s->nprefill_tp, err)) < 0 ||
      (rc = side_lists(d, "decode", where, s->decode_replicas, &s->ndecode, s->decode_tp,
                       &s->ndecode_tp, err)) < 0)
    return rc;
  s->disagg = true;
  return KVSIM_OK;
}

int kvsim_deploy_space_parse(const cJSON *block, const char *where, kvsim_deploy_space_t *s,
                             kvsim_err *err) {
  memset(s, 0, sizeof *s);
  s->max_replicas = DEFAULT_MAX_REPLICAS;
  if (!cJSON_IsObject(block))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: expected an object of lists", where);
  static const char *const keys[] = {"gpus",
                                     "tensor_parallel_size",
                                     "max_num_seqs",
                                     "max_num_batched_tokens",
                                     "kv_cache_dtype",
                                     "quantization",
                                     "max_replicas",
                                     "disaggregation",
                                     NULL};
  int64_t tp[KVSIM_DEPLOY_MAX_VALUES];
  int rc;
  if ((rc = kvsim__json_only_keys(block, keys, where, err)) < 0 ||
      (rc = gpus(block, where, s, err)) < 0 ||
      (rc = ints(block, "tensor_parallel_size", 1, 64, where, tp, &s->ntp, err)) < 0 ||
      (rc = ints(block, "max_num_seqs", 1, 65536, where, s->max_num_seqs, &s->nseqs, err)) < 0 ||
      (rc = ints(block, "max_num_batched_tokens", 1, 10000000, where, s->max_num_batched_tokens,
                 &s->nmbt, err)) < 0 ||
      (rc = strs(block, "kv_cache_dtype", where, &s->kv_cache_dtype[0][0],
                 sizeof s->kv_cache_dtype[0], &s->nkv, err)) < 0 ||
      (rc = strs(block, "quantization", where, &s->quantization[0][0], sizeof s->quantization[0],
                 &s->nquant, err)) < 0 ||
      (rc = disagg(block, where, s, err)) < 0)
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

/* The lists every configuration spans, aggregated or not. */
static int64_t common(const kvsim_deploy_space_t *s) {
  return len(s->ngpus) * len(s->nquant) * len(s->nkv) * len(s->nseqs) * len(s->nmbt);
}

static int64_t layouts(const kvsim_deploy_space_t *s) {
  return s->disagg ? len(s->nprefill) * len(s->ndecode) * len(s->nprefill_tp) * len(s->ndecode_tp)
                   : 0;
}

int64_t kvsim_deploy_space_count_aggregated(const kvsim_deploy_space_t *s) {
  return common(s) * len(s->ntp);
}

int64_t kvsim_deploy_space_count(const kvsim_deploy_space_t *s) {
  return common(s) * (len(s->ntp) + layouts(s));
}

/* The next digit of a mixed-radix index: i's remainder by a list's length. */
static int digit(int64_t *i, int n) {
  int k = (int)(*i % len(n));
  *i /= len(n);
  return k;
}

/* GPU, quantization, KV dtype, max_num_seqs, max_num_batched_tokens of i
 * (the innermost digits already taken). */
static void settings_of(const kvsim_deploy_space_t *s, int64_t i, kvsim_deploy_config_t *out) {
  int k = digit(&i, s->nmbt);
  if (s->nmbt)
    out->max_num_batched_tokens = s->max_num_batched_tokens[k];
  k = digit(&i, s->nseqs);
  if (s->nseqs)
    out->max_num_seqs = s->max_num_seqs[k];
  k = digit(&i, s->nkv);
  if (s->nkv)
    snprintf(out->kv_cache_dtype, sizeof out->kv_cache_dtype, "%s", s->kv_cache_dtype[k]);
  k = digit(&i, s->nquant);
  if (s->nquant)
    snprintf(out->quantization, sizeof out->quantization, "%s", s->quantization[k]);
  out->tp = 0;
  if (!out->disagg) {
    k = digit(&i, s->ntp);
    if (s->ntp)
      out->tp = s->tp[k];
  }
  snprintf(out->gpu, sizeof out->gpu, "%s", s->gpus[i % len(s->ngpus)]);
}

void kvsim_deploy_space_config(const kvsim_deploy_space_t *s, int64_t i,
                               kvsim_deploy_config_t *out) {
  memset(out, 0, sizeof *out);
  int64_t agg = kvsim_deploy_space_count_aggregated(s);
  if (i < agg) { /* innermost last: the index's digits in mixed radix */
    settings_of(s, i, out);
    return;
  }
  i -= agg;
  out->disagg = true;
  int k = digit(&i, s->ndecode_tp);
  out->decode_tp = s->ndecode_tp ? s->decode_tp[k] : 0;
  k = digit(&i, s->nprefill_tp);
  out->prefill_tp = s->nprefill_tp ? s->prefill_tp[k] : 0;
  k = digit(&i, s->ndecode);
  out->decode_replicas = s->ndecode ? s->decode_replicas[k] : 0;
  k = digit(&i, s->nprefill);
  out->prefill_replicas = s->nprefill ? s->prefill_replicas[k] : 0;
  settings_of(s, i, out);
}

/* Whether v is the list's (a list left out: whether v is the value the
 * configuration already has, the scenario's). */
static bool listed(const int *l, int n, int v, int given) {
  if (!n)
    return v == given;
  for (int i = 0; i < n; i++)
    if (l[i] == v)
      return true;
  return false;
}

bool kvsim_deploy_unit_covered(const kvsim_deploy_space_t *s, int p, int d, int *p_min,
                               int *d_min) {
  *p_min = p;
  *d_min = d;
  for (int g = 2; g <= p && g <= d; g++)
    if (p % g == 0 && d % g == 0 && listed(s->prefill_replicas, s->nprefill, p / g, p) &&
        listed(s->decode_replicas, s->ndecode, d / g, d)) {
      *p_min = p / g;
      *d_min = d / g;
    }
  return *p_min != p;
}

void kvsim_deploy_unit_name(int prefill, int prefill_tp, int decode, int decode_tp, char *buf,
                            size_t cap) {
  snprintf(buf, cap, "%dP TP%d : %dD TP%d", prefill, prefill_tp, decode, decode_tp);
}

/* One key of the scenario tree set to a number or a string. */
static int put(cJSON *root, const char *key, cJSON *v, kvsim_err *err) {
  if (!v)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  return kvsim_json_set_value(root, key, v, err);
}

/* A disaggregated configuration's block: both sides on its GPU, their
 * instances and TP where the search gives them, the base hardware at the
 * decode side's TP (the sides inherit it and it must fit) and without
 * replicas (a unit's instances are the block's). */
static int disagg_block(cJSON *root, const kvsim_deploy_config_t *cfg, kvsim_err *err) {
  static const char *const side[2] = {"prefill", "decode"};
  const int reps[2] = {cfg->prefill_replicas, cfg->decode_replicas};
  const int tps[2] = {cfg->prefill_tp, cfg->decode_tp};
  int rc = KVSIM_OK;
  cJSON *hw = cJSON_GetObjectItemCaseSensitive(root, "hardware");
  if (cJSON_IsObject(hw))
    cJSON_DeleteItemFromObjectCaseSensitive(hw, "replicas");
  for (int k = 0; k < 2 && rc == KVSIM_OK; k++) {
    char key[96];
    snprintf(key, sizeof key, "disaggregation.%s.gpu", side[k]);
    rc = put(root, key, cJSON_CreateString(cfg->gpu), err);
    if (rc == KVSIM_OK && reps[k] > 0) {
      snprintf(key, sizeof key, "disaggregation.%s.replicas", side[k]);
      rc = put(root, key, cJSON_CreateNumber(reps[k]), err);
    }
    if (rc == KVSIM_OK && tps[k] > 0) {
      snprintf(key, sizeof key, "disaggregation.%s.tensor_parallel_size", side[k]);
      rc = put(root, key, cJSON_CreateNumber(tps[k]), err);
    }
  }
  if (rc == KVSIM_OK && cfg->decode_tp > 0)
    rc = put(root, "hardware.tensor_parallel_size", cJSON_CreateNumber(cfg->decode_tp), err);
  return rc;
}

int kvsim_deploy_config_scenario(const kvsim_compare_t *c, const kvsim_deploy_config_t *cfg,
                                 kvsim_scenario_t *sc, kvsim_err *err) {
  return kvsim__deploy_config_scenario_as(c, cfg, c->scenario_where, sc, err);
}

int kvsim__deploy_config_scenario_as(const kvsim_compare_t *c, const kvsim_deploy_config_t *cfg,
                                     const char *where, kvsim_scenario_t *sc, kvsim_err *err) {
  memset(sc, 0, sizeof *sc);
  cJSON *root = cJSON_Duplicate(c->scenario, 1);
  if (!root)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  int rc = put(root, "hardware.gpu", cJSON_CreateString(cfg->gpu), err);
  /* A search with disaggregated layouts compares them with aggregated
   * deployments: those drop the scenario's own block. */
  if (rc == KVSIM_OK && cfg->disagg)
    rc = disagg_block(root, cfg, err);
  else if (rc == KVSIM_OK && cJSON_GetObjectItemCaseSensitive(c->search, "disaggregation"))
    cJSON_DeleteItemFromObjectCaseSensitive(root, "disaggregation");
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
    rc = kvsim__scenario_from_json_as(root, where, c->scenario_where, c->base_dir, sc, err);
  else
    cJSON_Delete(root);
  if (rc == KVSIM_OK && !c->scenario_inline)
    snprintf(sc->path, sizeof sc->path, "%s", c->scenario_where);
  if (rc == KVSIM_OK)
    rc = kvsim_study_set_rate(sc, "rate", c->target_rate, err);
  return rc;
}
