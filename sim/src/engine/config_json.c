/* summary.json's "config": the scenario as it ran, printed through the
 * parameter registry (kvsim/params.h). The keys are those the scenario file
 * and --set gave (and the typed overrides made), in the registry's order;
 * a parameter the scenario holds typed is printed from its typed field, so
 * its value is in canonical form ("8k" prints as 8000, version "0.11" as
 * "0.11.0"). Fed back as a scenario, the config reproduces the run
 * (tests/golden/test_config_roundtrip.sh).
 *
 * A profile's own options are printed by the profile from its typed
 * options (kvsim/sched.h print_opts); engine.speculative, engine.dtype,
 * perf's GPU keys and the description from the scenario's own records of
 * them; the workload by its room (kvsim_workload_given_json), which
 * records its own given keys. Which keys were given is the scenario's
 * record (given.c: given_rows, given_sections, perf_order). Still read
 * from the scenario's tree (sc->resolved): the sides' engine keys inside
 * the disaggregation block, which the engine room holds no typed fields
 * for yet (the block's own rows print from kvsim_disagg_cfg_t). A key outside the
 * registry comes after the registry's keys of its object, in the order
 * given. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/scenario_keys.h"
#include "kvsim/params.h"
#include "kvsim/scenario.h"
#include "kvsim/spec.h"
#include "kvsim/workload.h"

static cJSON *num(double v) { return cJSON_CreateNumber(v); }
static cJSON *str(const char *s) { return cJSON_CreateString(s); }
static cJSON *boolean(bool b) { return cJSON_CreateBool(b); }

/* engine.speculative's given keys from the typed fields (the method's
 * canonical name; the drafter as given), in kvsim__spec_keys' order;
 * NULL when none was given or out of memory. */
static cJSON *spec_value(const kvsim_scenario_t *sc) {
  const kvsim_plan_spec_params_t *p = &sc->plan.spec;
  if (!sc->spec_given)
    return NULL;
  cJSON *o = cJSON_CreateObject();
  for (int i = 0; o && kvsim__spec_keys[i]; i++) {
    const char *k = kvsim__spec_keys[i];
    cJSON *v = NULL;
    if (!(sc->spec_given >> i & 1u))
      continue;
    if (!strcmp(k, "method"))
      v = str(kvsim_spec_method_name(p->method));
    else if (!strcmp(k, "model"))
      v = p->model[0] ? str(p->model) : NULL; /* ngram reads none */
    else if (!strcmp(k, "num_speculative_tokens"))
      v = num(p->num_speculative_tokens);
    else if (!strcmp(k, "draft_tensor_parallel_size"))
      v = num(p->draft_tensor_parallel_size);
    else if (!strcmp(k, "prompt_lookup_min"))
      v = num(p->prompt_lookup_min);
    else if (!strcmp(k, "prompt_lookup_max"))
      v = num(p->prompt_lookup_max);
    else if (sc->spec_rates_list)
      v = cJSON_CreateDoubleArray(sc->spec_rates, sc->spec_nrates);
    else
      v = num(sc->spec_rates[0]);
    if (!v && (strcmp(k, "model") || p->model[0])) {
      cJSON_Delete(o);
      return NULL;
    }
    if (v)
      cJSON_AddItemToObject(o, k, v);
  }
  return o;
}

/* The scheduler's and the plan's typed fields of the engine section; NULL
 * when the row has no typed field here (the tree's value is printed). */
