/* Study files for `kvsim compare`: one scenario, an SLO, a target rate and
 * candidate deployments (each the scenario with its own "set"), parsed and
 * checked once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/catalog.h"
#include "core/util.h"
#include "engine/scenario_keys.h"
#include "kvsim/clock.h"
#include "kvsim/deploy.h"
#include "kvsim/gpu.h"
#include "kvsim/study.h"
#include "study/deploy_int.h"

static void stem(const char *path, char *out, size_t cap) {
  const char *slash = strrchr(path, '/');
  snprintf(out, cap, "%s", slash ? slash + 1 : path);
  char *dot = strstr(out, ".json");
  if (dot)
    *dot = '\0';
}

/* The scenario: a file relative to dir, or an object inline. */
static int load_scenario(kvsim_compare_t *c, const char *dir, kvsim_err *err) {
  const cJSON *inl = cJSON_GetObjectItemCaseSensitive(c->root, "scenario");
  snprintf(c->base_dir, sizeof c->base_dir, "%s", dir ? dir : ".");
  if (cJSON_IsObject(inl)) {
    snprintf(c->scenario_where, sizeof c->scenario_where, "%s: scenario", c->where);
    c->scenario_inline = true;
    c->scenario = cJSON_Duplicate(inl, 1);
    return c->scenario ? KVSIM_OK : kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", c->where);
  }
  char scen[4096] = "";
  int rc = kvsim__json_str(c->root, "scenario", scen, sizeof scen, c->where, err);
  if (rc < 0)
    return rc;
  if (!scen[0])
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing key 'scenario'", c->where);
  if (scen[0] != '/' && dir)
    snprintf(c->scenario_where, sizeof c->scenario_where, "%s/%s", dir, scen);
  else
    snprintf(c->scenario_where, sizeof c->scenario_where, "%s", scen);
  if (!kvsim__dirname(c->scenario_where, c->base_dir, sizeof c->base_dir))
    snprintf(c->base_dir, sizeof c->base_dir, ".");
  c->scenario = kvsim__json_load(c->scenario_where, err);
  return c->scenario ? KVSIM_OK : err->code;
}

static int parse_slo(kvsim_compare_t *c, kvsim_err *err) {
  const cJSON *slo = cJSON_GetObjectItemCaseSensitive(c->root, "slo");
  const char *file = c->where;
  if (!slo) { /* the scenario's own, named as its file's */
    slo = cJSON_GetObjectItemCaseSensitive(c->scenario, "slo");
    file = c->scenario_where;
  }
  char w[4200];
  snprintf(w, sizeof w, "%s: slo", file);
  static const char *const keys[] = {"ttft_p99_s", "tpot_p99_s", "e2e_p99_s", NULL};
  double *v[] = {&c->slo_ttft_p99_s, &c->slo_tpot_p99_s, &c->slo_e2e_p99_s};
  int rc = KVSIM_OK;
  if (slo && (!cJSON_IsObject(slo) || (rc = kvsim__json_only_keys(slo, keys, w, err)) < 0))
    return cJSON_IsObject(slo) ? rc : kvsim_err_set(err, KVSIM_EINVAL, "%s: expected an object", w);
  for (int k = 0; k < 3 && slo; k++) {
    if ((rc = kvsim__json_num(slo, keys[k], v[k], w, err)) < 0)
      return rc;
    /* The scenario's bounds and words: 0 is "no target" inside, and one
     * past the simulator's time limit every run meets. */
    if (rc > 0 && !(*v[k] > 0))
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s.%s: %g must be > 0 (leave the key out for no target)", w, keys[k],
                           *v[k]);
    if (rc > 0 && *v[k] > KVSIM_TIME_MAX_S)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s: %g is outside (0, %g]", w, keys[k], *v[k],
                           KVSIM_TIME_MAX_S);
  }
  if (!(c->slo_ttft_p99_s > 0 || c->slo_tpot_p99_s > 0 || c->slo_e2e_p99_s > 0))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: no SLO: give slo {ttft_p99_s, tpot_p99_s, e2e_p99_s} in the study or "
                         "the scenario",
                         c->where);
  return KVSIM_OK;
}

