/* A scenario: model x hardware x engine settings x workload x SLO, read
 * from JSON (DESIGN.md section 2). Unknown keys and wrong types are errors
 * naming the key path; missing keys take the engine profile's defaults. */
#ifndef KVSIM_SCENARIO_H
#define KVSIM_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"
#include "kvsim/sched.h"
#include "kvsim/workload.h"

typedef enum { KVSIM_ROUTER_ROUND_ROBIN = 0, KVSIM_ROUTER_LEAST_LOADED } kvsim_router;

typedef struct kvsim_admission {
  int64_t max_prompt_tokens;  /* 0 = no limit */
  int64_t max_output_tokens;
  int64_t max_queue_length;   /* waiting requests per replica */
  double max_wait_s;          /* rejected if still waiting after this long */
} kvsim_admission_t;

typedef struct kvsim_offload_cfg {
  double cpu_gib;             /* V1 offloading connector size (total over TP ranks); 0 = off */
  int64_t store_threshold;    /* lookups before a block is offloaded (< 2: always) */
  /* Whether a step's transfers (offload loads, swap copies) overlap its
   * compute (step = max(compute, transfer)) or add to it. Default: V1's
   * connector loads asynchronously (overlap); V0 swaps block the step. */
  bool overlap;
} kvsim_offload_cfg_t;

typedef struct kvsim_scenario {
  char name[128];
  char path[4096];            /* the scenario file; "" when built in */
  char base_dir[4096];        /* relative paths resolve against it */
  uint64_t seed;
  kvsim_model_t model;
  kvsim_gpu_t gpu;
  int replicas;
  kvsim_router router;
  char profile[32];
  const kvsim_sched_ops_t *sched_ops;
  kvsim_plan_params_t plan;   /* memory plan parameters (tp, pp, util, ...) */
  kvsim_sched_cfg_t sched;    /* scheduler settings, resolved after the plan */
  kvsim_admission_t admission;
  kvsim_offload_cfg_t offload;
  double swap_space_gib;      /* V0 swap space per GPU */
  bool overlap_given;
  double quant_step_factor;   /* step-time factor for quantized KV (perf.h) */
  kvsim_workload_cfg_t *workload; /* owned */
  /* SLO targets (seconds); 0 = none. */
  double slo_ttft_p99_s, slo_tpot_p99_s, slo_e2e_p99_s;
  /* Output. */
  double sample_interval_s;   /* time-series period (default 1 s) */
  double max_time_s;          /* stop simulating at this time; 0 = run to the end */
  cJSON *resolved;            /* the scenario after --set, for summary.json (owned) */
} kvsim_scenario_t;

/* Loads a scenario file, applying `--set KEY=VAL` overrides (dotted key
 * paths; VAL parsed as JSON when it is JSON, else taken as a string). */
int kvsim_scenario_load(const char *path, const char *const *sets, int nsets,
                        kvsim_scenario_t *sc, kvsim_err *err);
/* Same from JSON text; base_dir resolves relative paths. */
int kvsim_scenario_parse(const char *json_text, const char *where, const char *base_dir,
                         const char *const *sets, int nsets, kvsim_scenario_t *sc, kvsim_err *err);
void kvsim_scenario_fini(kvsim_scenario_t *sc);

/* Applies one "a.b.c=value" override to a JSON tree. */
int kvsim_json_set_path(cJSON *root, const char *assignment, kvsim_err *err);

#endif
