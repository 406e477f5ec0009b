/* summary.json's config (config_json.c): the typed values of the engine
 * section's shared keys, from the plan's parameters and the scheduler's
 * settings the scenario holds. Split from config_json.c, which walks the
 * registry and prints the other sections. */
#include <stdio.h>
#include <string.h>

#include "engine/scenario_keys.h"
#include "kvsim/params.h"
#include "kvsim/scenario.h"
#include "kvsim/spec.h"

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
 * when the row has no typed field here (or was not given: a chunked
 * prefill left to the engine, no vllm_version) or out of memory. */
cJSON *kvsim__config_engine_value(const kvsim_scenario_t *sc, int id) {
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
