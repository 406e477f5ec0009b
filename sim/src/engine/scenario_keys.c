/* The keys of each scenario section, the check that names a typo by its
 * path, with a suggestion from any section (scenario.c), and the check of
 * a sweep's or --set's key paths (kvsim_scenario_check_key). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "engine/scenario_keys.h"
#include "kvsim/params.h"
#include "kvsim/scenario.h"
#include "kvsim/sched.h"

/* The keys of each section: a typo is an error naming the path. */
static const char *const top_keys[] = {"name",     "description", "seed",     "model",
                                       "hardware", "engine",      "workload", "slo",
                                       "output",   "admission",   "perf",     "disaggregation",
                                       NULL};
const char *const kvsim__spec_keys[] = {"method",
                                        "model",
                                        "num_speculative_tokens",
                                        "draft_tensor_parallel_size",
                                        "prompt_lookup_min",
                                        "prompt_lookup_max",
                                        "acceptance_rate",
                                        NULL};

const char *const kvsim__perf_gpu_keys[] = {"kernels", "collectives",     "status", "source",
                                            "host_us", "host_per_seq_us", NULL};

/* The keys of a section ("hardware.", "engine.", ...) in the registry's
 * order, NULL-terminated, without the profiles' own options: those come
 * from each profile's ops table (kvsim_sched_option_keys). Built once (the
 * registry is fixed at compile time). */
static void registry_keys(const char *prefix, const char **keys, size_t *n) {
  const size_t len = strlen(prefix);
  for (int id = 1; id < KVSIM_PARAM_COUNT; id++) {
    const kvsim_param_t *p = kvsim_param_get(id);
    if (!strncmp(p->key, prefix, len) && !(p->flags & KVSIM_PARAM_PROFILE_OPTION))
      keys[(*n)++] = p->key + len;
  }
  keys[*n] = NULL;
}

#define SECTION_KEYS(name, prefix)                                                                 \
  static const char *const *name(void) {                                                           \
    static const char *keys[KVSIM_PARAM_COUNT + 1];                                                \
    if (!keys[0]) {                                                                                \
      size_t n = 0;                                                                                \
      registry_keys(prefix, keys, &n);                                                             \
    }                                                                                              \
    return keys;                                                                                   \
  }
SECTION_KEYS(hardware_keys, "hardware.")
SECTION_KEYS(slo_keys, "slo.")
SECTION_KEYS(output_keys, "output.")
SECTION_KEYS(admission_keys, "admission.")
#undef SECTION_KEYS

/* The shared keys followed by every profile's options, NULL-terminated. */
static const char *const *engine_keys(void) {
  static const char *keys[128];
  if (!keys[0]) {
    size_t n = 0;
    registry_keys("engine.", keys, &n);
    /* The registry's options fit: a profile adding past 128 keys fails here loudly. */
    if (kvsim_sched_option_keys(keys, &n, sizeof keys / sizeof *keys) < 0)
      abort();
  }
  return keys;
}

/* The sections whose keys are known here, for cross-section suggestions
 * and kvsim__scenario_keys. */
typedef struct section_keys {
  const char *name;
  const char *const *keys;
} section_keys;

static const section_keys *sections(size_t *n) {
  static section_keys t[6];
  if (!t[0].keys) {
    t[0] = (section_keys){"", top_keys};
    t[1] = (section_keys){"hardware", hardware_keys()};
    t[2] = (section_keys){"engine", engine_keys()};
    t[3] = (section_keys){"slo", slo_keys()};
    t[4] = (section_keys){"output", output_keys()};
    t[5] = (section_keys){"admission", admission_keys()};
  }
  *n = sizeof t / sizeof *t;
  return t;
}

static bool in_list(const char *const *keys, const char *k) {
  for (; *keys; keys++)
    if (!strcmp(*keys, k))
      return true;
  return false;
}

/* kvsim__json_only_keys, and for a key that belongs to another section
 * (an engine key under hardware) or is a typo of one, "did you mean
 * `hardware.tensor_parallel_size`?". A near miss in the key's own section
 * keeps the usual suggestion. */
const char *kvsim__json_file_kind(const cJSON *root, const char **key) {
  static const struct {
    const char *key, *kind;
  } tells[] = {{"candidates", "study"}, {"target_rate", "study"}, {"grid", "sweep"},
               {"model", "scenario"},   {"hardware", "scenario"}, {"engine", "scenario"},
               {"workload", "scenario"}};
  for (size_t i = 0; cJSON_IsObject(root) && i < sizeof tells / sizeof *tells; i++)
    if (cJSON_GetObjectItemCaseSensitive(root, tells[i].key)) {
      if (key)
        *key = tells[i].key;
      return tells[i].kind;
    }
  return NULL;
}

