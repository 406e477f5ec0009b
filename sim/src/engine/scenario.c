/* Scenario JSON -> kvsim_scenario_t. Every section checks its keys, so a
 * typo is an error naming the path instead of a silently ignored knob. */
#include "kvsim/scenario.h"
#include "kvsim/spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/catalog.h"
#include "core/params_json.h"
#include "core/util.h"
#include "engine/disagg.h"
#include "engine/router.h"
#include "engine/scenario_keys.h"

static int get_str(const cJSON *o, const char *key, char *out, size_t cap, const char *w,
                   kvsim_err *err) {
  return kvsim__json_str(o, key, out, cap, w, err);
}

/* A top-level key's error reads "FILE: seed: ...", as a section's reads
 * "FILE: engine.block_size: ...": a top-level getter is given no `where`
 * and its error, rc < 0, gets the file in front here. */
static int top_level(int rc, const char *where, kvsim_err *err) {
  if (rc < 0)
    kvsim_err_prefix(err, "%s", where);
  return rc;
}

/* The description is for people and read by no code (kept for the
 * config), but a number there is a mistake all the same. */
static int parse_description(const cJSON *root, kvsim_scenario_t *sc, kvsim_err *err) {
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "description");
  if (d && !cJSON_IsNull(d) && !cJSON_IsString(d))
    return kvsim_err_set(err, KVSIM_EINVAL, "description: expected a string");
  if (cJSON_IsString(d) && !(sc->description = kvsim__strdup(d->valuestring)))
    return kvsim_err_set(err, KVSIM_ENOMEM, "description: out of memory");
  return KVSIM_OK;
}

/* vLLM --enable-expert-parallel with data parallelism: the experts are
 * spread over tp x dp ranks; here dp ranks are replicas, so the EP group
 * is tp x (some of the) replicas. tp must be >= 1. */
int kvsim__scenario_check_ep(int64_t ep, int64_t tp, int64_t rep, const char *w, kvsim_err *err) {
  if (ep < 1 || (ep > 1 && (ep % tp || ep / tp > rep)))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.expert_parallel_size: %lld must be tensor_parallel_size (%lld) x a number "
                         "of replicas <= replicas (%lld)",
                         w, (long long)ep, (long long)tp, (long long)rep);
  return KVSIM_OK;
}

static int parse_hardware(kvsim_scenario_t *sc, const cJSON *o, const char *w, char *gpu,
                          size_t gcap, kvsim_err *err) {
  int rc;
  if ((rc = kvsim__scenario_check_keys(o, "hardware", w, err)) < 0)
    return rc;
  if ((rc = get_str(o, "gpu", gpu, gcap, w, err)) < 0)
    return rc;
  double gib = 0;
  int64_t tp = 1, pp = 1, rep = 1, ep = 1;
  const int gib_given = kvsim__json_num(o, "gpu_memory_gib", &gib, w, err);
  /* Ranges first (the registry's): the expert-parallel rule below divides
   * by tp; the EP group is tp x at most all replicas. */
  if ((rc = gib_given) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_TENSOR_PARALLEL_SIZE, &tp, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_PIPELINE_PARALLEL_SIZE, &pp, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_REPLICAS, &rep, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_EXPERT_PARALLEL_SIZE, &ep, w, err)) < 0)
    return rc;
  if ((rc = kvsim__scenario_check_ep(ep, tp, rep, w, err)) < 0)
    return rc;
  sc->plan.ep = ep > 1 ? (int)ep : 0;
  /* A total past any GPU's memory would overflow the byte count (and was
   * once silently replaced by the catalog's figure); one below a MiB is
   * not a GPU (and 1e-310 rounded to 0 bytes, which meant "the catalog's"
   * without a word). Absent: the catalog's. */
  if (gib_given && !kvsim_param_in_range(kvsim_param_get(KVSIM_PARAM_GPU_MEMORY_GIB), gib))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.gpu_memory_gib: %g GiB is outside " KVSIM_GPU_MEMORY_RANGE,
                         w, gib);
  if (gib_given) {
    sc->plan.total_memory_bytes = (int64_t)llround(gib * KVSIM_GIB);
    sc->gpu_memory_gib = gib;
  }
  sc->plan.tp = (int)tp;
  sc->plan.pp = (int)pp;
  sc->replicas = (int)rep;
  char router[32] = "round_robin";
  if ((rc = get_str(o, "router", router, sizeof router, w, err)) < 0)
    return rc;
  if ((rc = kvsim__router_parse(router, &sc->router)) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.router: '%s' (expected round_robin, least_loaded, least_kv or "
                         "prefix_affinity)",
                         w, router);
  int64_t imb = sc->router_imbalance;
  if ((rc = kvsim__json_param_int(o, KVSIM_PARAM_ROUTER_IMBALANCE, &imb, w, err)) < 0)
    return rc;
  sc->router_imbalance = imb;
  return KVSIM_OK;
}