static cJSON *engine_value(const kvsim_scenario_t *sc, int id) {
  const kvsim_plan_params_t *p = &sc->plan;
  char v[16];
  switch (id) {
  case KVSIM_PARAM_PROFILE:
    return str(sc->profile);
  case KVSIM_PARAM_GPU_MEMORY_UTILIZATION:
    return num(p->gpu_memory_utilization);
  case KVSIM_PARAM_MAX_MODEL_LEN:
    return num((double)p->max_model_len);
  case KVSIM_PARAM_BLOCK_SIZE:
    return num(p->block_size);
  case KVSIM_PARAM_MAX_NUM_SEQS:
    return num((double)p->max_num_seqs);
  case KVSIM_PARAM_MAX_NUM_BATCHED_TOKENS:
    return num((double)p->max_num_batched_tokens);
  case KVSIM_PARAM_ENABLE_PREFIX_CACHING:
    return boolean(sc->sched.enable_prefix_caching);
  case KVSIM_PARAM_ENABLE_CHUNKED_PREFILL:
    return p->enable_chunked_prefill < 0 ? NULL : boolean(p->enable_chunked_prefill);
  case KVSIM_PARAM_KV_CACHE_DTYPE:
    return str(kvsim_kv_dtype_name(p->kv_dtype));
  case KVSIM_PARAM_KV_QUANT_GROUP:
    return num(p->kv_quant_group);
  case KVSIM_PARAM_KV_RESIDUAL_TOKENS:
    return num(p->kv_residual_tokens);
  case KVSIM_PARAM_DTYPE:
    return sc->dtype[0] ? str(sc->dtype) : NULL;
  case KVSIM_PARAM_SPECULATIVE:
    return spec_value(sc);
  case KVSIM_PARAM_QUANTIZATION:
    return str(p->quantization);
  case KVSIM_PARAM_NUM_GPU_BLOCKS_OVERRIDE:
    return num((double)p->num_gpu_blocks_override);
  case KVSIM_PARAM_KV_CACHE_MEMORY_BYTES:
    return num((double)p->kv_cache_memory_bytes);
  case KVSIM_PARAM_ENFORCE_EAGER:
    return boolean(p->enforce_eager);
  case KVSIM_PARAM_ESTIMATE_CUDAGRAPHS:
    return boolean(p->estimate_cudagraphs);
  case KVSIM_PARAM_DISABLE_HYBRID_KV_CACHE_MANAGER:
    return boolean(p->disable_hybrid_kv_cache_manager);
  case KVSIM_PARAM_SCHEDULING_POLICY:
    return str(sc->sched.policy == KVSIM_POLICY_PRIORITY ? "priority" : "fcfs");
  case KVSIM_PARAM_PREEMPTION_MODE:
    return str(sc->sched.preemption_mode == KVSIM_PREEMPT_SWAP ? "swap" : "recompute");
  case KVSIM_PARAM_SWAP_SPACE:
    return num(sc->swap_space_gib);
  case KVSIM_PARAM_KV_OFFLOADING_SIZE:
    return num(sc->offload.cpu_gib);
  case KVSIM_PARAM_OFFLOAD_STORE_THRESHOLD:
    return num((double)sc->offload.store_threshold);
  case KVSIM_PARAM_TRANSFER_OVERLAP:
    return boolean(sc->offload.overlap);
  case KVSIM_PARAM_QUANT_STEP_FACTOR:
    return num(sc->quant_step_factor);
  case KVSIM_PARAM_WEIGHTS_GIB:
    return num(p->weights_gib);
  case KVSIM_PARAM_ACTIVATION_GIB:
    return num(p->activation_gib);
  case KVSIM_PARAM_NON_TORCH_GIB:
    return num(p->non_torch_gib);
  case KVSIM_PARAM_CUDA_GRAPH_GIB:
    return num(p->cuda_graph_gib);
  case KVSIM_PARAM_VLLM_VERSION:
    if (p->vllm_version <= 0)
      return NULL;
    kvsim_vllm_version_format(p->vllm_version, v, sizeof v);
    return str(v);
  case KVSIM_PARAM_ENABLE_LORA:
    return boolean(p->lora.enable);
  case KVSIM_PARAM_MAX_LORAS:
    return num(p->lora.max_loras);
  case KVSIM_PARAM_MAX_LORA_RANK:
    return num(p->lora.max_lora_rank);
  case KVSIM_PARAM_MAX_CPU_LORAS:
    return num(p->lora.max_cpu_loras);
  case KVSIM_PARAM_FULLY_SHARDED_LORAS:
    return boolean(p->lora.fully_sharded);
  default:
    return NULL;
  }
}

/* What the printer reads: the scenario, and its profile's given options as
 * the profile prints them back from its typed options (sched.h
 * print_opts). */
typedef struct printer {
  const kvsim_scenario_t *sc;
  cJSON *opts;
} printer_t;