int kvsim__scenario_check_keys(const cJSON *o, const char *self, const char *w, kvsim_err *err) {
  const char *const *allowed = kvsim__scenario_keys(self);
  if (!cJSON_IsObject(o))
    return kvsim__json_only_keys(o, allowed, w, err);
  const char *tell = NULL, *kind = *self ? NULL : kvsim__json_file_kind(o, &tell);
  if (kind && strcmp(kind, "scenario"))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: this is a %s file, not a scenario (it has `%s`): run it with "
                         "kvsim %s",
                         w, kind, tell, !strcmp(kind, "study") ? "compare" : "sweep");
  size_t n;
  const section_keys *t = sections(&n);
  for (const cJSON *c = o->child; c; c = c->next) {
    if (in_list(allowed, c->string))
      continue;
    const char *sec = NULL, *key = NULL;
    int best = 1 << 30;
    for (size_t i = 0; i < n; i++) {
      if (!strcmp(t[i].name, self))
        continue;
      for (const char *const *k = t[i].keys; *k; k++) {
        int d = kvsim__edit_distance(*k, c->string);
        if (d < best) {
          best = d, sec = t[i].name, key = *k;
        }
      }
    }
    int own = 1 << 30;
    for (const char *const *k = allowed; *k; k++) {
      int d = kvsim__edit_distance(*k, c->string);
      own = d < own ? d : own;
    }
    /* Exact elsewhere wins; then a near miss at home; then one elsewhere. */
    if (key && (best == 0 || (own > 3 && best <= 2)))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: unknown key (did you mean `%s%s%s`?)", w,
                           *self ? "." : ": ", c->string, sec, *sec ? "." : "", key);
    break;
  }
  if (*self)
    return kvsim__json_only_keys(o, allowed, w, err);
  /* Top level: "FILE: sed: unknown key", not "FILE.sed" (scenario.c). */
  int rc = kvsim__json_only_keys(o, allowed, "", err);
  if (rc < 0)
    kvsim_err_prefix(err, "%s", w);
  return rc;
}

const char *const *kvsim__scenario_keys(const char *section) {
  size_t n;
  const section_keys *t = sections(&n);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(section, t[i].name))
      return t[i].keys;
  return NULL;
}

static const char *closest(const char *const *keys, const char *k, int *dist) {
  const char *best = NULL;
  *dist = 1 << 30;
  /* A known key is its own match: no edit distances for it. */
  for (const char *const *a = keys; *a; a++)
    if (!strcmp(*a, k)) {
      *dist = 0;
      return *a;
    }
  for (const char *const *a = keys; *a; a++) {
    int d = kvsim__edit_distance(*a, k);
    if (d < *dist) {
      *dist = d;
      best = *a;
    }
  }
  return best;
}

int kvsim_scenario_check_key(const char *key_path, const char *where, kvsim_err *err) {
  char top[64], rest[256] = "";
  const char *dot = strchr(key_path, '.');
  size_t n = dot ? (size_t)(dot - key_path) : strlen(key_path);
  snprintf(top, sizeof top, "%.*s", (int)(n < sizeof top ? n : sizeof top - 1), key_path);
  if (dot)
    snprintf(rest, sizeof rest, "%s", dot + 1);
  int d;
  const char *best = closest(kvsim__scenario_keys(""), top, &d);
  if (strcmp(best, top))
    return d <= 3 ? kvsim_err_set(err, KVSIM_EINVAL, "%s: '%s': unknown scenario key (did you mean '%s%s%s'?)",
                                  where, key_path, best, dot ? "." : "", rest)
                  : kvsim_err_set(err, KVSIM_EINVAL, "%s: '%s': unknown scenario key", where, key_path);
  const char *const *keys = kvsim__scenario_keys(top);
  if (!keys || !dot)
    return KVSIM_OK;
  char second[128];
  const char *dot2 = strchr(rest, '.');
  size_t n2 = dot2 ? (size_t)(dot2 - rest) : strlen(rest);
  snprintf(second, sizeof second, "%.*s", (int)(n2 < sizeof second ? n2 : sizeof second - 1), rest);
  best = closest(keys, second, &d);
  if (!strcmp(best, second))
    return dot2 ? kvsim_err_set(err, KVSIM_EINVAL, "%s: '%s': %s.%s takes a value, not keys", where,
                                key_path, top, second)
                : KVSIM_OK;
  return d <= 3 ? kvsim_err_set(err, KVSIM_EINVAL, "%s: '%s': unknown scenario key (did you mean '%s.%s'?)",
                                where, key_path, top, best)
                : kvsim_err_set(err, KVSIM_EINVAL, "%s: '%s': unknown scenario key", where, key_path);
}
