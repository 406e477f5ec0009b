/* A scenario: model x hardware x engine settings x workload x SLO, read
 * from JSON (keys in docs/scenario.md). Unknown keys and
 * wrong types are errors naming the key path; missing keys take the engine
 * profile's defaults. */
#ifndef KVSIM_SCENARIO_H
#define KVSIM_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kvsim/disagg.h"
#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/params.h"
#include "kvsim/perf.h"
#include "kvsim/plan.h"
#include "kvsim/sched.h"
#include "kvsim/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* hardware.router: how requests are spread over the replicas (the rules
 * are sim/src/engine/router.h's). */
typedef enum {
  KVSIM_ROUTER_ROUND_ROBIN = 0,
  KVSIM_ROUTER_LEAST_LOADED,
  KVSIM_ROUTER_LEAST_KV,
  KVSIM_ROUTER_PREFIX_AFFINITY
} kvsim_router;

/* The router's name as the scenario spells it ("round_robin", ...). */
const char *kvsim_router_name(kvsim_router r);

/* hardware.router_imbalance default: prefix_affinity leaves the replica
 * its prefix hashes to when that replica has more than this many requests
 * (running + waiting) beyond the least-loaded replica. 16 is one sixteenth
 * of vLLM V1's default max_num_seqs (256). On the chat sessions of
 * tests/golden/test_routing.sh (4 replicas) thresholds 0, 4, 8, 16 and 64
 * give hit rates 0.23, 0.42, 0.48, 0.50 and 0.50: a tight guard undoes
 * the affinity, and from 16 on it only catches real pile-ups (2 turns of
 * 2,000 moved). */
