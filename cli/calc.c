/* kvsim calc: the static memory plan, in the engine's own words. Each
 * engine's flags are a table in the library (kvsim/report.h
 * kvsim_calc_engine_t); this file parses whichever table argv names. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "kvsim/report.h"

/* calc --scenario FILE [--json]: the plans of a scenario (both sides of a
 * disaggregated one). */
static int calc_scenario(int argc, char **argv, const char *path) {
  bool json = false;
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--json"))
      json = true;
    else if (!strcmp(argv[i], "--scenario"))
      i++;
    else if (strncmp(argv[i], "--scenario=", 11))
      return cli_fail("calc", "%s: calc --scenario FILE takes only --json", argv[i]);
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  int rc = kvsim_scenario_load(path, NULL, 0, &sc, &err);
  if (rc == KVSIM_OK)
    rc = kvsim_report_scenario_calc(&sc, json, stdout, &err);
  kvsim_scenario_fini(&sc);
  return rc < 0 ? cli_fail("calc", "%s", err.msg) : 0;
}

int cmd_calc(int argc, char **argv) {
  const char *scenario = cli_flag_value(argc, argv, 2, "--scenario");
  if (scenario)
    return calc_scenario(argc, argv, scenario);
  bool compare = false;
  for (int i = 2; i < argc; i++)
    compare = compare || !strcmp(argv[i], "--compare-engines");
  const kvsim_calc_engine_t *e = kvsim_calc_engine_find(cli_flag_value(argc, argv, 2, "--engine"), compare);
  static const arg_kind kinds[] = {[KVSIM_CALC_INT] = ARG_INT, [KVSIM_CALC_NUM] = ARG_NUM,
                                   [KVSIM_CALC_STR] = ARG_STR, [KVSIM_CALC_FLAG] = ARG_FLAG};
  static kvsim_calc_args_t a;
  static cli_arg args[KVSIM_CALC_MAX_FLAGS + 1];
  e->defaults(&a);
  int n = 0;
  for (const kvsim_calc_flag_t *f = e->flags; f->name; f++, n++) {
    if (n == KVSIM_CALC_MAX_FLAGS)
      return cli_fail("calc", "%s: more than %d flags in its table", e->usage, KVSIM_CALC_MAX_FLAGS);
    args[n] = (cli_arg){f->name, kinds[f->kind], a.bytes + f->offset, f->help, &a.given[n]};
  }
  args[n] = (cli_arg){NULL, 0, NULL, NULL, NULL};
  const char *pos[1];
  int npos;
  int rc = cli_parse("calc", e->usage, args, argc, argv, 2, pos, 0, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  static kvsim_calc_t c;
  kvsim_err err = {0};
  if (e->compute(&a, &c, &err) < 0)
    return cli_fail("calc", "%s", err.msg);
  e->print(&a, &c, stdout);
  return kvsim_calc_status(&a, &c);
}