static int parse_slo(kvsim_scenario_t *sc, const cJSON *o, const char *w, kvsim_err *err) {
  int rc;
  if ((rc = kvsim__scenario_check_keys(o, "slo", w, err)) < 0 ||
      (rc = kvsim__json_num(o, "ttft_p99_s", &sc->slo_ttft_p99_s, w, err)) < 0 ||
      (rc = kvsim__json_num(o, "tpot_p99_s", &sc->slo_tpot_p99_s, w, err)) < 0 ||
      (rc = kvsim__json_num(o, "e2e_p99_s", &sc->slo_e2e_p99_s, w, err)) < 0)
    return rc;
  /* 0 is "no target" inside; a target written as 0 (or below) is none
   * that a run can meet, so it is an error rather than silently none. One
   * past the simulator's time limit every run meets: no target either. */
  const int ids[] = {KVSIM_PARAM_TTFT_P99_S, KVSIM_PARAM_TPOT_P99_S, KVSIM_PARAM_E2E_P99_S};
  const double v[] = {sc->slo_ttft_p99_s, sc->slo_tpot_p99_s, sc->slo_e2e_p99_s};
  for (int i = 0; i < 3; i++) {
    const char *key = kvsim_param_leaf(kvsim_param_get(ids[i]));
    char name[600];
    snprintf(name, sizeof name, "%s.%s", w, key);
    if (kvsim__json_given(o, key) && !(v[i] > 0))
      return kvsim_err_set_param(err, KVSIM_EINVAL, ids[i], name,
                                 "%g must be > 0 (leave the key out for no target)", v[i]);
    if ((rc = kvsim_param_check_num(ids[i], v[i] > 0 ? v[i] : 1, name, err)) < 0)
      return rc;
  }
  return KVSIM_OK;
}

static int parse_output(kvsim_scenario_t *sc, const cJSON *o, const char *w, kvsim_err *err) {
  int rc;
  if ((rc = kvsim__scenario_check_keys(o, "output", w, err)) < 0 ||
      (rc = kvsim__json_param_num(o, KVSIM_PARAM_SAMPLE_INTERVAL_S, &sc->sample_interval_s, w,
                                  err)) < 0 ||
      (rc = kvsim__json_param_num(o, KVSIM_PARAM_MAX_TIME_S, &sc->max_time_s, w, err)) < 0)
    return rc;
  return KVSIM_OK;
}

static int parse_admission(kvsim_scenario_t *sc, const cJSON *o, const char *w, kvsim_err *err) {
  kvsim_admission_t *a = &sc->admission;
  int rc;
  if ((rc = kvsim__scenario_check_keys(o, "admission", w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_MAX_PROMPT_TOKENS, &a->max_prompt_tokens, w,
                                  err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_MAX_OUTPUT_TOKENS, &a->max_output_tokens, w,
                                  err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_MAX_QUEUE_LENGTH, &a->max_queue_length, w, err)) <
          0 ||
      (rc = kvsim__json_param_num(o, KVSIM_PARAM_MAX_WAIT_S, &a->max_wait_s, w, err)) < 0)
    return rc;
  return KVSIM_OK;
}

