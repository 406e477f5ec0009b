/* Sweep files: parsed once, expanded into points (grid or zip), each point
 * built from the scenario's tree in memory plus its values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/study.h"

static void stem(const char *path, char *out, size_t cap) {
  const char *slash = strrchr(path, '/');
  snprintf(out, cap, "%s", slash ? slash + 1 : path);
  char *dot = strstr(out, ".json");
  if (dot)
    *dot = '\0';
}

static int parse_axes(kvsim_sweep_t *s, const char *where, kvsim_err *err) {
  const cJSON *grid = cJSON_GetObjectItemCaseSensitive(s->root, "grid");
  if (!cJSON_IsObject(grid) || !grid->child)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: grid: expected an object of key path -> [values]",
                         where);
  char mode[16] = "grid";
  int rc = kvsim__json_str(s->root, "mode", mode, sizeof mode, where, err);
  if (rc < 0)
    return rc;
  if (!strcmp(mode, "zip"))
    s->mode = KVSIM_SWEEP_ZIP;
  else if (strcmp(mode, "grid"))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: mode: '%s' (expected grid or zip)", where, mode);
  char w[4200];
  snprintf(w, sizeof w, "%s: grid", where);
  s->points = 1;
  for (const cJSON *c = grid->child; c; c = c->next) {
    if (s->nkeys == KVSIM_SWEEP_MAX_KEYS)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: grid: at most %d keys", where, KVSIM_SWEEP_MAX_KEYS);
    if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) < 1)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: grid.%s: expected a non-empty array", where,
                           c->string);
    if ((rc = kvsim_scenario_check_key(c->string, w, err)) < 0)
      return rc;
    int n = cJSON_GetArraySize(c);
    if (s->mode == KVSIM_SWEEP_ZIP && s->nkeys > 0 && n != s->points)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s: grid: zip mode pairs lists of equal length: %s has %lld values, %s has %d",
                           where, s->keys[0], (long long)s->points, c->string, n);
    s->keys[s->nkeys] = c->string;
    s->values[s->nkeys++] = c;
    if (s->mode == KVSIM_SWEEP_ZIP)
      s->points = n;
    else if ((s->points *= n) > KVSIM_SWEEP_MAX_POINTS)
      break;
  }
  if (s->points > KVSIM_SWEEP_MAX_POINTS)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: grid: %lld runs is too many", where,
                         (long long)s->points);
  return KVSIM_OK;
}

/* The scenario: a file relative to dir, or an object inline. */
static int load_scenario(kvsim_sweep_t *s, const char *where, const char *dir, kvsim_err *err) {
  const cJSON *inl = cJSON_GetObjectItemCaseSensitive(s->root, "scenario");
  if (cJSON_IsObject(inl)) {
    snprintf(s->scenario_where, sizeof s->scenario_where, "%s: scenario", where);
    snprintf(s->base_dir, sizeof s->base_dir, "%s", dir ? dir : ".");
    s->scenario_inline = true;
    s->scenario = cJSON_Duplicate(inl, 1);
    return s->scenario ? KVSIM_OK : kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", where);
  }
  char scen[4096] = "";
  int rc = kvsim__json_str(s->root, "scenario", scen, sizeof scen, where, err);
  if (rc < 0)
    return rc;
  if (!scen[0])
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing key 'scenario'", where);
  if (scen[0] != '/' && dir)
    snprintf(s->scenario_where, sizeof s->scenario_where, "%s/%s", dir, scen);
  else
    snprintf(s->scenario_where, sizeof s->scenario_where, "%s", scen);
  /* As kvsim_scenario_load: paths inside resolve against its folder. */
  snprintf(s->base_dir, sizeof s->base_dir, "%s", s->scenario_where);
  char *slash = strrchr(s->base_dir, '/');
  if (slash)
    *slash = '\0';
  else
    snprintf(s->base_dir, sizeof s->base_dir, ".");
  return KVSIM_OK;
}

static int read_scenario(kvsim_sweep_t *s, kvsim_err *err) {
  if (s->scenario)
    return KVSIM_OK;
  s->scenario = kvsim__json_load(s->scenario_where, err);
  return s->scenario ? KVSIM_OK : err->code;
}

