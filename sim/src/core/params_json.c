/* Registry parameters read from JSON (core/params_json.h). */
#include "core/params_json.h"

#include <math.h>
#include <stdio.h>

#include "core/util.h"
#include "kvsim/params.h"

/* "W.leaf" (or "W: leaf" for a section's own where, "leaf" at the top). */
static void param_name(const kvsim_param_t *p, const char *w, char *buf, size_t cap) {
  snprintf(buf, cap, "%s%s%s", w, kvsim__json_sep(w), kvsim_param_leaf(p));
}

int kvsim__json_param_int(const cJSON *o, int id, int64_t *out, const char *w, kvsim_err *err) {
  const kvsim_param_t *p = kvsim_param_get(id);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, kvsim_param_leaf(p));
  if (!v || cJSON_IsNull(v))
    return 0;
  char name[1024];
  param_name(p, w, name, sizeof name);
  const double d = v->valuedouble;
  if (!cJSON_IsNumber(v) || d != floor(d))
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "expected an integer");
  if (d < p->min && p->flags & (KVSIM_PARAM_DEFAULT_NOTE | KVSIM_PARAM_MIN_WORDING))
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "%.16g must be >= %lld%s", d,
                               (long long)p->min, kvsim_param_note(p));
  if (!(d >= p->min && d <= p->max))
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "%.16g is out of range [%lld, %lld]", d,
                               (long long)p->min, (long long)p->max);
  *out = (int64_t)d;
  return 1;
}

int kvsim__json_param_num(const cJSON *o, int id, double *out, const char *w, kvsim_err *err) {
  const kvsim_param_t *p = kvsim_param_get(id);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, kvsim_param_leaf(p));
  if (!v || cJSON_IsNull(v))
    return 0;
  char name[1024];
  param_name(p, w, name, sizeof name);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "expected a number");
  int rc = kvsim_param_check_num(id, v->valuedouble, name, err);
  if (rc < 0)
    return rc;
  *out = v->valuedouble;
  return 1;
}