/* One of the scenario's own scales in perf (absent: left as it is). */
static int parse_scale(const cJSON *o, int id, const char *w, double *out, kvsim_err *err) {
  const kvsim_param_t *p = kvsim_param_get(id);
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, kvsim_param_leaf(p));
  if (!s || cJSON_IsNull(s))
    return 0;
  char name[600];
  snprintf(name, sizeof name, "%s.%s", w, kvsim_param_leaf(p));
  if (!cJSON_IsNumber(s) || !kvsim_param_in_range(p, s->valuedouble))
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "expected a number in [%g, %g]", p->min,
                               p->max);
  *out = s->valuedouble;
  return 1;
}

static int parse_perf(kvsim_scenario_t *sc, const cJSON *o, const char *w, kvsim_err *err) {
  /* step_time_scale and prefill_time_scale belong to the scenario, not
   * to the GPU; the other keys and ranges are a GPU file's "perf" (gpu.c). */
  int a = parse_scale(o, KVSIM_PARAM_STEP_TIME_SCALE, w, &sc->step_time_scale, err);
  int b =
      a < 0 ? a : parse_scale(o, KVSIM_PARAM_PREFILL_TIME_SCALE, w, &sc->prefill_time_scale, err);
  if (a < 0 || b < 0)
    return a < 0 ? a : b;
  for (int i = 0; kvsim__perf_gpu_keys[i]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, kvsim__perf_gpu_keys[i]);
    if (v && !cJSON_IsNull(v))
      sc->perf_given |= 1u << i;
  }
  /* Taken out even when null (left out), which the GPU's keys know not. */
  if (!cJSON_GetObjectItemCaseSensitive(o, "step_time_scale") &&
      !cJSON_GetObjectItemCaseSensitive(o, "prefill_time_scale"))
    return kvsim_gpu_perf_parse(o, w, &sc->gpu.perf, err);
  cJSON *rest = cJSON_Duplicate(o, 1);
  if (!rest)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", w);
  cJSON_DeleteItemFromObjectCaseSensitive(rest, "step_time_scale");
  cJSON_DeleteItemFromObjectCaseSensitive(rest, "prefill_time_scale");
  int rc = kvsim_gpu_perf_parse(rest, w, &sc->gpu.perf, err);
  cJSON_Delete(rest);
  return rc;
}

/* The plan checks its parameters as calc names them ("--max-num-seqs
 * (engine.max_num_seqs): 1e+08 is out of range ..."). For a scenario the
 * same check, run at load, names the file and the key instead
 * ("scen.json: engine.max_num_seqs: ..."): the error carries the
 * parameter's id and where its text after the name starts (kvsim/error.h),
 * so the key is the registry's, never read back from the message. */
int kvsim__scenario_check_plan(kvsim_scenario_t *sc, const char *where, kvsim_err *err) {
  kvsim_err e = {0};
  int rc = kvsim_plan_compute(&sc->model, &sc->gpu, &sc->plan, &sc->parsed_plan.plan, &e);
  if (rc == KVSIM_OK) {
    /* The scenario's plan, kept for kvsim_scenario_resolve (resolve.c). */
    sc->parsed_plan.valid = true;
    sc->parsed_plan.model = sc->model;
    sc->parsed_plan.gpu = sc->gpu;
    sc->parsed_plan.params = sc->plan;
    return KVSIM_OK;
  }
  const kvsim_param_t *p = kvsim_param_get(e.param);
  if (!p)
    return kvsim_err_set(err, rc, "%s: %s", where, e.msg);
  char name[4300];
  snprintf(name, sizeof name, "%s: %s", where, p->key);
  return kvsim_err_set_param(err, rc, p->id, name, "%s", kvsim_err_what(&e));
}

