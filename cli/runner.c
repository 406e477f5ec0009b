#include "runner.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/catalog.h"
#include "kvsim/run_output.h"
#include "kvsim/scenario.h"

int cli_run_scenario(const char *path, const char *const *sets, int nsets, const char *dir,
                     bool progress, int check, cli_run_result *res, kvsim_err *err) {
  memset(res, 0, sizeof *res);
  kvsim_scenario_t sc;
  int rc;
  if (path) {
    rc = kvsim_scenario_load(path, sets, nsets, &sc, err);
  } else {
    /* The embedded default study: a synthetic workload, no files needed. */
    const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_SCENARIO, "default");
    rc = e ? kvsim_scenario_parse(e->json, "configs/scenarios/default.json (embedded)", ".", sets,
                                  nsets, &sc, err)
           : kvsim_err_set(err, KVSIM_ENOENT, "no embedded default scenario");
  }
  if (rc < 0)
    return rc;
  snprintf(res->name, sizeof res->name, "%s", sc.name);
  char folder[4096];
  const char *out = dir;
  if (dir && !*dir) {
    snprintf(folder, sizeof folder, "results/%s", sc.name);
    out = folder;
  }
  kvsim_run_output_t *o = NULL;
  if ((rc = kvsim_run_output_open(out, &sc, progress, &o, err)) == KVSIM_OK) {
    kvsim_sink_t sink = kvsim_run_output_sink(o);
    /* What each step touched every step, the whole pool when sampled due. */
    kvsim_run_opts_t opts = {.check_invariants = check > 0, .check_period = -1};
    rc = kvsim_run(&sc, &opts, &sink, &res->stats, err);
    if (progress)
      fputs("\r\033[K", stderr);
    if (rc == KVSIM_OK)
      rc = kvsim_run_output_finish(o, &res->stats, out != NULL, err);
    if (rc == KVSIM_OK)
      res->summary = cJSON_Duplicate(kvsim_run_output_summary(o), 1);
  }
  kvsim_run_output_close(o);
  kvsim_scenario_fini(&sc);
  return rc;
}

void cli_run_result_fini(cli_run_result *res) {
  cJSON_Delete(res->summary);
  res->summary = NULL;
}

double cli_summary_num(const cJSON *summary, const char *path) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  const cJSON *j = summary;
  for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && j;
       tok = strtok_r(NULL, ".", &save))
    j = cJSON_GetObjectItemCaseSensitive(j, tok);
  if (cJSON_IsNumber(j))
    return j->valuedouble;
  if (cJSON_IsBool(j))
    return cJSON_IsTrue(j) ? 1 : 0;
  return NAN;
}