#define KVSIM_ROUTER_IMBALANCE_DEFAULT 16

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
  char *description;          /* "description" as given (owned); NULL without one */
  char path[4096];            /* the scenario file; "" when built in */
  char base_dir[4096];        /* relative paths resolve against it */
  uint64_t seed;
  char model_id[4096];        /* "model" as given: a catalog name, HF id or path */
  char gpu_id[4096];          /* hardware.gpu as given (a catalog name or path); "" = the default */
  kvsim_model_t model;
  kvsim_gpu_t gpu;
  int replicas;
  kvsim_router router;
  int64_t router_imbalance;   /* prefix_affinity's threshold, requests (>= 0) */
  char profile[32];
  /* engine.dtype as given ("auto", "fp8", ...); "" when left out. The
   * model holds it resolved ("auto" is the model's own). */
  char dtype[64];
  const kvsim_sched_ops_t *sched_ops;
  kvsim_plan_params_t plan;   /* memory plan parameters (tp, pp, util, ...) */
  kvsim_sched_cfg_t sched;    /* scheduler settings, resolved after the plan */
  kvsim_admission_t admission;
  kvsim_offload_cfg_t offload;
  double swap_space_gib;      /* V0 swap space per GPU */
  bool overlap_given;
  double quant_step_factor;   /* step-time factor for quantized KV (perf.h) */
  /* perf.step_time_scale: every step's duration is multiplied by it
   * (default 1). The uncertainty band and plan ranges re-run a scenario
   * with step times at the band's edges through this knob and the next. */
  double step_time_scale;
  /* perf.prefill_time_scale: multiplies the prefill tokens' share of each
   * step's duration instead (a step of f prefill tokens of its total takes
   * (1 - f) x step_time_scale + f x prefill_time_scale of its modelled
   * time); 0 = not given, step_time_scale throughout. */
  double prefill_time_scale;
  /* Which of the GPU's perf keys (kernels, collectives, status, source,
   * host_us, host_per_seq_us) the scenario's perf section gave: their
   * values are the GPU's (gpu.perf) as overridden. */
  unsigned perf_given;
  /* The order the perf section gave them in (indices into that list). */
  uint8_t perf_order[8];
  uint8_t nperf_order;
  /* Which keys the scenario gave (not null), for the config, as parsed
   * and as the typed overrides set them: bit id of given_rows per
   * registry row (kvsim/params.h), bit i of given_sections per top-level
   * section given as an object (hardware, engine, slo, output, admission,
   * perf, disaggregation, workload, in that order). The workload's own
   * keys its room records (kvsim_workload_given_json). */
  uint64_t given_rows[(KVSIM_PARAM_COUNT + 63) / 64];
  unsigned given_sections;
  /* hardware.gpu_memory_gib as given; 0 when left out (the GPU's). */
  double gpu_memory_gib;
  /* engine.speculative.acceptance_rate: one rate, or one per position
   * (kvsim/spec.h); spec_nrates 0 without speculative decoding. */
  double spec_rates[KVSIM_SPEC_MAX_TOKENS];
  int spec_nrates;
  /* Which keys of engine.speculative were given (not null), for the
   * config: bit i is the engine room's key i (method, model,
   * num_speculative_tokens, draft_tensor_parallel_size, prompt_lookup_min,
   * prompt_lookup_max, acceptance_rate); and the rate given as a list. */
  unsigned spec_given;
  bool spec_rates_list;
  kvsim_workload_cfg_t *workload; /* owned */
  /* SLO targets (seconds); 0 = none. */
  double slo_ttft_p99_s, slo_tpot_p99_s, slo_e2e_p99_s;
  /* Output. */
  double sample_interval_s;   /* time-series period (default 1 s) */
  double max_time_s;          /* stop simulating at this time; 0 = run to the end */
  /* A disaggregated scenario's two sides, each a typed scenario of its
   * own (the side's hardware and engine keys laid over the scenario,
   * parsed and checked with it), owned; NULL without a disaggregation
   * block. Internal to the engine room (engine/sides.c): a typed override
   * reaches each side that did not give its key itself; read a side
   * through kvsim_scenario_disagg_side. */
  struct kvsim__sides *sides;
  /* The "disaggregation" block (disagg.h); enabled false without one. */
  kvsim_disagg_cfg_t disagg;
  /* The memory plan parsing computed (its parameters' checks are the
   * plan's), kept with the model, GPU and parameters it was computed from:
   * kvsim_scenario_resolve takes it while those are unchanged, so that a
   * scenario's one configuration has one plan. Internal (engine/resolve.c). */
  struct {
    bool valid;
    kvsim_model_t model;
    kvsim_gpu_t gpu;
    kvsim_plan_params_t params;
    kvsim_plan_t plan;
  } parsed_plan;
} kvsim_scenario_t;

/* The configuration a run uses, derived from a scenario and nothing else:
 * the memory plan, the scheduler settings with the plan's limits filled
 * in, and the pool size. The run and the report both read it; nothing is
 * written back into the scenario. Plain data. */
typedef struct kvsim_resolved {
  kvsim_plan_t plan;          /* the memory plan (fits unless resolve failed with ENOFIT) */
  kvsim_sched_cfg_t sched;    /* sc->sched with max_num_seqs, max_num_batched_tokens,
                                 max_model_len, block_size, chunked prefill from the plan */
  int64_t pool_blocks;        /* blocks in each replica's pool, the null block included */
  int64_t pool_usable;        /* blocks requests can hold (pool_blocks - 1) */
  kvsim_perf_lora_t lora;     /* LoRA's kernels per step (all zero when LoRA is off) */
} kvsim_resolved_t;

/* Resolves sc into *out (pure: sc is only read). Errors: a bad plan
 * parameter (KVSIM_EINVAL, from the plan), or a plan that does not fit
 * (KVSIM_ENOFIT; the message quotes the engine's error and the single
 * change that would fit, and out->plan is filled so a caller can show it). */
int kvsim_scenario_resolve(const kvsim_scenario_t *sc, kvsim_resolved_t *out, kvsim_err *err);

/* Loads a scenario file, applying `--set KEY=VAL` overrides (dotted key
 * paths; VAL parsed as JSON when it is JSON, else taken as a string). */
int kvsim_scenario_load(const char *path, const char *const *sets, int nsets,
                        kvsim_scenario_t *sc, kvsim_err *err);