int kvsim__scenario_load_relative(const char *name, const char *base, kvsim_model_t *m,
                                  kvsim_gpu_t *g, kvsim_err *err) {
  if (strchr(name, '/') && name[0] != '/') {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", base, name);
    /* stat, not fopen: opening a pipe would block before the loader
     * could refuse it. Anything there (a file, or what the loader then
     * refuses by name) is the scenario-relative one. */
    struct stat st;
    if (stat(path, &st) == 0)
      return m ? kvsim_model_load(path, m, err) : kvsim_gpu_load(path, g, err);
  }
  return m ? kvsim_model_load(name, m, err) : kvsim_gpu_load(name, g, err);
}

static const cJSON *section(const cJSON *root, const char *key, const char *where, char *w,
                            size_t wcap, kvsim_err *err, int *rc) {
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, key);
  snprintf(w, wcap, "%s: %s", where, key);
  *rc = KVSIM_OK;
  if (cJSON_IsNull(o))
    return NULL; /* null: the section left out */
  if (o && !cJSON_IsObject(o)) {
    *rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: expected an object", w);
    return NULL;
  }
  return o;
}

int kvsim_scenario_from_json(cJSON *root, const char *where, const char *base_dir,
                             kvsim_scenario_t *sc, kvsim_err *err) {
  return kvsim__scenario_from_json_as(root, where, where, base_dir, sc, err);
}

