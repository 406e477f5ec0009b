/* A scenario and its --set overrides: the input is "SET\nSET\n...\n\0JSON"
 * (overrides before the first NUL, one per line; the scenario after it).
 * Parses, applies, resolves the plan; never runs. */
#include "fuzz_common.h"
#include "kvsim/scenario.h"

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
