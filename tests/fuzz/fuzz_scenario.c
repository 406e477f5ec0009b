/* A scenario and its --set overrides: the input is "SET\nSET\n...\n\0JSON"
 * (overrides before the first NUL, one per line; the scenario after it).
 * Parses, applies, resolves the plan; never runs. summary.json's config
 * printed from the parsed scenario must parse back to the same config
 * (the round trip tests/golden/test_config_roundtrip.sh runs on goldens). */
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "kvsim/scenario.h"

/* The config printed from sc, unformatted (malloc'd), or NULL. */
static char *config_text(const kvsim_scenario_t *sc) {
  cJSON *c = kvsim_scenario_config_json(sc);
  char *t = c ? cJSON_PrintUnformatted(c) : NULL;
  cJSON_Delete(c);
  return t;
}

static void round_trip(const kvsim_scenario_t *sc) {
  char *first = config_text(sc);
  if (!first)
    return; /* out of memory */
  kvsim_scenario_t again;
  kvsim_err err = {0};
  if (kvsim_scenario_parse(first, "fuzz: config.json", "/nonexistent", NULL, 0, &again, &err) !=
      KVSIM_OK)
    fuzz_fail("the printed config does not parse back", err.msg);
  char *second = config_text(&again);
  if (second && strcmp(first, second))
    fuzz_fail("the printed config changes when parsed back", second);
  kvsim_scenario_fini(&again);
  free(first);
  free(second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  const char *json = text;
  const char *sets[8];
  int nsets = 0;
  char *nul = memchr(text, '\0', size);
  if (nul && nul < text + size) {
    json = nul + 1;
    for (char *save = NULL, *tok = strtok_r(text, "\n", &save); tok && nsets < 8;
         tok = strtok_r(NULL, "\n", &save))
      sets[nsets++] = tok;
  }
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  if (kvsim_scenario_parse(json, "fuzz: scenario.json", "/nonexistent", sets, nsets, &sc, &err) ==
      KVSIM_OK) {
    round_trip(&sc);
    /* The pure resolve step: a plan, the scheduler limits, or one line. */
    kvsim_resolved_t res;
    if (kvsim_scenario_resolve(&sc, &res, &err) == KVSIM_OK && res.pool_blocks < 1)
      fuzz_fail("a resolved pool without blocks", err.msg);
    kvsim_scenario_fini(&sc);
  }
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  free(text);
  return 0;
}
