/* Adding a profile's given options to the engine object (opts_print.h). */
#include "sched/opts_print.h"

#include <string.h>

static bool given(const kvsim__optout_t *o, const char *key) {
  int i = 0;
  for (const char *const *k = o->keys; k && *k; k++, i++)
    if (!strcmp(*k, key))
      return i < KVSIM_SCHED_MAX_OPTIONS && (o->given >> i & 1u);
  return false;
}

static void add(kvsim__optout_t *o, const char *key, cJSON *v) {
  if (!v || !cJSON_AddItemToObject(o->engine, key, v)) {
    cJSON_Delete(v);
    o->rc = KVSIM_ENOMEM;
  }
}

void kvsim__optout_num(kvsim__optout_t *o, const char *key, double v) {
  if (given(o, key))
    add(o, key, cJSON_CreateNumber(v));
}

void kvsim__optout_str(kvsim__optout_t *o, const char *key, const char *v) {
  if (given(o, key))
    add(o, key, cJSON_CreateString(v));
}

void kvsim__optout_bool(kvsim__optout_t *o, const char *key, bool v) {
  if (given(o, key))
    add(o, key, cJSON_CreateBool(v));
}
