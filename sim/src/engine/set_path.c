/* --set KEY=VALUE on a scenario's JSON tree (kvsim/scenario.h): a dotted
 * path into nested objects, created where missing, and a value that is
 * JSON when it parses as JSON and a plain string otherwise. Split from
 * scenario.c, which reads the tree this edits. */
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/scenario.h"

/* `shown` names the override in errors (the --set text as given). */
static int set_value(cJSON *root, const char *key_path, cJSON *v, const char *shown,
                     kvsim_err *err) {
  char path[512];
  if (strlen(key_path) >= sizeof path) {
    cJSON_Delete(v);
    return kvsim_err_set(err, KVSIM_EINVAL, "--set: key too long");
  }
  snprintf(path, sizeof path, "%s", key_path);
  cJSON *obj = root;
  char *save = NULL, *tok = strtok_r(path, ".", &save);
  while (tok) {
    char *next = strtok_r(NULL, ".", &save);
    if (!*tok) {
      cJSON_Delete(v);
      return kvsim_err_set(err, KVSIM_EINVAL, "--set '%s': empty key segment", shown);
    }
    if (!next) {
      if (cJSON_GetObjectItemCaseSensitive(obj, tok))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, tok, v);
      else
        cJSON_AddItemToObject(obj, tok, v);
      return KVSIM_OK;
    }
    cJSON *child = cJSON_GetObjectItemCaseSensitive(obj, tok);
    if (!child || cJSON_IsNull(child)) {
      /* A null is the key left out (an earlier --set KEY=null). */
      cJSON *made = cJSON_CreateObject();
      if (child)
        cJSON_ReplaceItemInObjectCaseSensitive(obj, tok, made);
      else
        cJSON_AddItemToObject(obj, tok, made);
      child = made;
    } else if (!cJSON_IsObject(child)) {
      cJSON_Delete(v);
      return kvsim_err_set(err, KVSIM_EINVAL, "--set '%s': '%s' is not an object", shown, tok);
    }
    obj = child;
    tok = next;
  }
  cJSON_Delete(v);
  return kvsim_err_set(err, KVSIM_EINVAL, "--set '%s': empty key", shown);
}

int kvsim_json_set_value(cJSON *root, const char *key_path, cJSON *v, kvsim_err *err) {
  return set_value(root, key_path, v, key_path, err);
}

int kvsim_json_set_path(cJSON *root, const char *assignment, kvsim_err *err) {
  const char *eq = strchr(assignment, '=');
  if (!eq || eq == assignment)
    return kvsim_err_set(err, KVSIM_EINVAL, "--set '%s': expected KEY=VALUE", assignment);
  char path[512];
  size_t plen = (size_t)(eq - assignment);
  if (plen >= sizeof path)
    return kvsim_err_set(err, KVSIM_EINVAL, "--set: key too long");
  memcpy(path, assignment, plen);
  path[plen] = '\0';
  const char *val = eq + 1;
  /* A value that parses as JSON is JSON (numbers, true, "text", {...});
   * anything else is a plain string (a path, a name). */
  const char *end = NULL;
  cJSON *v = cJSON_ParseWithOpts(val, &end, 1);
  /* JSON past cJSON's nesting limit is no plain string either. */
  if (!v && kvsim__json_too_deep(val, end))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--set '%.*s=...': the value is nested deeper than %d levels", (int)plen,
                         assignment, CJSON_NESTING_LIMIT);
  if (!v)
    v = cJSON_CreateString(val);
  return set_value(root, path, v, assignment, err);
}