static int parse_candidates(kvsim_compare_t *c, kvsim_err *err) {
  const cJSON *cands = cJSON_GetObjectItemCaseSensitive(c->root, "candidates");
  if (!cJSON_IsArray(cands) || cJSON_GetArraySize(cands) < 1)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: candidates: expected a non-empty array of {label, set}",
                         c->where);
  if (cJSON_GetArraySize(cands) > KVSIM_COMPARE_MAX_CANDIDATES)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: candidates: at most %d", c->where,
                         KVSIM_COMPARE_MAX_CANDIDATES);
  static const char *const keys[] = {"label", "set", NULL};
  const cJSON *e;
  cJSON_ArrayForEach(e, cands) {
    int i = c->ncandidates;
    char w[4200];
    snprintf(w, sizeof w, "%s: candidates[%d]", c->where, i);
    int rc = KVSIM_OK;
    if (!cJSON_IsObject(e))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: expected an object {label, set}", w);
    if ((rc = kvsim__json_only_keys(e, keys, w, err)) < 0 ||
        (rc = kvsim__json_str(e, "label", c->cand[i].label, sizeof c->cand[i].label, w, err)) < 0)
      return rc;
    /* rc: 0 when the key is absent, 1 when given (perhaps as "" or
     * spaces, which name no row either). */
    if (!c->cand[i].label[0] || !c->cand[i].label[strspn(c->cand[i].label, " \t")])
      return kvsim_err_set(err, KVSIM_EINVAL,
                           rc ? "%s.label: is empty (a label names the candidate's row)"
                              : "%s: missing key 'label'",
                           w);
    /* A label is one cell of a table (REPORT.md, the terminal's): a
     * newline or tab there breaks its row. */
    for (const unsigned char *l = (const unsigned char *)c->cand[i].label; *l; l++)
      if (*l < 0x20 || *l == 0x7f || kvsim__utf8_line_break(l))
        return kvsim_err_set(err, KVSIM_EINVAL,
                             "%s.label: control character 0x%02x at byte %d (a label is one "
                             "line of the table)",
                             w, *l, (int)(l - (const unsigned char *)c->cand[i].label));
    for (int j = 0; j < i; j++)
      if (!strcmp(c->cand[j].label, c->cand[i].label))
        return kvsim_err_set(err, KVSIM_EINVAL, "%s: label '%s' is given twice", w, c->cand[i].label);
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(e, "set");
    if (set && !cJSON_IsObject(set))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.set: expected an object of key paths", w);
    char ws[4300];
    snprintf(ws, sizeof ws, "%s.set", w);
    for (const cJSON *k = set ? set->child : NULL; k; k = k->next)
      if ((rc = kvsim_scenario_check_key(k->string, ws, err)) < 0)
        return rc;
    c->cand[i].set = set;
    c->ncandidates++;
  }
  return KVSIM_OK;
}

static int parse_costs(kvsim_compare_t *c, kvsim_err *err) {
  c->costs = cJSON_GetObjectItemCaseSensitive(c->root, "cost_per_gpu_hour");
  if (c->costs && !cJSON_IsObject(c->costs))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: cost_per_gpu_hour: expected an object {gpu: $ per hour}",
                         c->where);
  for (const cJSON *k = c->costs ? c->costs->child : NULL; k; k = k->next)
    if (!cJSON_IsNumber(k) || !(k->valuedouble >= 0 && k->valuedouble < 1e6))
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s: cost_per_gpu_hour.%s: expected a price in [0, 1e6) per GPU-hour",
                           c->where, k->string);
  return KVSIM_OK;
}

/* The prices by the GPU name a candidate's row carries. A key may be any
 * name kvsim_gpu_load takes ("h100", "H100 80GB"): hardware.gpu accepted
 * "h100" while the price under that key was looked up as "h100-sxm" and
 * silently dropped. A key that names no GPU, or a GPU priced twice, is an
 * error naming the key. */
