/* A sweep file (grid or zip) with an inline scenario or one of the
 * project's own scenario files: parsed, then the first points' scenarios
 * built and resolved (never run). */
#include "fuzz_common.h"
#include "kvsim/study.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  kvsim_sweep_t s;
  kvsim_err err = {0};
  /* The project's golden data folder: "scenario": "small-synthetic.json" resolves. */
  if (kvsim_sweep_parse(text, "fuzz: sweep.json", KVSIM_FUZZ_DATA_DIR, &s, &err) == KVSIM_OK) {
    for (int64_t i = 0; i < s.points && i < 4; i++) {
      kvsim_scenario_t sc;
      if (kvsim_sweep_scenario(&s, i, &sc, &err) == KVSIM_OK) {
        kvsim_resolved_t res;
        (void)kvsim_scenario_resolve(&sc, &res, &err);
        kvsim_scenario_fini(&sc);
      }
    }
    kvsim_sweep_fini(&s);
  }
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  free(text);
  return 0;
}
