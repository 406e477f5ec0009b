/* The "workload" object as given, from the typed configuration: what
 * summary.json's config prints of the workload (kvsim_workload_given_json).
 * Which keys were given is recorded at parse time and by the typed setters
 * (kvsim__wl_given_t); each value comes from the typed fields in canonical
 * form ("8k" prints as 8000). The order is the one the engine room prints
 * every object in: the registry's rows (kvsim/params.h) first, in its
 * order, then the keys outside it (a dist's, a popularity's) as given. */
#include <string.h>

#include "core/util.h"

#include "workload/wl.h"

_Static_assert(KVSIM_PARAM_COUNT - KVSIM__WL_ROW_FIRST <= 64,
               "the workload's rows fit kvsim__wl_given_t.rows");

void kvsim__wl_mark(kvsim_workload_cfg_t *c, int id) {
  c->given.rows |= UINT64_C(1) << (id - KVSIM__WL_ROW_FIRST);
}

bool kvsim__wl_is_given(const kvsim_workload_cfg_t *c, int id) {
  return id >= KVSIM__WL_ROW_FIRST && id < KVSIM_PARAM_COUNT &&
         (c->given.rows >> (id - KVSIM__WL_ROW_FIRST) & 1u);
}


void kvsim__wl_mark_tree(kvsim_workload_cfg_t *c, const cJSON *obj) {
  for (int id = KVSIM__WL_ROW_FIRST; id < KVSIM_PARAM_COUNT; id++)
    if (kvsim__json_at(obj, kvsim_param_get(id)->key + strlen("workload.")))
      kvsim__wl_mark(c, id);
}

static cJSON *num(double v) { return cJSON_CreateNumber(v); }
static cJSON *str(const char *s) { return cJSON_CreateString(s); }

/* A length distribution in the form given: a bare number, or its object's
 * keys in the order given. */
static cJSON *dist_json(const kvsim__dist_t *d) {
  static const char *const kinds[] = {"fixed", "uniform", "normal", "lognormal", "zipf"};
  if (d->bare)
    return num(d->a);
  cJSON *o = cJSON_CreateObject();
  for (int i = 0; o && i < d->ngiven; i++) {
    const char *k = kvsim__dist_keys[d->given[i]];
    cJSON *v;
    if (!strcmp(k, "dist"))
      v = str(kinds[d->kind]);
    else if (!strcmp(k, "min"))
      v = num((double)d->lo);
    else if (!strcmp(k, "max"))
      v = num((double)d->hi);
    else if (!strcmp(k, "std") || !strcmp(k, "sigma"))
      v = num(d->b);
    else /* value, mean, s */
      v = num(d->a);
    if (!v) {
      cJSON_Delete(o);
      return NULL;
    }
    cJSON_AddItemToObject(o, k, v);
  }
  return o;
}

/* A popularity's keys as given, added to o; false when out of memory. */
static bool pick_json(const kvsim__pick_t *p, cJSON *o) {
  for (int i = 0; i < p->ngiven; i++) {
    cJSON *v = p->given[i] == 0
                   ? cJSON_AddStringToObject(o, "popularity", p->zipf ? "zipf" : "uniform")
                   : cJSON_AddNumberToObject(o, "zipf_s", p->s);
    if (!v)
      return false;
  }
  return true;
}

static cJSON *object_json(const kvsim_workload_cfg_t *c, int id);

/* The value of a given row: a leaf from its typed field, an object built
 * in its turn. NULL when out of memory. */