/* Same from JSON text; base_dir resolves relative paths. */
int kvsim_scenario_parse(const char *json_text, const char *where, const char *base_dir,
                         const char *const *sets, int nsets, kvsim_scenario_t *sc, kvsim_err *err);
/* Same from a parsed tree, which is deleted once read (also on error):
 * the scenario holds its configuration typed. Reads the model and GPU
 * (catalog names, or files relative to base_dir) but not the scenario
 * file. */
int kvsim_scenario_from_json(cJSON *root, const char *where, const char *base_dir,
                             kvsim_scenario_t *sc, kvsim_err *err);
/* The embedded default study (configs/scenarios/default.json). */
int kvsim_scenario_load_default(const char *const *sets, int nsets, kvsim_scenario_t *sc,
                                kvsim_err *err);
/* Frees what sc owns (description, workload, sides); sc may be zeroed
 * or failed. */
void kvsim_scenario_fini(kvsim_scenario_t *sc);

/* A deep copy: dst owns its own description, workload and sides (an
 * override of the copy leaves the original's sides as they were); the
 * workload is copied typed (kvsim_workload_cfg_copy), no file is read.
 * Errors: KVSIM_ENOMEM (dst zeroed). */
int kvsim_scenario_copy(const kvsim_scenario_t *src, kvsim_scenario_t *dst, kvsim_err *err);

/* summary.json's "config": the keys the scenario file and --set gave (and
 * the typed overrides set), in the parameter registry's order, each
 * parameter the scenario holds typed in canonical form, plus name,
 * description and seed. Fed back as a scenario it reproduces the run.
 * Caller deletes; NULL when out of memory. */
cJSON *kvsim_scenario_config_json(const kvsim_scenario_t *sc);

/* Typed overrides of a parsed scenario, with the checks parsing makes
 * (KVSIM_EINVAL naming the key); each marks its key given so the
 * summary's "config" says what ran. On a disaggregated scenario each also
 * sets its key on each side that did not give it itself (the sides'
 * instances are disagg.replicas); a side the change leaves invalid is an
 * error when it is built (kvsim_scenario_disagg_side, a run), worded as
 * parsing the side with the key would word it. */
int kvsim_scenario_set_replicas(kvsim_scenario_t *sc, int64_t n, kvsim_err *err);
int kvsim_scenario_set_utilization(kvsim_scenario_t *sc, double u, kvsim_err *err);
/* The profile's own share of GPU memory (kvsim/sched.h
 * kvsim_sched_fraction_key: gpu_memory_utilization, SGLang's
 * mem_fraction_static, TGI's cuda_memory_fraction); KVSIM_EINVAL naming the
 * profile when it has none (HF Transformers). */
int kvsim_scenario_set_memory_fraction(kvsim_scenario_t *sc, double f, kvsim_err *err);
/* perf.step_time_scale, in [KVSIM_STEP_SCALE_MIN, KVSIM_STEP_SCALE_MAX] (kvsim/params.h). */
int kvsim_scenario_set_step_time_scale(kvsim_scenario_t *sc, double scale, kvsim_err *err);
/* perf.prefill_time_scale, in the same range. */
int kvsim_scenario_set_prefill_time_scale(kvsim_scenario_t *sc, double scale, kvsim_err *err);
/* The scenario's band edges for the coefficients `band` (sc's GPU's, or
 * borrowed ones): gpu.h kvsim_gpu_band_edges times the scenario's own
 * step and prefill scales, held in [KVSIM_STEP_SCALE_MIN, _MAX]. */
void kvsim_scenario_band_edges(const kvsim_scenario_t *sc, const kvsim_gpu_perf_t *band, kvsim_band_edge_t *lo,
                               kvsim_band_edge_t *hi);