static int resolve_prices(kvsim_compare_t *c, char gpus[][64], int ngpus, kvsim_err *err) {
  c->prices = c->costs ? cJSON_CreateObject() : NULL;
  if (c->costs && !c->prices)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", c->where);
  for (const cJSON *k = c->costs ? c->costs->child : NULL; k; k = k->next) {
    char name[128] = "";
    for (int i = 0; i < ngpus && !name[0]; i++)
      if (!strcmp(gpus[i], k->string))
        snprintf(name, sizeof name, "%s", gpus[i]);
    if (!name[0] && !kvsim_gpu_catalog_name(k->string, name, sizeof name)) {
      char list[512] = "";
      for (int i = 0; i < ngpus; i++)
        if (!strstr(list, gpus[i]))
          snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "",
                   gpus[i]);
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s: cost_per_gpu_hour.%s: not a GPU name (the candidates run on %s)",
                           c->where, k->string, list);
    }
    for (const cJSON *o = c->costs->child; o != k; o = o->next) {
      char other[128] = "";
      if (!strcmp(o->string, name) ||
          (kvsim_gpu_catalog_name(o->string, other, sizeof other) && !strcmp(other, name)))
        return kvsim_err_set(err, KVSIM_EINVAL,
                             "%s: cost_per_gpu_hour.%s: %s is priced twice (also as '%s')",
                             c->where, k->string, name, o->string);
    }
    if (!cJSON_AddNumberToObject(c->prices, name, k->valuedouble))
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", c->where);
  }
  return KVSIM_OK;
}

/* A candidate's error, "FILE: candidate 'a': ...": what went wrong while
 * building the candidate's scenario, which names itself (its file, a key
 * of the candidate's set, or an inline scenario as "scenario": see
 * probe_candidate). */
static void candidate_error(const kvsim_compare_t *c, int i, kvsim_err *err) {
  kvsim_err_prefix(err, "%s: candidate '%s'", c->where, c->cand[i].label);
}

/* Candidate i's scenario (i < 0: the scenario alone), named `where` in its
 * errors; it is named after the scenario's file (or the study's) either way. */
static int build_scenario(const kvsim_compare_t *c, int i, const char *where,
                          kvsim_scenario_t *sc, kvsim_err *err) {
  memset(sc, 0, sizeof *sc);
  cJSON *root = cJSON_Duplicate(c->scenario, 1);
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return kvsim_err_set(err, root ? KVSIM_EINVAL : KVSIM_ENOMEM, "%s: %s", where,
                         root ? "expected a scenario object" : "out of memory");
  }
  int rc = KVSIM_OK;
  const cJSON *set = i >= 0 ? c->cand[i].set : NULL;
  for (const cJSON *k = set ? set->child : NULL; k && rc >= 0; k = k->next) {
    cJSON *dup = cJSON_Duplicate(k, 1);
    rc = dup ? kvsim_json_set_value(root, k->string, dup, err)
             : kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", k->string);
  }
  if (rc < 0) {
    cJSON_Delete(root);
    return rc;
  }
  rc = kvsim__scenario_from_json_as(root, where, c->scenario_where, c->base_dir, sc, err);
  if (rc == KVSIM_OK && !c->scenario_inline)
    snprintf(sc->path, sizeof sc->path, "%s", c->scenario_where);
  /* Every figure of a compare is at (or around) the target rate, for as
   * long as the scenario's workload lasts. */
  if (rc == KVSIM_OK)
    rc = kvsim_study_set_rate(sc, "rate", c->target_rate, err);
  return rc;
}

/* Candidate i's scenario, built to check it before any run. An inline
 * scenario is named "scenario" in its errors, which candidate_error puts
 * after the study file and the candidate ("FILE: candidate 'a': scenario:
 * seed: ..."); a scenario file names itself. */