int kvsim__scenario_from_json_as(cJSON *root, const char *where, const char *file,
                                 const char *base_dir, kvsim_scenario_t *sc, kvsim_err *err) {
  memset(sc, 0, sizeof *sc);
  snprintf(sc->base_dir, sizeof sc->base_dir, "%s", base_dir ? base_dir : ".");
  kvsim_plan_params_default(&sc->plan);
  sc->replicas = 1;
  sc->router_imbalance = KVSIM_ROUTER_IMBALANCE_DEFAULT;
  sc->sample_interval_s = 1.0;
  sc->quant_step_factor = 1.0;
  sc->step_time_scale = 1.0;
  sc->offload.overlap = true;
  sc->seed = 1;
  snprintf(sc->profile, sizeof sc->profile, "vllm-v1");

  int rc = KVSIM_OK;
  char w[512];
  if (!cJSON_IsObject(root)) {
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: expected a JSON object", where);
    goto fail;
  }
  if ((rc = kvsim__scenario_check_keys(root, "", where, err)) < 0)
    goto fail;
  const int named =
      top_level(kvsim__json_str(root, "name", sc->name, sizeof sc->name, "", err), where, err);
  if ((rc = named) < 0 || (rc = top_level(parse_description(root, sc, err), where, err)) < 0)
    goto fail;
  /* An empty name would silently be the file's: the key left out is. */
  if (named > 0 && !sc->name[0]) {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: name: empty (leave the key out to name the scenario after its file)",
                       where);
    goto fail;
  }
  if (!sc->name[0]) {
    /* The file stem names the scenario. */
    const char *slash = strrchr(file, '/');
    snprintf(sc->name, sizeof sc->name, "%s", slash ? slash + 1 : file);
    char *dot = strstr(sc->name, ".json");
    if (dot)
      *dot = '\0';
  }
  if ((rc = kvsim__check_name(sc->name, where, err)) < 0)
    goto fail;
  int64_t seed = 1;
  if ((rc = top_level(kvsim__json_param_int(root, KVSIM_PARAM_SEED, &seed, "", err), where, err)) <
      0)
    goto fail;
  sc->seed = (uint64_t)seed;

  char model[4096] = "", gpu[4096] = "h100-sxm";
  if ((rc = top_level(kvsim__json_str(root, "model", model, sizeof model, "", err), where, err)) <
      0)
    goto fail;
  if (!rc) {
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: missing key 'model'", where);
    goto fail;
  }
  snprintf(sc->model_id, sizeof sc->model_id, "%s", model);
  const cJSON *hw = section(root, "hardware", where, w, sizeof w, err, &rc);
  if (rc < 0 || (hw && (rc = parse_hardware(sc, hw, w, gpu, sizeof gpu, err)) < 0))
    goto fail;
  if (hw && kvsim__json_given(hw, "gpu"))
    snprintf(sc->gpu_id, sizeof sc->gpu_id, "%s", gpu);
  /* Model and GPU paths are relative to the scenario's folder; a name
   * without a slash is a catalog name (or an HF id that maps onto one). */
  if ((rc = kvsim__scenario_load_relative(model, sc->base_dir, &sc->model, NULL, err)) < 0) {
    kvsim_err_prefix(err, "%s: model", where);
    goto fail;
  }
  if ((rc = kvsim__scenario_load_relative(gpu, sc->base_dir, NULL, &sc->gpu, err)) < 0) {
    kvsim_err_prefix(err, "%s: hardware.gpu", where);
    goto fail;
  }
  if (sc->plan.ep > 1 && sc->model.num_experts == 0) {
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: hardware.expert_parallel_size %d: model '%s' has no experts",
                       where, sc->plan.ep, sc->model.name);
    goto fail;
  }

  const cJSON *eng = section(root, "engine", where, w, sizeof w, err, &rc);
  if (rc < 0)
    goto fail;
  int pc_given = 0;
  if (eng && (pc_given = kvsim__scenario_parse_engine(sc, eng, w, err)) < 0) {
    rc = pc_given;
    goto fail;
  }
  sc->sched_ops = kvsim_sched_find(sc->profile);
  if (!sc->sched_ops) {
    char names[256];
    kvsim_sched_names(names, sizeof names);
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: engine.profile: unknown profile '%s' (expected one of %s)",
                       where, sc->profile, names);
    goto fail;
  }
  /* The profile's defaults, allowances and own options (its ops table). */
  const kvsim_sched_ops_t *ops = sc->sched_ops;
  if ((rc = kvsim_sched_parse_opts(ops, eng, w, &sc->sched.opts, err)) < 0)
    goto fail;
  sc->plan.engine = ops->plan_engine;
  if (ops->plan_params)
    ops->plan_params(&sc->sched.opts, &sc->plan);
  if (sc->plan.vllm_version && !kvsim_plan_version_rules(sc->plan.engine, sc->plan.vllm_version)) {
    char v[16], range[48];
    kvsim_vllm_version_format(sc->plan.vllm_version, v, sizeof v);
    kvsim_plan_versions_modelled(sc->plan.engine, range, sizeof range);
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: engine.vllm_version: %s is not modelled for profile %s (modelled: %s)",
                       where, v, sc->profile, range);
    goto fail;
  }
  if (!pc_given)
    sc->sched.enable_prefix_caching = ops->defaults.enable_prefix_caching;
  if (!sc->overlap_given)
    sc->offload.overlap = ops->defaults.transfer_overlap;
  if (sc->offload.cpu_gib > 0) {
    /* The offloading connector is V1's, keyed by block hashes, and a KV
     * connector turns the hybrid allocator off (vllm/config/vllm.py). */
    if (!ops->defaults.offload_connector || !sc->sched.enable_prefix_caching) {
      rc = kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: engine.kv_offloading_size needs profile vllm-v1 with prefix caching on",
                         where);
      goto fail;
    }
    sc->plan.disable_hybrid_kv_cache_manager = true;
  }
  if (!kvsim__json_given(eng, "swap_space"))
    sc->swap_space_gib = ops->defaults.swap_space_gib;
  if (sc->swap_space_gib > 0 && sc->sched.preemption_mode != KVSIM_PREEMPT_SWAP &&
      ops->defaults.recompute_only) {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: engine.swap_space is V0's (%s preempts by recompute only; use "
                       "kv_offloading_size for a CPU tier)",
                       where, ops->name);
    goto fail;
  }
  /* The CPU tier is sized by the plan (checked arithmetic and range). */
  sc->plan.swap_space_gib = sc->swap_space_gib;
  sc->plan.kv_offloading_gib = sc->offload.cpu_gib;

  const cJSON *o;
  if ((o = section(root, "slo", where, w, sizeof w, err, &rc)) && (rc = parse_slo(sc, o, w, err)) < 0)
    goto fail;
  if (rc < 0)
    goto fail;
  if ((o = section(root, "output", where, w, sizeof w, err, &rc)) && (rc = parse_output(sc, o, w, err)) < 0)
    goto fail;
  if (rc < 0)
    goto fail;
  if ((o = section(root, "admission", where, w, sizeof w, err, &rc)) &&
      (rc = parse_admission(sc, o, w, err)) < 0)
    goto fail;
  if (rc < 0)
    goto fail;
  if ((o = section(root, "perf", where, w, sizeof w, err, &rc)) && (rc = parse_perf(sc, o, w, err)) < 0)
    goto fail;
  if (rc < 0)
    goto fail;
  const cJSON *wl = cJSON_GetObjectItemCaseSensitive(root, "workload");
  snprintf(w, sizeof w, "%s: workload", where);
  if (!wl || cJSON_IsNull(wl)) {
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: missing key 'workload'", where);
    goto fail;
  }
  if ((rc = kvsim_workload_parse(wl, sc->base_dir, w, &sc->workload, err)) < 0)
    goto fail;
  if ((rc = kvsim__scenario_check_plan(sc, where, err)) < 0 ||
      (rc = kvsim__disagg_parse(root, sc, where, err)) < 0)
    goto fail;
  kvsim__scenario_mark_tree(sc, root);
  /* The sides are read from the tree too; then the scenario is typed only. */
  if (sc->disagg.enabled && (rc = kvsim__sides_parse(sc, root, where, err)) < 0)
    goto fail;
  cJSON_Delete(root);
  return KVSIM_OK;
