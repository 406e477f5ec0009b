/* Searches run for real, on any scenario or study, under a memory budget:
 * the first byte chooses a scenario searched as `kvsim plan` does (rate,
 * replicas or util by the second byte), or a study (`kvsim compare`) whose
 * first candidate's replicas are searched at its target rate, or, when the
 * study has a search block of at most FUZZ_MAX_CONFIGS configurations,
 * the whole deployment search (kvsim/deploy.h) in this process. Each
 * simulation stops at 10 s simulated and the range is not searched, to
 * keep an input fast.
 *
 * scripts/fuzz.sh runs this target under `ulimit -v` (so it is built
 * without ASan, whose shadow memory reserves terabytes of address space).
 * Whatever the input, a search must stay inside the budget and say so
 * (KVSIM_EBUDGET, naming it): an allocation that fails (KVSIM_ENOMEM, the
 * address-space limit reached) or the kernel's out-of-memory kill is the
 * failure this target looks for. */
#include "fuzz_common.h"
#include "kvsim/deploy.h"
#include "kvsim/study.h"

/* Far below the `ulimit -v` of scripts/fuzz.sh (1 GiB), which leaves room
 * for libFuzzer, the catalog and the scenario itself. */
#define FUZZ_BUDGET (INT64_C(192) << 20)
#define FUZZ_MAX_TIME_S 10.0
#define FUZZ_MAX_CONFIGS 8

static void check(int rc, const kvsim_err *err) {
  if (rc == KVSIM_ENOMEM)
    fuzz_fail("out of memory inside the memory budget", err->msg);
  if (strchr(err->msg, '\n'))
    fuzz_fail("an error message spans lines", err->msg);
}

static void search(kvsim_scenario_t *sc, kvsim_search_kind kind, double limit_s) {
  if (!(sc->max_time_s > 0 && sc->max_time_s <= FUZZ_MAX_TIME_S))
    sc->max_time_s = FUZZ_MAX_TIME_S;
  static kvsim_search_t se;
  memset(&se, 0, sizeof se);
  se.base = sc;
  se.kind = kind;
  se.targets[0] = (kvsim_slo_target_t){KVSIM_METRIC_TTFT, KVSIM_STAT_P99, limit_s};
  se.ntargets = 1;
  se.tolerance = 0.05;
  se.no_range = true;
  kvsim_err err = {0};
  check(kvsim_search_run(&se, &err), &err);
}

static void plan(const char *text, uint8_t how) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  int rc = kvsim_scenario_parse(text, "fuzz: scenario.json", KVSIM_FUZZ_DATA_DIR, NULL, 0, &sc, &err);
  check(rc, &err);
  if (rc < 0)
    return;
  search(&sc, (kvsim_search_kind)(how % 3), how & 0x80 ? 0.5 : 2);
  kvsim_scenario_fini(&sc);
}

/* The deployment search of a small space: rows in space order, a winner
 * that met, its outputs written as text. */
static void deploy(kvsim_compare_t *c) {
  if (c->nconfigs > FUZZ_MAX_CONFIGS)
    return;
  /* Each configuration's simulations stop at FUZZ_MAX_TIME_S. */
  cJSON *out = cJSON_GetObjectItemCaseSensitive(c->scenario, "output");
  if (!cJSON_IsObject(out)) {
    cJSON_DeleteItemFromObjectCaseSensitive(c->scenario, "output");
    out = cJSON_AddObjectToObject(c->scenario, "output");
  }
  const cJSON *t = out ? cJSON_GetObjectItemCaseSensitive(out, "max_time_s") : NULL;
  if (out && !(cJSON_IsNumber(t) && t->valuedouble > 0 && t->valuedouble <= FUZZ_MAX_TIME_S)) {
    cJSON_DeleteItemFromObjectCaseSensitive(out, "max_time_s");
    cJSON_AddNumberToObject(out, "max_time_s", FUZZ_MAX_TIME_S);
  }
  kvsim_compare_opts_t opts = {.jobs = 1};
  static kvsim_deploy_result_t res;
  kvsim_err err = {0};
  int rc = kvsim_deploy_run(c, &opts, &res, &err);
  check(rc, &err);
  if (rc == KVSIM_OK) {
    if (res.n != c->nconfigs)
      fuzz_fail("a deployment search without a row per configuration", err.msg);
    if (res.winner >= 0 && res.rows[res.winner].best < 0)
      fuzz_fail("a deployment search's winner met nothing", err.msg);
    for (int i = 0; i < res.n; i++)
      if (res.rows[i].rc == KVSIM_ENOMEM)
        fuzz_fail("out of memory inside the memory budget", res.rows[i].error);
    free(kvsim_deploy_csv(&res));
    free(kvsim_deploy_report_md(c, &res, "kvsim compare fuzz.json"));
  }
  kvsim_deploy_result_fini(&res);
}

static void study(const char *text) {
  static kvsim_compare_t c;
  kvsim_err err = {0};
  int rc = kvsim_compare_parse(text, "fuzz: study.json", KVSIM_FUZZ_DATA_DIR, &c, &err);
  check(rc, &err);
  if (rc < 0)
    return;
  if (c.search) {
    deploy(&c);
    kvsim_compare_fini(&c);
    return;
  }
  kvsim_scenario_t sc;
  if ((rc = kvsim_compare_scenario(&c, 0, &sc, &err)) == KVSIM_OK) {
    double slo = c.slo_ttft_p99_s > 0 ? c.slo_ttft_p99_s : 2;
    search(&sc, KVSIM_SEARCH_REPLICAS, slo);
    kvsim_scenario_fini(&sc);
  }
  check(rc, &err);
  kvsim_compare_fini(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  kvsim_memory_budget_set(FUZZ_BUDGET);
  char *text = fuzz_text(data + 2, size - 2);
  if (!text)
    return 0;
  if (data[0] & 1)
    study(text);
  else
    plan(text, data[1]);
  free(text);
  return 0;
}