static int probe_candidate(const kvsim_compare_t *c, int i, kvsim_scenario_t *sc,
                           kvsim_err *err) {
  return build_scenario(c, i, c->scenario_inline ? "scenario" : c->scenario_where, sc, err);
}

/* The search block: its lists, then each value of a list in a scenario
 * (a bad KV dtype or quantization named by its key), and the prices by
 * the GPUs it lists. */
static int kvsim__compare_parse_search(kvsim_compare_t *c, kvsim_err *err) {
  char w[4200];
  snprintf(w, sizeof w, "%s: search", c->where);
  kvsim_deploy_space_t s;
  int rc = kvsim_deploy_space_parse(c->search, w, &s, err);
  if (rc < 0)
    return rc;
  c->nconfigs = kvsim_deploy_space_count(&s);
  if (c->nconfigs > KVSIM_DEPLOY_MAX_CONFIGS)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %lld configurations (the product of the lists' lengths), at most %d",
                         w, (long long)c->nconfigs, KVSIM_DEPLOY_MAX_CONFIGS);
  /* The probes' errors follow "FILE: search.KEY[i]": an inline scenario
   * is "scenario" there, as in probe_candidate, not the file again. */
  const char *scen = c->scenario_inline ? "scenario" : c->scenario_where;
  kvsim_deploy_config_t base;
  kvsim_deploy_space_config(&s, 0, &base);
  const struct {
    const char *key;
    int n;
  } lists[] = {{"gpus", s.ngpus}, {"kv_cache_dtype", s.nkv}, {"quantization", s.nquant}};
  for (int l = 0; l < 3; l++)
    for (int j = 0; j < lists[l].n; j++) {
      kvsim_deploy_config_t cfg = base;
      if (l == 0)
        snprintf(cfg.gpu, sizeof cfg.gpu, "%s", s.gpus[j]);
      else if (l == 1)
        snprintf(cfg.kv_cache_dtype, sizeof cfg.kv_cache_dtype, "%s", s.kv_cache_dtype[j]);
      else
        snprintf(cfg.quantization, sizeof cfg.quantization, "%s", s.quantization[j]);
      kvsim_scenario_t probe;
      if ((rc = kvsim__deploy_config_scenario_as(c, &cfg, scen, &probe, err)) < 0) {
        kvsim_err_prefix(err, "%s.%s[%d]", w, lists[l].key, j);
        return rc;
      }
      kvsim_scenario_fini(&probe);
    }
  /* The disaggregated layouts: the scenario must take a block (a profile
   * with a KV connector, no EP or speculative decoding inside a side). */
  if (s.disagg) {
    kvsim_deploy_config_t cfg;
    kvsim_scenario_t probe;
    kvsim_deploy_space_config(&s, kvsim_deploy_space_count_aggregated(&s), &cfg);
    if ((rc = kvsim__deploy_config_scenario_as(c, &cfg, scen, &probe, err)) < 0)
      return kvsim_err_prefix(err, "%s.disaggregation", w);
    kvsim_scenario_fini(&probe);
  }
  return resolve_prices(c, s.gpus, s.ngpus, err);
}

