/* A capacity-review study (kvsim compare STUDY.json): parsed, which builds
 * every candidate once, then the first candidates' scenarios built and
 * resolved (never run). A scenario path resolves against the golden data
 * folder ("scenario": "small-synthetic.json"). */
#include "fuzz_common.h"
#include "kvsim/study.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  kvsim_compare_t c;
  kvsim_err err = {0};
  if (kvsim_compare_parse(text, "fuzz: study.json", KVSIM_FUZZ_DATA_DIR, &c, &err) == KVSIM_OK) {
    for (int i = 0; i < c.ncandidates && i < 4; i++) {
      kvsim_scenario_t sc;
      if (kvsim_compare_scenario(&c, i, &sc, &err) == KVSIM_OK) {
        kvsim_resolved_t res;
        (void)kvsim_scenario_resolve(&sc, &res, &err);
        kvsim_scenario_fini(&sc);
      }
    }
    kvsim_compare_fini(&c);
  }
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  free(text);
  return 0;
}