fail:
  cJSON_Delete(root);
  kvsim__sides_free(sc);
  kvsim_workload_cfg_free(sc->workload);
  sc->workload = NULL;
  kvsim__free(sc->description);
  sc->description = NULL;
  return rc < 0 ? rc : KVSIM_EINVAL;
}

int kvsim_scenario_parse(const char *json_text, const char *where, const char *base_dir,
                         const char *const *sets, int nsets, kvsim_scenario_t *sc, kvsim_err *err) {
  memset(sc, 0, sizeof *sc);
  cJSON *root = kvsim__json_parse(json_text, where, err);
  if (!root)
    return err->code;
  /* Overrides apply to an object only; a non-object is refused by
   * from_json with its own message. */
  for (int i = 0; cJSON_IsObject(root) && i < nsets; i++) {
    int rc = kvsim_json_set_path(root, sets[i], err);
    if (rc < 0) {
      cJSON_Delete(root);
      return rc;
    }
  }
  return kvsim_scenario_from_json(root, where, base_dir, sc, err);
}

int kvsim_scenario_load_default(const char *const *sets, int nsets, kvsim_scenario_t *sc,
                                kvsim_err *err) {
  /* The embedded default study: a synthetic workload, no files needed. */
  const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_SCENARIO, "default");
  if (!e) {
    memset(sc, 0, sizeof *sc);
    return kvsim_err_set(err, KVSIM_ENOENT, "no embedded default scenario");
  }
  return kvsim_scenario_parse(e->json, "configs/scenarios/default.json (embedded)", ".", sets, nsets,
                              sc, err);
}

int kvsim_scenario_load(const char *path, const char *const *sets, int nsets,
                        kvsim_scenario_t *sc, kvsim_err *err) {
  char *text;
  int rc = kvsim__read_file(path, &text, NULL, err);
  if (rc < 0) {
    memset(sc, 0, sizeof *sc);
    return rc;
  }
  char dir[4096];
  kvsim__dirname(path, dir, sizeof dir);
  rc = kvsim_scenario_parse(text, path, dir, sets, nsets, sc, err);
  free(text);
  if (rc == KVSIM_OK)
    snprintf(sc->path, sizeof sc->path, "%s", path);
  return rc;
}

void kvsim_scenario_fini(kvsim_scenario_t *sc) {
  kvsim_workload_cfg_free(sc->workload);
  kvsim__sides_free(sc);
  kvsim__free(sc->description);
  memset(sc, 0, sizeof *sc);
}