int kvsim_compare_parse(const char *json_text, const char *where, const char *dir,
                        kvsim_compare_t *c, kvsim_err *err) {
  memset(c, 0, sizeof *c);
  snprintf(c->where, sizeof c->where, "%s", where);
  c->root = kvsim__json_parse(json_text, where, err);
  if (!c->root)
    return err->code;
  static const char *const keys[] = {"name", "description", "scenario", "slo", "target_rate",
                                     "candidates", "search", "cost_per_gpu_hour", NULL};
  int rc = KVSIM_OK;
  const char *tell = NULL, *kind = kvsim__json_file_kind(c->root, &tell);
  if (kind && strcmp(kind, "study")) {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: this is a %s file, not a study (it has `%s`): run it with kvsim %s%s",
                       where, kind, tell, !strcmp(kind, "scenario") ? "run" : "sweep",
                       !strcmp(kind, "scenario") ? ", or name it as a study's \"scenario\"" : "");
    goto fail;
  }
  if ((rc = kvsim__json_only_keys(c->root, keys, where, err)) < 0 ||
      (rc = kvsim__json_str(c->root, "name", c->name, sizeof c->name, where, err)) < 0 ||
      (rc = kvsim__json_str(c->root, "description", c->description, sizeof c->description, where,
                            err)) < 0 ||
      (rc = kvsim__json_num(c->root, "target_rate", &c->target_rate, where, err)) < 0)
    goto fail;
  /* Absent, it read as 0 and was refused as "(got 0)", a value nobody
   * wrote. */
  if (rc == 0) {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: missing key 'target_rate' (the rate in req/s the candidates must "
                       "carry)",
                       where);
    goto fail;
  }
  if (!c->name[0])
    stem(where, c->name, sizeof c->name);
  if ((rc = kvsim__check_name(c->name, where, err)) < 0)
    goto fail;
  if (!(c->target_rate > 0 && c->target_rate <= 1e9)) {
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: target_rate: %g req/s is outside (0, 1e9]", where,
                       c->target_rate);
    goto fail;
  }
  c->search = cJSON_GetObjectItemCaseSensitive(c->root, "search");
  if (c->search && cJSON_GetObjectItemCaseSensitive(c->root, "candidates")) {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: a study has candidates or a search block, not both (put the "
                       "candidates in a study of their own)",
                       where);
    goto fail;
  }
  if ((rc = load_scenario(c, dir, err)) < 0 || (rc = parse_slo(c, err)) < 0 ||
      (!c->search && (rc = parse_candidates(c, err)) < 0) || (rc = parse_costs(c, err)) < 0)
    goto fail;
  if (c->search) {
    rc = kvsim__compare_parse_search(c, err);
    goto fail_or_ok;
  }
  /* Every candidate must build (and take the target rate) before any run. */
  char gpus[KVSIM_COMPARE_MAX_CANDIDATES][64];
  for (int i = 0; i < c->ncandidates; i++) {
    kvsim_scenario_t probe;
    if ((rc = probe_candidate(c, i, &probe, err)) < 0) {
      candidate_error(c, i, err);
      goto fail;
    }
    snprintf(gpus[i], sizeof gpus[i], "%s", probe.gpu.name);
    kvsim_scenario_fini(&probe);
  }
  if ((rc = resolve_prices(c, gpus, c->ncandidates, err)) < 0)
    goto fail;
  return KVSIM_OK;
fail_or_ok:
  if (rc == KVSIM_OK)
    return rc;
fail:
  kvsim_compare_fini(c);
  return rc;
}

int kvsim_compare_load(const char *path, kvsim_compare_t *c, kvsim_err *err) {
  char *text;
  int rc = kvsim__read_file(path, &text, NULL, err);
  if (rc < 0) {
    memset(c, 0, sizeof *c);
    return rc;
  }
  char dir[4096];
  bool has_dir = kvsim__dirname(path, dir, sizeof dir);
  rc = kvsim_compare_parse(text, path, has_dir ? dir : NULL, c, err);
  free(text);
  return rc;
}

int kvsim_compare_load_default(kvsim_compare_t *c, kvsim_err *err) {
  const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_STUDY, "default");
  if (!e) {
    memset(c, 0, sizeof *c);
    return kvsim_err_set(err, KVSIM_ENOENT, "no embedded default study");
  }
  return kvsim_compare_parse(e->json, "configs/studies/default.json (embedded)", NULL, c, err);
}

void kvsim_compare_fini(kvsim_compare_t *c) {
  cJSON_Delete(c->prices);
  cJSON_Delete(c->root);
  cJSON_Delete(c->scenario);
  memset(c, 0, sizeof *c);
}

int kvsim_compare_scenario(const kvsim_compare_t *c, int i, kvsim_scenario_t *sc, kvsim_err *err) {
  return build_scenario(c, i, c->scenario_where, sc, err);
}

