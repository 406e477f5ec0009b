/* The keys of each scenario section, and the check that names a typo by
 * its path, with a suggestion from any section (scenario.c, override.c). */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "engine/scenario_keys.h"
#include "kvsim/sched.h"

/* The keys of each section: a typo is an error naming the path. */
static const char *const top_keys[] = {"name",     "description", "seed",     "model",
                                       "hardware", "engine",      "workload", "slo",
                                       "output",   "admission",   "perf",     "disaggregation",
                                       NULL};
static const char *const hardware_keys[] = {
    "gpu",      "gpu_memory_gib", "tensor_parallel_size", "pipeline_parallel_size",
    "replicas", "router",         "router_imbalance",     "expert_parallel_size",
    NULL};
/* The engine keys every profile shares; each profile adds its own
 * options (kvsim_sched_option_keys), see engine_keys(). */
static const char *const engine_shared_keys[] = {"profile",
                                                 "gpu_memory_utilization",
                                                 "max_model_len",
                                                 "block_size",
                                                 "max_num_seqs",
                                                 "max_num_batched_tokens",
                                                 "enable_prefix_caching",
                                                 "enable_chunked_prefill",
                                                 "kv_cache_dtype",
                                                 "kv_quant_group",
                                                 "kv_residual_tokens",
                                                 "dtype",
                                                 "quantization",
                                                 "num_gpu_blocks_override",
                                                 "kv_cache_memory_bytes",
                                                 "enforce_eager",
                                                 "estimate_cudagraphs",
                                                 "disable_hybrid_kv_cache_manager",
                                                 "scheduling_policy",
                                                 "preemption_mode",
                                                 "swap_space",
                                                 "kv_offloading_size",
                                                 "offload_store_threshold",
                                                 "transfer_overlap",
                                                 "quant_step_factor",
                                                 "weights_gib",
                                                 "activation_gib",
                                                 "non_torch_gib",
                                                 "cuda_graph_gib",
                                                 "vllm_version",
                                                 "enable_lora",
                                                 "max_loras",
                                                 "max_lora_rank",
                                                 "max_cpu_loras",
                                                 "fully_sharded_loras",
                                                 "speculative",
                                                 NULL};

/* The shared keys followed by every profile's options, NULL-terminated;
 * built once (the registry is fixed at compile time). */
static const char *const *engine_keys(void) {
  static const char *keys[128];
  if (!keys[0]) {
    size_t n = 0;
    while (engine_shared_keys[n]) {
      keys[n] = engine_shared_keys[n];
      n++;
    }
    keys[n] = NULL;
    /* The registry's options fit: a profile adding past 128 keys fails here loudly. */
    if (kvsim_sched_option_keys(keys, &n, sizeof keys / sizeof *keys) < 0)
      abort();
  }
  return keys;
}
static const char *const slo_keys[] = {"ttft_p99_s", "tpot_p99_s", "e2e_p99_s", NULL};
static const char *const output_keys[] = {"sample_interval_s", "max_time_s", NULL};
static const char *const admission_keys[] = {"max_prompt_tokens", "max_output_tokens",
                                             "max_queue_length", "max_wait_s", NULL};

/* The sections whose keys are known here, for cross-section suggestions
 * and kvsim__scenario_keys. */
typedef struct section_keys {
  const char *name;
  const char *const *keys;
} section_keys;

static const section_keys *sections(size_t *n) {
  static section_keys t[6];
  if (!t[0].keys) {
    t[0] = (section_keys){"", top_keys};
    t[1] = (section_keys){"hardware", hardware_keys};
    t[2] = (section_keys){"engine", engine_keys()};
    t[3] = (section_keys){"slo", slo_keys};
    t[4] = (section_keys){"output", output_keys};
    t[5] = (section_keys){"admission", admission_keys};
  }
  *n = sizeof t / sizeof *t;
  return t;
}

static bool in_list(const char *const *keys, const char *k) {
  for (; *keys; keys++)
    if (!strcmp(*keys, k))
      return true;
  return false;
}

/* kvsim__json_only_keys, and for a key that belongs to another section
 * (an engine key under hardware) or is a typo of one, "did you mean
 * `hardware.tensor_parallel_size`?". A near miss in the key's own section
 * keeps the usual suggestion. */
const char *kvsim__json_file_kind(const cJSON *root, const char **key) {
  static const struct {
    const char *key, *kind;
  } tells[] = {{"candidates", "study"}, {"target_rate", "study"}, {"grid", "sweep"},
               {"model", "scenario"},   {"hardware", "scenario"}, {"engine", "scenario"},
               {"workload", "scenario"}};
  for (size_t i = 0; cJSON_IsObject(root) && i < sizeof tells / sizeof *tells; i++)
    if (cJSON_GetObjectItemCaseSensitive(root, tells[i].key)) {
      if (key)
        *key = tells[i].key;
      return tells[i].kind;
    }
  return NULL;
}

int kvsim__scenario_check_keys(const cJSON *o, const char *self, const char *w, kvsim_err *err) {
  const char *const *allowed = kvsim__scenario_keys(self);
  if (!cJSON_IsObject(o))
    return kvsim__json_only_keys(o, allowed, w, err);
  const char *tell = NULL, *kind = *self ? NULL : kvsim__json_file_kind(o, &tell);
  if (kind && strcmp(kind, "scenario"))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: this is a %s file, not a scenario (it has `%s`): run it with "
                         "kvsim %s",
                         w, kind, tell, !strcmp(kind, "study") ? "compare" : "sweep");
  size_t n;
  const section_keys *t = sections(&n);
  for (const cJSON *c = o->child; c; c = c->next) {
    if (in_list(allowed, c->string))
      continue;
    const char *sec = NULL, *key = NULL;
    int best = 1 << 30;
    for (size_t i = 0; i < n; i++) {
      if (!strcmp(t[i].name, self))
        continue;
      for (const char *const *k = t[i].keys; *k; k++) {
        int d = kvsim__edit_distance(*k, c->string);
        if (d < best) {
          best = d, sec = t[i].name, key = *k;
        }
      }
    }
    int own = 1 << 30;
    for (const char *const *k = allowed; *k; k++) {
      int d = kvsim__edit_distance(*k, c->string);
      own = d < own ? d : own;
    }
    /* Exact elsewhere wins; then a near miss at home; then one elsewhere. */
    if (key && (best == 0 || (own > 3 && best <= 2)))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: unknown key (did you mean `%s%s%s`?)", w,
                           *self ? "." : ": ", c->string, sec, *sec ? "." : "", key);
    break;
  }
  if (*self)
    return kvsim__json_only_keys(o, allowed, w, err);
  /* Top level: "FILE: sed: unknown key", not "FILE.sed" (scenario.c). */
  int rc = kvsim__json_only_keys(o, allowed, "", err);
  if (rc < 0)
    kvsim_err_prefix(err, "%s", w);
  return rc;
}

const char *const *kvsim__scenario_keys(const char *section) {
  size_t n;
  const section_keys *t = sections(&n);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(section, t[i].name))
      return t[i].keys;
  return NULL;
}

const char *kvsim__scenario_section_of(const char *key) {
  size_t n;
  const section_keys *t = sections(&n);
  for (size_t i = 1; i < n; i++)
    if (in_list(t[i].keys, key))
      return t[i].name;
  return NULL;
}
