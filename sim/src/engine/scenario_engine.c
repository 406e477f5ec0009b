/* The scenario's "engine" section -> the plan's parameters and the
 * scheduler's settings of kvsim_scenario_t (the profile's own options are
 * the profile's to parse: kvsim_sched_parse_opts). Split from scenario.c,
 * which parses the other sections and drives the whole. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/params_json.h"
#include "core/util.h"
#include "engine/scenario_keys.h"
#include "kvsim/scenario.h"
#include "kvsim/spec.h"

/* engine.max_model_len: a number, or a string as vLLM's --max-model-len
 * takes it ("32k" = 32,000, "32K" = 32,768: human_readable_int). */
static int max_model_len(const cJSON *o, int64_t *out, const char *w, kvsim_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "max_model_len");
  if (!cJSON_IsString(v))
    return kvsim__json_param_int(o, KVSIM_PARAM_MAX_MODEL_LEN, out, w, err);
  const kvsim_param_t *p = kvsim_param_get(KVSIM_PARAM_MAX_MODEL_LEN);
  char what[600];
  snprintf(what, sizeof what, "%s.max_model_len", w);
  int rc = kvsim__parse_human_int(v->valuestring, out, what, err);
  if (rc < 0)
    return rc;
  if (*out < p->min)
    return kvsim_err_set_param(err, KVSIM_EINVAL, p->id, what, "%lld must be >= %lld%s",
                               (long long)*out, (long long)p->min, kvsim_param_note(p));
  rc = kvsim_param_check_int(p->id, *out, what, err);
  return rc < 0 ? rc : 1;
}

/* vLLM's LoRA keys (--enable-lora ...; vllm/config/lora.py): the plan
 * checks the rank and the slot counts against vLLM's rules, named by
 * flag and key; here a given count must be >= 1 (0 is the default). */
static int parse_lora(const cJSON *o, kvsim_plan_lora_params_t *l, const char *w, kvsim_err *err) {
  int64_t loras = 0, rank = 0, cpu = 0;
  int rc;
  if ((rc = kvsim__json_bool(o, "enable_lora", &l->enable, w, err)) < 0 ||
      (rc = kvsim__json_bool(o, "fully_sharded_loras", &l->fully_sharded, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_MAX_LORAS, &loras, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_MAX_LORA_RANK, &rank, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_MAX_CPU_LORAS, &cpu, w, err)) < 0)
    return rc;
  l->max_loras = (int)loras;
  l->max_lora_rank = (int)rank;
  l->max_cpu_loras = (int)cpu;
  return KVSIM_OK;
}

/* engine.speculative: vLLM's --speculative-config object (kvsim/spec.h;
 * SGLang's EAGLE reads method and model only)
 * and kvsim's acceptance_rate, a number or a list of per-position rates,
 * which a run needs (the plan does not). */
static int parse_spec(kvsim_scenario_t *sc, const cJSON *engine, const char *w, kvsim_err *err) {
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(engine, "speculative");
  if (!o || cJSON_IsNull(o))
    return KVSIM_OK;
  char where[600];
  snprintf(where, sizeof where, "%s%sspeculative", w, kvsim__json_sep(w));
  static const char *const extra[] = {"acceptance_rate", NULL};
  /* SGLang's EAGLE takes the same object without vLLM's
   * num_speculative_tokens (its tree is the profile's own keys). */
  const kvsim_sched_ops_t *ops = kvsim_sched_find(sc->profile);
  int rc = ops && ops->plan_engine == KVSIM_PLAN_SGLANG
               ? kvsim_spec_parse_sglang(o, extra, &sc->plan.spec, where, err)
               : kvsim_spec_parse_object(o, extra, &sc->plan.spec, where, err);
  if (rc < 0)
    return rc;
  char aw[640];
  snprintf(aw, sizeof aw, "%s.acceptance_rate", where);
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "acceptance_rate");
  for (int i = 0; kvsim__spec_keys[i]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, kvsim__spec_keys[i]);
    if (v && !cJSON_IsNull(v))
      sc->spec_given |= 1u << i;
  }
  sc->spec_rates_list = cJSON_IsArray(a);
  if (cJSON_IsNumber(a)) {
    sc->spec_rates[0] = a->valuedouble;
    sc->spec_nrates = 1;
  } else if (cJSON_IsArray(a) && cJSON_GetArraySize(a) >= 1 &&
             cJSON_GetArraySize(a) <= KVSIM_SPEC_MAX_TOKENS) {
    int n = 0;
    for (const cJSON *c = a->child; c; c = c->next) {
      if (!cJSON_IsNumber(c))
        return kvsim_err_set(err, KVSIM_EINVAL, "%s[%d]: expected a number", aw, n);
      sc->spec_rates[n++] = c->valuedouble;
    }
    sc->spec_nrates = n;
  } else {
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %s; give one rate in [0, 1] or a list of 1 to %d per-position rates",
                         aw,
                         a ? "expected a number or a list of numbers" : "missing (a run needs it)",
                         KVSIM_SPEC_MAX_TOKENS);
  }
  /* Checked against k here when k is given; MTP's default k when the plan
   * resolves it (resolve.c). */
  kvsim_spec_accept_t chk;
  if (sc->plan.spec.num_speculative_tokens &&
      (rc = kvsim_spec_accept_set(&chk, sc->plan.spec.num_speculative_tokens, sc->spec_rates,
                                  sc->spec_nrates, aw, err)) < 0)
    return rc;
  return KVSIM_OK;
}