/* The typed value of a registry row, or NULL (the tree's is printed). */
static cJSON *typed_value(const printer_t *pr, int id) {
  const kvsim_scenario_t *sc = pr->sc;
  switch (id) {
  case KVSIM_PARAM_SEED:
    return num((double)sc->seed);
  case KVSIM_PARAM_MODEL:
    return sc->model_id[0] ? str(sc->model_id) : NULL;
  case KVSIM_PARAM_GPU:
    return sc->gpu_id[0] ? str(sc->gpu_id) : NULL;
  case KVSIM_PARAM_TENSOR_PARALLEL_SIZE:
    return num(sc->plan.tp);
  case KVSIM_PARAM_PIPELINE_PARALLEL_SIZE:
    return num(sc->plan.pp);
  case KVSIM_PARAM_REPLICAS:
    return num(sc->replicas);
  case KVSIM_PARAM_ROUTER:
    return str(kvsim_router_name(sc->router));
  case KVSIM_PARAM_ROUTER_IMBALANCE:
    return num((double)sc->router_imbalance);
  case KVSIM_PARAM_EXPERT_PARALLEL_SIZE:
    return num(sc->plan.ep > 1 ? sc->plan.ep : 1);
  case KVSIM_PARAM_TTFT_P99_S:
    return num(sc->slo_ttft_p99_s);
  case KVSIM_PARAM_TPOT_P99_S:
    return num(sc->slo_tpot_p99_s);
  case KVSIM_PARAM_E2E_P99_S:
    return num(sc->slo_e2e_p99_s);
  case KVSIM_PARAM_SAMPLE_INTERVAL_S:
    return num(sc->sample_interval_s);
  case KVSIM_PARAM_MAX_TIME_S:
    return num(sc->max_time_s);
  case KVSIM_PARAM_MAX_PROMPT_TOKENS:
    return num((double)sc->admission.max_prompt_tokens);
  case KVSIM_PARAM_MAX_OUTPUT_TOKENS:
    return num((double)sc->admission.max_output_tokens);
  case KVSIM_PARAM_MAX_QUEUE_LENGTH:
    return num((double)sc->admission.max_queue_length);
  case KVSIM_PARAM_MAX_WAIT_S:
    return num(sc->admission.max_wait_s);
  case KVSIM_PARAM_STEP_TIME_SCALE:
    return num(sc->step_time_scale);
  case KVSIM_PARAM_PREFILL_TIME_SCALE:
    return num(sc->prefill_time_scale);
  case KVSIM_PARAM_DISAGG_FLOW:
    return str(kvsim_disagg_flow_name(sc->disagg.flow));
  case KVSIM_PARAM_DISAGG_TRANSFER:
    return sc->disagg.unit == KVSIM_DISAGG_UNIT_PROFILE
               ? NULL
               : str(kvsim_disagg_unit_name(sc->disagg.unit));
  case KVSIM_PARAM_DISAGG_LINK_KIND:
    return str(kvsim_xfer_link_name(sc->disagg.link));
  case KVSIM_PARAM_DISAGG_LINK_BANDWIDTH_GBPS:
    return num(sc->disagg.link_GBps);
  case KVSIM_PARAM_DISAGG_LINK_LATENCY_US:
    /* Seconds back to us is off by an ulp (15 -> 14.999999999999998);
     * cJSON prints the shortest form that reads back within its epsilon
     * (cJSON.c print_number), which is the value given: checked for
     * 0.1 .. 9999.9 us in steps of 0.1. */
    return num(sc->disagg.link_latency_s * 1e6);
  case KVSIM_PARAM_DISAGG_PREFILL_REPLICAS:
    return num(sc->disagg.replicas[KVSIM_SIDE_PREFILL]);
  case KVSIM_PARAM_DISAGG_DECODE_REPLICAS:
    return num(sc->disagg.replicas[KVSIM_SIDE_DECODE]);
  default:
    break;
  }
  const kvsim_param_t *p = kvsim_param_get(id);
  if (strncmp(p->key, "engine.", 7))
    return NULL;
  /* A profile's own option is the profile's to print (sched/). */
  if (p->flags & KVSIM_PARAM_PROFILE_OPTION) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(pr->opts, kvsim_param_leaf(p));
    return v ? cJSON_Duplicate(v, 1) : NULL;
  }
  return engine_value(sc, id);
}