/* Sets both scales of one edge (an edge run's scenario). */
int kvsim_scenario_set_band_edge(kvsim_scenario_t *sc, const kvsim_band_edge_t *e, kvsim_err *err);
/* engine.kv_cache_dtype, engine.max_num_seqs (>= 1), engine.max_model_len
 * (>= 1; the model's bound is the plan's check) and
 * hardware.tensor_parallel_size (with the expert-parallel check parsing
 * makes): the changes a diagnosis advises (study.h
 * kvsim_study_verify_advice). */
int kvsim_scenario_set_kv_cache_dtype(kvsim_scenario_t *sc, kvsim_kv_dtype d, kvsim_err *err);
int kvsim_scenario_set_tensor_parallel(kvsim_scenario_t *sc, int64_t tp, kvsim_err *err);
int kvsim_scenario_set_max_num_seqs(kvsim_scenario_t *sc, int64_t n, kvsim_err *err);
int kvsim_scenario_set_max_model_len(kvsim_scenario_t *sc, int64_t n, kvsim_err *err);
/* engine.quantization: the weights' method (none, fp8, int8, awq, gptq,
 * int4, mxfp4; the plan checks it against the model, as when parsed). */
int kvsim_scenario_set_quantization(kvsim_scenario_t *sc, const char *q, kvsim_err *err);
/* hardware.gpu: a catalog name or GPU file (relative to the scenario's
 * folder as when parsed). The typed fields end as parsing with the new
 * GPU would leave them: the scenario's own "perf" keys laid over the
 * GPU's perf, hardware.gpu_memory_gib kept, the plan computed again, a
 * disaggregation block checked again; on error sc is unchanged. */
int kvsim_scenario_set_gpu(kvsim_scenario_t *sc, const char *gpu, kvsim_err *err);
/* A number under "workload" (key "synthetic.arrival.rate", "rate", ...;
 * the keys of kvsim_workload_set), set through the workload room's typed
 * setter with parsing's checks; on error sc is unchanged. */
int kvsim_scenario_set_workload(kvsim_scenario_t *sc, const char *key, double value, kvsim_err *err);

/* KVSIM_OK when key_path ("engine.max_num_seqs") names a scenario key;
 * otherwise KVSIM_EINVAL with "where: 'key': unknown scenario key (did you
 * mean ...?)". Keys under workload and perf are checked by their parsers
 * when the scenario is built. */
int kvsim_scenario_check_key(const char *key_path, const char *where, kvsim_err *err);

/* One side of a disaggregated scenario as a scenario of its own: sc with
 * the side's hardware and engine keys laid over it, as parsed and as the
 * typed overrides since left it, its instances disagg.replicas' and its
 * workload a copy of sc's (the caller owns *out: kvsim_scenario_fini;
 * zeroed on error). The side's checks run again: KVSIM_EINVAL naming
 * "<file>: disaggregation.SIDE (as a scenario): <key>", or when sc has no
 * disaggregation block. */
int kvsim_scenario_disagg_side(const kvsim_scenario_t *sc, kvsim_disagg_side side,
                               kvsim_scenario_t *out, kvsim_err *err);

/* A disaggregated scenario's instances of one side, all units together
 * (disaggregation.SIDE.replicas = n, in [1, 4096]). KVSIM_EINVAL without a
 * disaggregation block or out of range. */
int kvsim_scenario_set_disagg_replicas(kvsim_scenario_t *sc, kvsim_disagg_side side, int64_t n,
                                       kvsim_err *err);

/* GPUs of one replica: TP x PP; for a disaggregated scenario one unit's,
 * both sides' instances (disagg.h unit_prefill, unit_decode) at each side's
 * TP x PP (0 when a side cannot be built). */
int kvsim_scenario_gpus_per_replica(const kvsim_scenario_t *sc);

/* Applies one "a.b.c=value" override to a JSON tree. */
int kvsim_json_set_path(cJSON *root, const char *assignment, kvsim_err *err);
/* Sets a.b.c to v (taken over, also on error), creating objects on the way. */
int kvsim_json_set_value(cJSON *root, const char *key_path, cJSON *v, kvsim_err *err);

#ifdef __cplusplus
}
#endif

#endif