int kvsim__scenario_parse_engine(kvsim_scenario_t *sc, const cJSON *o, const char *w,
                                 kvsim_err *err) {
  int rc;
  if ((rc = kvsim__scenario_check_keys(o, "engine", w, err)) < 0)
    return rc;
  if ((rc = kvsim__json_str(o, "profile", sc->profile, sizeof sc->profile, w, err)) < 0)
    return rc;
  kvsim_plan_params_t *p = &sc->plan;
  int64_t mml = 0, bs = 0, seqs = 0, mbt = 0, blocks = 0, kvb = 0, grp = 64, res = 128, store = 0;
  double util = p->gpu_memory_utilization;
  /* Each key is held to the registry's range (kvsim/params.h), the one
   * the plan checks too. The plan takes 0 for "the engine's default", so a
   * 0 written in the scenario (or by --set) would silently mean the
   * default: 256 sequences, not none; the profiled pool, not an empty one.
   * None of these is a value vLLM would take, so a given one must be >=
   * 1; the key left out (or null) keeps the default. */
  if ((rc = kvsim__json_param_num(o, KVSIM_PARAM_GPU_MEMORY_UTILIZATION, &util, w, err)) < 0 ||
      (rc = max_model_len(o, &mml, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_BLOCK_SIZE, &bs, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_MAX_NUM_SEQS, &seqs, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_MAX_NUM_BATCHED_TOKENS, &mbt, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_NUM_GPU_BLOCKS_OVERRIDE, &blocks, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_KV_CACHE_MEMORY_BYTES, &kvb, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_KV_QUANT_GROUP, &grp, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_KV_RESIDUAL_TOKENS, &res, w, err)) < 0 ||
      (rc = kvsim__json_param_int(o, KVSIM_PARAM_OFFLOAD_STORE_THRESHOLD, &store, w, err)) < 0)
    return rc;
  p->gpu_memory_utilization = util;
  p->max_model_len = mml;
  p->block_size = (int)bs;
  p->max_num_seqs = seqs;
  p->max_num_batched_tokens = mbt;
  p->num_gpu_blocks_override = blocks;
  p->kv_cache_memory_bytes = kvb;
  p->kv_quant_group = (int)grp;
  p->kv_residual_tokens = (int)res;
  sc->offload.store_threshold = store;

  bool b;
  if ((rc = kvsim__json_bool(o, "enable_prefix_caching", &b, w, err)) < 0)
    return rc;
  if (rc > 0)
    sc->sched.enable_prefix_caching = b;
  int pc_given = rc;
  if ((rc = kvsim__json_bool(o, "enable_chunked_prefill", &b, w, err)) < 0)
    return rc;
  p->enable_chunked_prefill = rc > 0 ? b : -1;
  if ((rc = parse_lora(o, &p->lora, w, err)) < 0 || (rc = parse_spec(sc, o, w, err)) < 0 ||
      (rc = kvsim__json_bool(o, "enforce_eager", &p->enforce_eager, w, err)) < 0 ||
      (rc = kvsim__json_bool(o, "estimate_cudagraphs", &p->estimate_cudagraphs, w, err)) < 0 ||
      (rc = kvsim__json_bool(o, "disable_hybrid_kv_cache_manager",
                             &p->disable_hybrid_kv_cache_manager, w, err)) < 0 ||
      (rc = kvsim__json_bool(o, "transfer_overlap", &sc->offload.overlap, w, err)) < 0)
    return rc;

  char s[64] = "auto";
  if ((rc = kvsim__json_str(o, "kv_cache_dtype", s, sizeof s, w, err)) < 0)
    return rc;
  if (kvsim_kv_dtype_parse(s, &p->kv_dtype) < 0)
    return kvsim_err_set(
        err, KVSIM_EINVAL,
        "%s.kv_cache_dtype: '%s' (expected auto, bfloat16, float16, fp8, fp8_e4m3, "
        "fp8_e5m2, int8, int4)",
        w, s);
  strcpy(s, "auto");
  if ((rc = kvsim__json_str(o, "dtype", s, sizeof s, w, err)) < 0)
    return rc;
  if (rc > 0)
    snprintf(sc->dtype, sizeof sc->dtype, "%s", s);
  if (kvsim_model_set_dtype(&sc->model, s) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.dtype: '%s' (expected " KVSIM_MODEL_DTYPES ")", w,
                         s);
  if ((rc = kvsim__json_str(o, "quantization", p->quantization, sizeof p->quantization, w, err)) <
      0)
    return rc;
  /* "" is what the plan takes for the model's own quantization: written,
   * it is a slip, not a choice (null or no key is the model's own). */
  if (rc > 0 && !p->quantization[0])
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.quantization: empty (leave the key out for the model's own, or give "
                         "none, fp8, int8, awq, gptq, int4, mxfp4)",
                         w);
  /* The release whose sizing rules apply; checked against the profile's
   * engine in kvsim_scenario_parse once the profile is known. */
  if ((rc = kvsim__json_str(o, "vllm_version", s, sizeof s, w, err)) < 0)
    return rc;
  char wv[160];
  snprintf(wv, sizeof wv, "%s.vllm_version", w);
  if (rc > 0 && (rc = kvsim_plan_parse_version(s, wv, &p->vllm_version, err)) < 0)
    return rc;

  strcpy(s, "fcfs");
  if ((rc = kvsim__json_str(o, "scheduling_policy", s, sizeof s, w, err)) < 0)
    return rc;
  if (!strcmp(s, "fcfs"))
    sc->sched.policy = KVSIM_POLICY_FCFS;
  else if (!strcmp(s, "priority"))
    sc->sched.policy = KVSIM_POLICY_PRIORITY;
  else
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.scheduling_policy: '%s' (expected fcfs or priority)", w, s);
  strcpy(s, "recompute");
  if ((rc = kvsim__json_str(o, "preemption_mode", s, sizeof s, w, err)) < 0)
    return rc;
  if (!strcmp(s, "recompute"))
    sc->sched.preemption_mode = KVSIM_PREEMPT_RECOMPUTE;
  else if (!strcmp(s, "swap"))
    sc->sched.preemption_mode = KVSIM_PREEMPT_SWAP;
  else
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.preemption_mode: '%s' (expected recompute or swap)",
                         w, s);

  /* Sizes in GiB, each held to the registry's range; quant_step_factor
   * is a multiplier of the step time like perf.step_time_scale. */
  struct {
    int id;
    double *dst;
  } nums[] = {{KVSIM_PARAM_WEIGHTS_GIB, &p->weights_gib},
              {KVSIM_PARAM_ACTIVATION_GIB, &p->activation_gib},
              {KVSIM_PARAM_NON_TORCH_GIB, &p->non_torch_gib},
              {KVSIM_PARAM_CUDA_GRAPH_GIB, &p->cuda_graph_gib},
              {KVSIM_PARAM_SWAP_SPACE, &sc->swap_space_gib},
              {KVSIM_PARAM_KV_OFFLOADING_SIZE, &sc->offload.cpu_gib},
              {KVSIM_PARAM_QUANT_STEP_FACTOR, &sc->quant_step_factor}};
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
    if ((rc = kvsim__json_param_num(o, nums[i].id, nums[i].dst, w, err)) < 0)
      return rc;
  sc->overlap_given = kvsim__json_given(o, "transfer_overlap");
  return pc_given;
}
