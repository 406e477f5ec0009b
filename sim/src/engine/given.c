/* Which keys a scenario gave (kvsim_scenario_t.given_rows, given_sections,
 * perf_order): recorded once from the parsed tree and by each typed
 * override, so that summary.json's config (config_json.c) prints the keys
 * given without reading the tree again. */
#include <string.h>

#include "core/util.h"
#include "engine/scenario_keys.h"
#include "kvsim/params.h"
#include "kvsim/scenario.h"

const char *const kvsim__scenario_sections[] = {
    "hardware", "engine", "slo", "output", "admission", "perf", "disaggregation", "workload", NULL};

int kvsim__scenario_section(const char *name) {
  for (int i = 0; kvsim__scenario_sections[i]; i++)
    if (!strcmp(kvsim__scenario_sections[i], name))
      return i;
  return -1;
}


static void mark_row(struct kvsim_scenario *sc, int id) {
  sc->given_rows[id / 64] |= UINT64_C(1) << (id % 64);
}

bool kvsim__scenario_row_given(const struct kvsim_scenario *sc, int id) {
  return id > KVSIM_PARAM_NONE && id < KVSIM_PARAM_COUNT &&
         (sc->given_rows[id / 64] >> (id % 64) & 1u);
}

void kvsim__scenario_mark_tree(struct kvsim_scenario *sc, const cJSON *root) {
  for (int id = KVSIM_PARAM_NONE + 1; id < KVSIM_PARAM_COUNT; id++)
    if (kvsim__json_at(root, kvsim_param_get(id)->key))
      mark_row(sc, id);
  for (int i = 0; kvsim__scenario_sections[i]; i++)
    if (cJSON_IsObject(kvsim__json_at(root, kvsim__scenario_sections[i])))
      sc->given_sections |= 1u << i;
  /* The GPU's perf keys, in the order given. */
  const cJSON *perf = kvsim__json_at(root, "perf");
  for (const cJSON *c = cJSON_IsObject(perf) ? perf->child : NULL; c; c = c->next)
    for (uint8_t i = 0; kvsim__perf_gpu_keys[i] && !cJSON_IsNull(c); i++)
      if (!strcmp(c->string, kvsim__perf_gpu_keys[i]) && sc->nperf_order < sizeof sc->perf_order)
        sc->perf_order[sc->nperf_order++] = i;
}

void kvsim__scenario_mark_key(struct kvsim_scenario *sc, const char *key) {
  const kvsim_param_t *p = kvsim_param_by_key(key);
  if (p)
    mark_row(sc, p->id);
  char top[32];
  const char *dot = strchr(key, '.');
  size_t l = dot ? (size_t)(dot - key) : strlen(key);
  if (l >= sizeof top)
    return;
  memcpy(top, key, l);
  top[l] = '\0';
  int s = kvsim__scenario_section(top);
  if (s >= 0)
    sc->given_sections |= 1u << s;
}