int kvsim_sweep_parse(const char *json_text, const char *where, const char *dir, kvsim_sweep_t *s,
                      kvsim_err *err) {
  memset(s, 0, sizeof *s);
  s->root = kvsim__json_parse(json_text, where, err);
  if (!s->root)
    return err->code;
  static const char *const keys[] = {"name", "description", "scenario", "set", "grid", "mode", NULL};
  int rc;
  if ((rc = kvsim__json_only_keys(s->root, keys, where, err)) < 0 ||
      (rc = kvsim__json_str(s->root, "name", s->name, sizeof s->name, where, err)) < 0 ||
      (rc = load_scenario(s, where, dir, err)) < 0)
    goto fail;
  if (!s->name[0])
    stem(where, s->name, sizeof s->name);
  if ((rc = kvsim__check_name(s->name, where, err)) < 0)
    goto fail;
  s->set = cJSON_GetObjectItemCaseSensitive(s->root, "set");
  if (s->set && !cJSON_IsObject(s->set)) {
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: set: expected an object of key paths", where);
    goto fail;
  }
  char w[4200];
  snprintf(w, sizeof w, "%s: set", where);
  for (const cJSON *c = s->set ? s->set->child : NULL; c; c = c->next)
    if ((rc = kvsim_scenario_check_key(c->string, w, err)) < 0)
      goto fail;
  if ((rc = parse_axes(s, where, err)) < 0 || (rc = read_scenario(s, err)) < 0)
    goto fail;
  /* The base scenario must build before any run starts, to say so once. */
  kvsim_scenario_t probe;
  if ((rc = kvsim_sweep_scenario(s, -1, &probe, err)) < 0)
    goto fail;
  kvsim_scenario_fini(&probe);
  return KVSIM_OK;
fail:
  kvsim_sweep_fini(s);
  return rc;
}

int kvsim_sweep_load(const char *path, kvsim_sweep_t *s, kvsim_err *err) {
  char *text;
  int rc = kvsim__read_file(path, &text, NULL, err);
  if (rc < 0) {
    memset(s, 0, sizeof *s);
    return rc;
  }
  char dir[4096];
  bool has_dir = kvsim__dirname(path, dir, sizeof dir);
  rc = kvsim_sweep_parse(text, path, has_dir ? dir : NULL, s, err);
  free(text);
  return rc;
}

void kvsim_sweep_fini(kvsim_sweep_t *s) {
  cJSON_Delete(s->root);
  cJSON_Delete(s->scenario);
  memset(s, 0, sizeof *s);
}

const cJSON *kvsim_sweep_value(const kvsim_sweep_t *s, int64_t i, int k) {
  if (s->mode == KVSIM_SWEEP_ZIP)
    return cJSON_GetArrayItem(s->values[k], (int)i);
  /* Grid: the last key varies fastest. */
  for (int j = s->nkeys - 1; j > k; j--)
    i /= cJSON_GetArraySize(s->values[j]);
  return cJSON_GetArrayItem(s->values[k], (int)(i % cJSON_GetArraySize(s->values[k])));
}

static int put(cJSON *root, const char *key, const cJSON *v, kvsim_err *err) {
  cJSON *dup = cJSON_Duplicate(v, 1);
  if (!dup)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", key);
  return kvsim_json_set_value(root, key, dup, err);
}

/* i < 0: the base scenario with "set" only. */
int kvsim_sweep_scenario(const kvsim_sweep_t *s, int64_t i, kvsim_scenario_t *sc, kvsim_err *err) {
  memset(sc, 0, sizeof *sc);
  cJSON *root = cJSON_Duplicate(s->scenario, 1);
  if (!root)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", s->scenario_where);
  int rc = KVSIM_OK;
  for (const cJSON *c = s->set ? s->set->child : NULL; c && rc >= 0; c = c->next)
    rc = cJSON_IsObject(root) ? put(root, c->string, c, err) : KVSIM_OK;
  for (int k = 0; i >= 0 && k < s->nkeys && rc >= 0; k++)
    rc = cJSON_IsObject(root) ? put(root, s->keys[k], kvsim_sweep_value(s, i, k), err) : KVSIM_OK;
  if (rc < 0) {
    cJSON_Delete(root);
    return rc;
  }
  rc = kvsim_scenario_from_json(root, s->scenario_where, s->base_dir, sc, err);
  if (rc == KVSIM_OK && !s->scenario_inline)
    snprintf(sc->path, sizeof sc->path, "%s", s->scenario_where);
  return rc;
}