/* The value of a key outside the registry the scenario holds typed: the
 * workload as its room prints it given, the GPU's perf keys of the perf
 * section as the GPU holds them overridden; NULL otherwise (the tree's is
 * printed). */
static cJSON *unregistered_value(const printer_t *pr, const char *key) {
  const kvsim_gpu_perf_t *g = &pr->sc->gpu.perf;
  if (strncmp(key, "perf.", 5))
    return NULL;
  for (int i = 0; kvsim__perf_gpu_keys[i]; i++) {
    const char *k = kvsim__perf_gpu_keys[i];
    if (strcmp(key + 5, k) || !(pr->sc->perf_given >> i & 1u))
      continue;
    if (!strcmp(k, "kernels"))
      return str(g->kernels);
    if (!strcmp(k, "collectives"))
      return str(g->collectives);
    if (!strcmp(k, "status"))
      return str(kvsim_cal_status_name(g->status));
    if (!strcmp(k, "source"))
      return str(g->source);
    return num(!strcmp(k, "host_us") ? g->host_us : g->host_per_seq_us);
  }
  return NULL;
}

/* The next part of `key` after the object path `prefix` ("" at the top):
 * "engine" for ("", "engine.block_size"), "block_size" for ("engine",
 * ...); false when key is not below prefix. */
static bool child_of(const char *prefix, const char *key, char *part, size_t cap) {
  size_t n = strlen(prefix);
  if (n) {
    if (strncmp(key, prefix, n) || key[n] != '.')
      return false;
    key += n + 1;
  }
  const char *dot = strchr(key, '.');
  size_t l = dot ? (size_t)(dot - key) : strlen(key);
  if (l >= cap)
    return false;
  memcpy(part, key, l);
  part[l] = '\0';
  return true;
}

static bool given(const cJSON *v) { return v && !cJSON_IsNull(v); }

static int print_tree(const printer_t *pr, const cJSON *tree, const char *path, cJSON *out);

/* The disaggregation block: its registry rows those the given marks
 * (given.c) name, in the registry's order, printed from their typed fields
 * (flow, transfer, the link's, the sides' replicas); the sides' other keys
 * are not typed yet: an object's children not in the registry (a side's
 * engine keys) come from the tree, in the order given. */
static int print_tree_child(const printer_t *pr, const cJSON *v, const char *path, const char *part,
                            cJSON *out) {
  char key[512];
  snprintf(key, sizeof key, "%s%s%s", path, path[0] ? "." : "", part);
  const kvsim_param_t *p = kvsim_param_by_key(key);
  cJSON *item = p ? typed_value(pr, p->id) : NULL;
  if (!item && !v)
    return KVSIM_OK; /* a row no typed field holds, not in the tree */
  if (!item && cJSON_IsObject(v)) {
    item = cJSON_CreateObject();
    if (item && print_tree(pr, v, key, item) < 0) {
      cJSON_Delete(item);
      return KVSIM_ENOMEM;
    }
  } else if (!item) {
    item = cJSON_Duplicate(v, 1);
  }
  if (!item)
    return KVSIM_ENOMEM;
  cJSON_AddItemToObject(out, part, item);
  return KVSIM_OK;
}

static int print_tree(const printer_t *pr, const cJSON *tree, const char *path, cJSON *out) {
  for (int id = 1; id < KVSIM_PARAM_COUNT; id++) {
    char part[128];
    if (!child_of(path, kvsim_param_get(id)->key, part, sizeof part))
      continue;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(tree, part);
    if (cJSON_GetObjectItemCaseSensitive(out, part) || !kvsim__scenario_row_given(pr->sc, id))
      continue;
    if (print_tree_child(pr, v, path, part, out) < 0)
      return KVSIM_ENOMEM;
  }
  for (const cJSON *v = tree ? tree->child : NULL; v; v = v->next) {
    char key[512];
    snprintf(key, sizeof key, "%s%s%s", path, path[0] ? "." : "", v->string);
    if (given(v) && !kvsim_param_by_key(key) && !cJSON_GetObjectItemCaseSensitive(out, v->string) &&
        print_tree_child(pr, v, path, v->string, out) < 0)
      return KVSIM_ENOMEM;
  }
  return KVSIM_OK;
}

