/* A capacity-review study (kvsim compare STUDY.json): parsed, which builds
 * every candidate once, then the first candidates' scenarios built and
 * resolved (never run); for a study with a search block (kvsim/deploy.h),
 * the block parsed and a few of its configurations' scenarios built and
 * resolved, the first, the last and one between. A scenario path resolves
 * against the golden data folder ("scenario": "small-synthetic.json"). */
#include "fuzz_common.h"
#include "kvsim/deploy.h"
#include "kvsim/study.h"

static void configs(const kvsim_compare_t *c, kvsim_err *err) {
  kvsim_deploy_space_t s;
  if (kvsim_deploy_space_parse(c->search, "fuzz: study.json: search", &s, err) < 0)
    return;
  int64_t n = kvsim_deploy_space_count(&s);
  if (n < 1 || n > KVSIM_DEPLOY_MAX_CONFIGS || n != c->nconfigs)
    fuzz_fail("a search space's count is not the study's", err->msg);
  const int64_t pick[3] = {0, n / 2, n - 1};
  for (int k = 0; k < 3; k++) {
    kvsim_deploy_config_t cfg;
    kvsim_deploy_space_config(&s, pick[k], &cfg);
    kvsim_scenario_t sc;
    if (kvsim_deploy_config_scenario(c, &cfg, &sc, err) == KVSIM_OK) {
      kvsim_resolved_t res;
      (void)kvsim_scenario_resolve(&sc, &res, err);
    }
    kvsim_scenario_fini(&sc);
  }
}

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
    if (c.search)
      configs(&c, &err);
    kvsim_compare_fini(&c);
  }
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  free(text);
  return 0;
}