static cJSON *row_json(const kvsim_workload_cfg_t *c, int id) {
  static const char *const processes[] = {"poisson",     "gamma",  "constant",
                                          "closed_loop", "bursts", "diurnal"};
  const kvsim__synth_cfg_t *s = &c->syn;
  switch (id) {
  case KVSIM_PARAM_WL_TRACE:
    return str(c->given_path);
  case KVSIM_PARAM_WL_FORMAT:
    return str(c->given.format);
  case KVSIM_PARAM_WL_TIME_SCALE:
    return num(c->given.time_scale);
  case KVSIM_PARAM_WL_LIMIT:
    return num((double)c->limit);
  case KVSIM_PARAM_WL_SKIP_BAD_ROWS:
    return cJSON_CreateBool(c->skip_bad_rows);
  case KVSIM_PARAM_WL_MAX_TOTAL_TOKENS:
    return num((double)c->max_total_tokens);
  case KVSIM_PARAM_WL_HASH_BLOCK_TOKENS:
    return num((double)c->hash_block_tokens);
  case KVSIM_PARAM_WL_RATE:
    return num(c->rate);
  case KVSIM_PARAM_WL_REQUESTS:
    return num((double)s->requests);
  case KVSIM_PARAM_WL_DURATION_S:
    return num(s->duration_s);
  case KVSIM_PARAM_WL_ARRIVAL_PROCESS:
    return str(processes[s->arrival]);
  case KVSIM_PARAM_WL_ARRIVAL_RATE:
    return num(c->given.arrival_rate);
  case KVSIM_PARAM_WL_ARRIVAL_CV:
    return num(s->cv);
  case KVSIM_PARAM_WL_ARRIVAL_CLIENTS:
    return num((double)s->clients);
  case KVSIM_PARAM_WL_ARRIVAL_THINK_S:
    return num(s->think_s);
  case KVSIM_PARAM_WL_ARRIVAL_BURST_RATE:
    return num(s->burst_rate);
  case KVSIM_PARAM_WL_ARRIVAL_BURST_S:
    return num(s->burst_s);
  case KVSIM_PARAM_WL_ARRIVAL_PERIOD_S:
    return num(s->period_s);
  case KVSIM_PARAM_WL_ARRIVAL_AMPLITUDE:
    return num(s->amplitude);
  case KVSIM_PARAM_WL_ARRIVAL_PHASE_S:
    return num(s->phase_s);
  case KVSIM_PARAM_WL_PROMPT_TOKENS:
    return dist_json(&s->prompt);
  case KVSIM_PARAM_WL_OUTPUT_TOKENS:
    return dist_json(&s->output);
  case KVSIM_PARAM_WL_LENGTHS_FROM:
    if (!c->given.lengths_object)
      return str(c->given.lengths_from);
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "file", c->given.lengths_from)) {
      cJSON_Delete(o);
      return NULL;
    }
    return o;
  case KVSIM_PARAM_WL_PREFIX_SHARED_TOKENS:
    return num((double)s->shared_tokens);
  case KVSIM_PARAM_WL_PREFIX_GROUPS:
    return num((double)s->groups);
  case KVSIM_PARAM_WL_PREFIX_FRACTION:
    return num(s->prefix_fraction);
  case KVSIM_PARAM_WL_FEW_SHOT_TEMPLATES:
    return num((double)s->templates);
  case KVSIM_PARAM_WL_FEW_SHOT_TOKENS:
    return dist_json(&s->template_tokens);
  case KVSIM_PARAM_WL_FEW_SHOT_FRACTION:
    return num(s->few_shot_fraction);
  case KVSIM_PARAM_WL_SESSIONS_TURNS:
    return dist_json(&s->turns);
  case KVSIM_PARAM_WL_SESSIONS_THINK_S:
    return num(s->session_think_s);
  case KVSIM_PARAM_WL_SESSIONS_USER_TOKENS:
    return dist_json(&s->user);
  case KVSIM_PARAM_WL_SESSIONS_MAX_CONTEXT:
    return num((double)s->max_context);
  case KVSIM_PARAM_WL_TENANTS_COUNT:
    return num((double)s->tenants);
  case KVSIM_PARAM_WL_PRIORITY_LEVELS:
    return num(s->priority_levels);
  case KVSIM_PARAM_WL_PRIORITY_WEIGHTS:
    return cJSON_CreateDoubleArray(s->priority_weights, s->priority_levels);
  case KVSIM_PARAM_WL_LORA_ADAPTERS:
    return num((double)s->lora_adapters);
  case KVSIM_PARAM_WL_LORA_FRACTION:
    return num(s->lora_fraction);
  default: /* synthetic, arrival, prefix, few_shot, sessions, tenants, priority, lora */
    return object_json(c, id);
  }
}

/* The popularity of the block at row id, or NULL for a block without one. */
static const kvsim__pick_t *block_pick(const kvsim_workload_cfg_t *c, int id) {
  switch (id) {
  case KVSIM_PARAM_WL_PREFIX:
    return &c->syn.group_pick;
  case KVSIM_PARAM_WL_FEW_SHOT:
    return &c->syn.template_pick;
  case KVSIM_PARAM_WL_TENANTS:
    return &c->syn.tenant_pick;
  case KVSIM_PARAM_WL_LORA:
    return &c->syn.lora_pick;
  default:
    return NULL;
  }
}

/* The given rows directly below `prefix` ("workload", or an object row's
 * key), added to o in the registry's order; false when out of memory. */
static bool rows_json(const kvsim_workload_cfg_t *c, const char *prefix, cJSON *o) {
  const size_t n = strlen(prefix);
  for (int id = KVSIM__WL_ROW_FIRST; id < KVSIM_PARAM_COUNT; id++) {
    const char *key = kvsim_param_get(id)->key;
    if (!kvsim__wl_is_given(c, id) || strncmp(key, prefix, n) || key[n] != '.' ||
        strchr(key + n + 1, '.'))
      continue;
    cJSON *v = row_json(c, id);
    if (!v)
      return false;
    cJSON_AddItemToObject(o, key + n + 1, v);
  }
  return true;
}

/* An object row (synthetic, arrival, a block): its given rows, then a
 * block's popularity keys. */
static cJSON *object_json(const kvsim_workload_cfg_t *c, int id) {
  cJSON *o = cJSON_CreateObject();
  const kvsim__pick_t *p = block_pick(c, id);
  if (o && (!rows_json(c, kvsim_param_get(id)->key, o) || (p && !pick_json(p, o)))) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

cJSON *kvsim_workload_given_json(const kvsim_workload_cfg_t *cfg) {
  cJSON *o = cJSON_CreateObject();
  if (o && !rows_json(cfg, "workload", o)) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}