/* A given row's value from its typed field: hardware.gpu_memory_gib as
 * given, an object row given without keys (engine.speculative {}) empty. */
static cJSON *row_value(const printer_t *pr, const kvsim_param_t *p) {
  if (p->id == KVSIM_PARAM_GPU_MEMORY_GIB)
    return num(pr->sc->gpu_memory_gib);
  cJSON *v = typed_value(pr, p->id);
  return v || p->type != KVSIM_PARAM_OBJECT ? v : cJSON_CreateObject();
}

/* The perf section's GPU keys, in the order given, after its rows. */
static int print_perf_keys(const printer_t *pr, cJSON *out) {
  for (int i = 0; i < pr->sc->nperf_order; i++) {
    const char *k = kvsim__perf_gpu_keys[pr->sc->perf_order[i]];
    char key[64];
    snprintf(key, sizeof key, "perf.%s", k);
    cJSON *v = unregistered_value(pr, key);
    if (!v)
      return KVSIM_ENOMEM;
    cJSON_AddItemToObject(out, k, v);
  }
  return KVSIM_OK;
}

static int print_section(const printer_t *pr, const char *name, cJSON *out);

/* The rows given directly below the object `path` ("" at the top, or a
 * section), in the registry's order; a section below the top printed in
 * its turn when given. */
static int print_rows(const printer_t *pr, const char *path, cJSON *out) {
  for (int id = 1; id < KVSIM_PARAM_COUNT; id++) {
    const kvsim_param_t *p = kvsim_param_get(id);
    char part[128];
    if (!child_of(path, p->key, part, sizeof part) || cJSON_GetObjectItemCaseSensitive(out, part))
      continue;
    cJSON *item = NULL;
    int s = path[0] ? -1 : kvsim__scenario_section(part);
    if (s >= 0) {
      if (!(pr->sc->given_sections >> s & 1u))
        continue;
      if (print_section(pr, part, out) < 0)
        return KVSIM_ENOMEM;
      continue;
    }
    if (!kvsim__scenario_row_given(pr->sc, id))
      continue;
    if (!(item = row_value(pr, p)))
      return KVSIM_ENOMEM;
    cJSON_AddItemToObject(out, part, item);
  }
  return KVSIM_OK;
}

/* A section given: the workload by its room, the disaggregation block
 * walking the tree for its sides' engine keys (not typed yet), the others
 * row by row. */
static int print_section(const printer_t *pr, const char *name, cJSON *out) {
  cJSON *item = NULL;
  if (!strcmp(name, "workload")) {
    item = pr->sc->workload ? kvsim_workload_given_json(pr->sc->workload) : cJSON_CreateObject();
  } else if ((item = cJSON_CreateObject())) {
    int rc =
        !strcmp(name, "disaggregation")
            ? print_tree(pr, cJSON_GetObjectItemCaseSensitive(pr->sc->resolved, name), name, item)
            : print_rows(pr, name, item);
    if (rc == KVSIM_OK && !strcmp(name, "perf"))
      rc = print_perf_keys(pr, item);
    if (rc < 0) {
      cJSON_Delete(item);
      item = NULL;
    }
  }
  if (!item)
    return KVSIM_ENOMEM;
  cJSON_AddItemToObject(out, name, item);
  return KVSIM_OK;
}

cJSON *kvsim_scenario_config_json(const kvsim_scenario_t *sc) {
  printer_t pr = {sc, cJSON_CreateObject()};
  cJSON *out = cJSON_CreateObject();
  if (!out || !pr.opts ||
      (sc->sched_ops &&
       kvsim_sched_print_opts(sc->sched_ops, &sc->sched.opts, &sc->plan, pr.opts) < 0)) {
    cJSON_Delete(out);
    cJSON_Delete(pr.opts);
    return NULL;
  }
  /* Name and seed always (the name a file's stem may have given; the seed
   * the default), the description when there is one. */
  if (!cJSON_AddStringToObject(out, "name", sc->name) ||
      (sc->description && !cJSON_AddStringToObject(out, "description", sc->description)) ||
      !cJSON_AddNumberToObject(out, "seed", (double)sc->seed) || print_rows(&pr, "", out) < 0) {
    cJSON_Delete(out);
    out = NULL;
  }
  cJSON_Delete(pr.opts);
  return out;
}
