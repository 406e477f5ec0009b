/* kvsim validate: compares kvsim with what real engines did. Modes, one
 * file each:
 * - --startup FILE: the start-up log table (validate_startup.c);
 * - --measured FILE SCENARIO.json: a measured per-request file against the
 *   simulation of the same requests (validate_measured.c);
 * - --silicon FILE: fixed-concurrency benchmark rows reproduced with
 *   closed-loop runs (validate_silicon.c). */
#include <stdio.h>

#include "args.h"
#include "commands.h"
#include "kvsim/gpu.h"
#include "validate_common.h"

int cmd_validate(int argc, char **argv) {
  const char *startup = NULL, *measured = NULL, *silicon = NULL, *series = NULL, *perf_file = NULL;
  cli_list metas = {0}, sets = {0}, filters = {0}, gpus = {0};
  bool json = false;
  double max_error = -1, range_ratio = FID_SIL_RANGE_RATIO;
  bool range_seen = false;
  const cli_arg args[] = {
      {"--startup", ARG_STR, &startup,
       "start-up log table (vllm_startup_logs.csv): logged vs kvsim KV budget per row", NULL},
      {"--meta", ARG_LIST, &metas,
       "with --startup: a run's meta.json (engine_kwargs, kv_cache, hardware) as one more row; repeatable",
       NULL},
      {"--measured", ARG_STR, &measured,
       "measured per-request file (LLMServingSim requests.jsonl, kvsim requests.csv or a vLLM benchmark "
       "JSON); the scenario that replays it is the positional argument",
       NULL},
      {"--set", ARG_LIST, &sets, "with --measured: override a scenario key (repeatable)", NULL},
      {"--series", ARG_STR, &series,
       "with --measured: measured time series (default: vllm/timeseries.csv beside requests.jsonl)", NULL},
      {"--silicon", ARG_STR, &silicon,
       "fixed-concurrency table (AIConfigurator silicon CSV): each row reproduced by a closed-loop run", NULL},
      {"--filter", ARG_LIST, &filters,
       "with --silicon: keep rows with KEY=VALUE (model, gpu, or a column such as system, precision, "
       "tp_size); repeatable, the same key twice = either value",
       NULL},
      {"--gpu", ARG_LIST, &gpus,
       "with --silicon: a GPU JSON file replacing the catalog GPU of the same name (e.g. calibrated "
       "coefficients); repeatable",
       NULL},
      {"--perf", ARG_STR, &perf_file,
       "with --measured or --silicon: the step-time coefficients (\"perf\") of this GPU name or file replace "
       "every GPU's own (e.g. one GPU's calibration tried on another)",
       NULL},
      {"--range-ratio", ARG_NUM, &range_ratio,
       "with --silicon: lengths uniform in [ratio x isl, isl] and [ratio x osl, osl] like the "
       "benchmark's random dataset (default 0.8; 1 = fixed lengths)",
       &range_seen},
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {"--max-error", ARG_NUM, &max_error,
       "exit 1 when the error exceeds this many percent (--startup, --silicon: median absolute error; "
       "--measured: any of TTFT/TPOT/E2E mean, p50, p99)",
       NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("validate",
                     "--startup FILE [--meta FILE]... | --measured FILE SCENARIO.json [--set K=V]... "
                     "[--series FILE] [--perf GPU] | --silicon FILE [--filter K=V]... [--gpu FILE]... "
                     "[--perf GPU] [--range-ratio R]  [--json] [--max-error PCT]",
                     args, argc, argv, 2, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (max_error != -1 && !(max_error >= 0))
    return cli_fail("validate", "--max-error: %g must be >= 0", max_error);
  int modes = (startup != NULL) + (measured != NULL) + (silicon != NULL);
  kvsim_gpu_t perf_gpu;
  if (perf_file) {
    kvsim_err err = {0};
    if (startup)
      return cli_fail("validate", "--perf goes with --measured or --silicon");
    if (kvsim_gpu_load(perf_file, &perf_gpu, &err) < 0)
      return cli_fail("validate", "--perf: %s", err.msg);
  }
  const kvsim_gpu_perf_t *perf = perf_file ? &perf_gpu.perf : NULL;
  if (modes == 0)
    return cli_fail("validate", "--startup FILE is required (or --measured FILE SCENARIO.json, or --silicon FILE; "
                                "see kvsim validate --help)");
  if (modes > 1)
    return cli_fail("validate", "give only one of --startup, --measured, --silicon");
  if (measured) {
    if (npos != 1)
      return cli_fail("validate", "--measured FILE needs the SCENARIO.json that replays it");
    return fid_cmd_measured(measured, pos[0], &sets, series, perf, json, max_error);
  }
  if (npos)
    return cli_fail("validate", "unexpected argument '%s'", pos[0]);
  if (sets.n || series)
    return cli_fail("validate", "--set and --series go with --measured");
  if (silicon) {
    if (!(range_ratio > 0 && range_ratio <= 1))
      return cli_fail("validate", "--range-ratio: %g must be in (0, 1]", range_ratio);
    return fid_cmd_silicon(silicon, &filters, &gpus, range_ratio, perf, json, max_error);
  }
  if (filters.n || gpus.n || range_seen)
    return cli_fail("validate", "--filter, --gpu and --range-ratio go with --silicon");
  return fid_cmd_startup(startup, &metas, json, max_error);
}
