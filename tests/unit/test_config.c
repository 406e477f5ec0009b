/* summary.json's "config" (engine/config_json.c): the keys given, in the
 * registry's order, values in canonical form from the typed fields, name
 * and seed always; parsed again it prints the same and configures the
 * same run. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/scenario.h"

#define WORKLOAD                                                                                   \
  "\"workload\": { \"synthetic\": { \"requests\": 10, \"arrival\": { \"process\": \"poisson\", "   \
  "\"rate\": 5 }, \"prompt_tokens\": 100, \"output_tokens\": 10 } }"

static void parse(const char *json, const char *const *sets, int nsets, kvsim_scenario_t *sc) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(json, "dir/scen.json", ".", sets, nsets, sc, &err), KVSIM_OK,
               "parse: %s", err.msg);
}

/* The config printed unformatted (caller frees). */
static char *config_text(const kvsim_scenario_t *sc) {
  cJSON *c = kvsim_scenario_config_json(sc);
  cr_assert(c, "the config prints");
  char *s = cJSON_PrintUnformatted(c);
  cJSON_Delete(c);
  return s;
}

Test(config, keys_in_the_registrys_order_and_values_in_canonical_form) {
  /* Sections and keys out of order; max_model_len as vLLM's "8k". */
  const char *json =
      "{ " WORKLOAD ", \"engine\": { \"vllm_version\": \"0.11\", \"max_num_seqs\": 8, "
      "\"max_model_len\": \"8k\", \"profile\": \"vllm-v1\" }, "
      "\"hardware\": { \"replicas\": 2, \"gpu\": \"h100-sxm\" }, "
      "\"slo\": null, \"model\": \"llama-3.1-8b\" }";
  kvsim_scenario_t sc;
  parse(json, NULL, 0, &sc);
  char *s = config_text(&sc);
  const char *want =
      "{\"name\":\"scen\",\"seed\":1,\"model\":\"llama-3.1-8b\","
      "\"hardware\":{\"gpu\":\"h100-sxm\",\"replicas\":2},"
      "\"engine\":{\"profile\":\"vllm-v1\",\"max_model_len\":8000,\"max_num_seqs\":8,"
      "\"vllm_version\":\"0.11.0\"},"
      "\"workload\":{\"synthetic\":{\"requests\":10,\"arrival\":{\"process\":\"poisson\",\"rate\":"
      "5},"
      "\"prompt_tokens\":100,\"output_tokens\":10}}}";
  cr_assert_str_eq(s, want, "the config:\n%s\nexpected\n%s", s, want);
  free(s);
  kvsim_scenario_fini(&sc);
}

Test(config, a_profiles_own_options_print_from_its_typed_options) {
  /* HF Transformers' cache class is its profile's own key (sched/), whose
   * row follows the other options' (where it printed before it had one). */
  const char *json =
      "{ \"model\": \"llama-3.1-8b\", \"engine\": { \"cache\": \"static\", "
      "\"max_cache_len\": 1024, \"profile\": \"hf-transformers\", \"batch\": 4 }, " WORKLOAD " }";
  kvsim_scenario_t sc;
  parse(json, NULL, 0, &sc);
  char *s = config_text(&sc);
  cr_assert(strstr(s,
                   "\"engine\":{\"profile\":\"hf-transformers\",\"batch\":4,\"max_cache_len\":1024,"
                   "\"cache\":\"static\"}"),
            "registry keys first, then the profile's own: %s", s);
  free(s);
  kvsim_scenario_fini(&sc);
}

Test(config, a_typed_override_is_in_the_config) {
  const char *json = "{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }";
  kvsim_scenario_t sc;
  parse(json, NULL, 0, &sc);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_set_max_num_seqs(&sc, 12, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_step_time_scale(&sc, 1.5, &err), KVSIM_OK, "%s", err.msg);
  char *s = config_text(&sc);
  cr_assert(strstr(s, "\"engine\":{\"max_num_seqs\":12}"), "the override's key: %s", s);
  cr_assert(strstr(s, "\"perf\":{\"step_time_scale\":1.5}"), "the edge's scale: %s", s);
  /* perf comes after engine, before the workload (the registry's order). */
  cr_assert(strstr(s, "\"engine\"") < strstr(s, "\"perf\"") &&
                strstr(s, "\"perf\"") < strstr(s, "\"workload\""),
            "sections in the registry's order: %s", s);
  free(s);
  kvsim_scenario_fini(&sc);
}

/* Parsed again, the config prints itself and sets the same typed fields. */
Test(config, the_config_parsed_again_is_the_same_configuration) {
  const char *sets[] = {"engine.max_model_len=\"4K\"", "engine.kv_cache_dtype=fp8",
                        "hardware.router=least_kv", "admission.max_wait_s=30"};
  const char *json =
      "{ \"name\": \"rt\", \"seed\": 9, \"model\": \"llama-3.1-8b\", "
      "\"hardware\": { \"gpu\": \"a100-80g\", \"tensor_parallel_size\": 2 }, "
      "\"engine\": { \"enable_prefix_caching\": false, \"gpu_memory_utilization\": 0.8 }, "
      "\"slo\": { \"ttft_p99_s\": 2 }, " WORKLOAD " }";
  kvsim_scenario_t a, b;
  parse(json, sets, 4, &a);
  char *s = config_text(&a);
  cr_assert(strstr(s, "\"max_model_len\":4096"), "\"4K\" is 4096 tokens: %s", s);
  parse(s, NULL, 0, &b);
  char *t = config_text(&b);
  cr_assert_str_eq(t, s, "printed again the same:\n%s\n%s", t, s);
  cr_assert_str_eq(b.name, "rt", "the name");
  cr_assert_eq(b.seed, 9, "the seed");
  cr_assert_eq(memcmp(&a.plan, &b.plan, sizeof a.plan), 0, "the same plan parameters");
  cr_assert_eq(a.router, b.router, "the same router");
  cr_assert_eq(a.sched.enable_prefix_caching, b.sched.enable_prefix_caching, "prefix caching");
  cr_assert_eq(a.admission.max_wait_s, b.admission.max_wait_s, "admission");
  cr_assert_eq(a.slo_ttft_p99_s, b.slo_ttft_p99_s, "the SLO");
  free(s);
  free(t);
  kvsim_scenario_fini(&a);
  kvsim_scenario_fini(&b);
}

/* compare's feasibility probe sets the weights' method through the typed
 * setter (study/compare_feasible.c): the plan takes it, the config shows it. */
Test(config, set_quantization_is_typed_and_in_the_config) {
  const char *json = "{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }";
  kvsim_scenario_t sc;
  parse(json, NULL, 0, &sc);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_set_quantization(&sc, "", &err), KVSIM_EINVAL, "an empty method");
  cr_assert(strstr(err.msg, "engine.quantization"), "names the key: %s", err.msg);
  kvsim_resolved_t bf16, fp8;
  cr_assert_eq(kvsim_scenario_resolve(&sc, &bf16, &err), KVSIM_OK, "resolve: %s", err.msg);
  cr_assert_eq(kvsim_scenario_set_quantization(&sc, "fp8", &err), KVSIM_OK, "%s", err.msg);
  cr_assert_str_eq(sc.plan.quantization, "fp8", "the plan's parameter");
  cr_assert_eq(kvsim_scenario_resolve(&sc, &fp8, &err), KVSIM_OK, "resolve: %s", err.msg);
  cr_assert(fp8.plan.weights_bytes < bf16.plan.weights_bytes * 6 / 10,
            "FP8 weights are about half: %lld vs %lld", (long long)fp8.plan.weights_bytes,
            (long long)bf16.plan.weights_bytes);
  char *s = config_text(&sc);
  cr_assert(strstr(s, "\"engine\":{\"quantization\":\"fp8\"}"), "in the config: %s", s);
  free(s);
  kvsim_scenario_fini(&sc);
}

/* SGLang's share set by the typed override prints from the plan's
 * parameters; its other options from the profile's typed options, the
 * release canonical (TGI's below). */
Test(config, a_profiles_memory_share_set_by_override_is_in_the_config) {
  const char *json = "{ \"model\": \"llama-3.1-8b\", \"engine\": { \"profile\": \"sglang\", "
                     "\"schedule_policy\": \"lpm\" }, " WORKLOAD " }";
  kvsim_scenario_t sc;
  parse(json, NULL, 0, &sc);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_set_memory_fraction(&sc, 0.75, &err), KVSIM_OK, "%s", err.msg);
  char *s = config_text(&sc);
  cr_assert(strstr(s, "\"engine\":{\"profile\":\"sglang\",\"mem_fraction_static\":0.75,"
                      "\"schedule_policy\":\"lpm\"}"),
            "the share and the policy: %s", s);
  free(s);
  kvsim_scenario_fini(&sc);
  json = "{ \"model\": \"llama-3.1-8b\", \"engine\": { \"profile\": \"tgi\", \"tgi_version\": "
         "3.2 }, " WORKLOAD " }";
  parse(json, NULL, 0, &sc);
  s = config_text(&sc);
  cr_assert(strstr(s, "\"engine\":{\"profile\":\"tgi\",\"tgi_version\":\"3.2.0\"}"),
            "the release canonical: %s", s);
  free(s);
  kvsim_scenario_fini(&sc);
}

/* The description and engine.dtype print from the scenario's typed fields,
 * as given; a copy owns its own description. */
Test(config, description_and_dtype_print_as_given_from_typed_fields) {
  const char *json = "{ \"model\": \"llama-3.1-8b\", \"description\": \"two words\", \"engine\": "
                     "{ \"dtype\": \"auto\" }, " WORKLOAD " }";
  kvsim_scenario_t sc, copy;
  parse(json, NULL, 0, &sc);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_copy(&sc, &copy, &err), KVSIM_OK, "%s", err.msg);
  kvsim_scenario_fini(&sc);
  char *s = config_text(&copy);
  cr_assert(strstr(s, "\"name\":\"scen\",\"description\":\"two words\",\"seed\":1"),
            "the description: %s", s);
  cr_assert(strstr(s, "\"engine\":{\"dtype\":\"auto\"}"), "dtype as given, not the model's: %s", s);
  free(s);
  kvsim_scenario_fini(&copy);
  parse("{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }", NULL, 0, &sc);
  s = config_text(&sc);
  cr_assert(!strstr(s, "description") && !strstr(s, "dtype"), "neither given: %s", s);
  free(s);
  kvsim_scenario_fini(&sc);
}

/* engine.speculative prints its given keys from the typed fields in one
 * order (vLLM's keys, then acceptance_rate, as given: a list stays one),
 * whatever the file's order. */
Test(config, speculative_prints_from_typed_fields_in_canonical_order) {
  const char *json = "{ \"model\": \"llama-3.1-8b\", \"engine\": { \"speculative\": { "
                     "\"acceptance_rate\": [0.5, 0.25], \"prompt_lookup_max\": 4, \"method\": "
                     "\"ngram\", \"num_speculative_tokens\": 2, \"prompt_lookup_min\": null } }, "
                     "" WORKLOAD " }";
  kvsim_scenario_t sc;
  parse(json, NULL, 0, &sc);
  char *s = config_text(&sc);
  cr_assert(strstr(s, "\"speculative\":{\"method\":\"ngram\",\"num_speculative_tokens\":2,"
                      "\"prompt_lookup_max\":4,\"acceptance_rate\":[0.5,0.25]}"),
            "typed, in order, the null left out: %s", s);
  free(s);
  kvsim_scenario_fini(&sc);
}

/* perf's GPU keys print from the GPU's perf as the scenario overrode it
 * (the status by its name). */
Test(config, perf_gpu_keys_print_from_the_gpus_perf) {
  const char *json = "{ \"model\": \"llama-3.1-8b\", \"perf\": { \"host_us\": 250, \"status\": "
                     "\"spec-only\", \"step_time_scale\": 1.5 }, " WORKLOAD " }";
  kvsim_scenario_t sc;
  parse(json, NULL, 0, &sc);
  char *s = config_text(&sc);
  cr_assert(
      strstr(s, "\"perf\":{\"step_time_scale\":1.5,\"host_us\":250,\"status\":\"spec-only\"}"),
      "the registry's key, then the GPU's in the order given: %s", s);
  free(s);
  kvsim_scenario_fini(&sc);
}

/* Which keys were given is the scenario's record (the scenario keeps no
 * tree): an empty section, the GPU's perf keys in the order given,
 * hardware.gpu_memory_gib as given, a null key left out. */
Test(config, given_keys_come_from_the_scenarios_record) {
  const char *json =
      "{ \"model\": \"llama-3.1-8b\", \"slo\": {}, \"admission\": null, "
      "\"hardware\": { \"gpu_memory_gib\": 79.6, \"router\": null }, "
      "\"perf\": { \"source\": \"me\", \"step_time_scale\": 1.5, \"host_us\": 30 }, " WORKLOAD " }";
  kvsim_scenario_t sc;
  parse(json, NULL, 0, &sc);
  char *before = config_text(&sc);
  const char *want =
      "{\"name\":\"scen\",\"seed\":1,\"model\":\"llama-3.1-8b\","
      "\"hardware\":{\"gpu_memory_gib\":79.6},\"slo\":{},"
      "\"perf\":{\"step_time_scale\":1.5,\"source\":\"me\",\"host_us\":30},"
      "\"workload\":{\"synthetic\":{\"requests\":10,\"arrival\":{\"process\":\"poisson\",\"rate\":"
      "5},\"prompt_tokens\":100,\"output_tokens\":10}}}";
  cr_assert_str_eq(before, want);
  free(before);
  kvsim_scenario_fini(&sc);
}

/* A typed override of a key the file left out marks it given, in its
 * section's place in the registry's order. */
Test(config, a_typed_override_marks_its_key_given) {
  const char *json = "{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }";
  kvsim_scenario_t sc;
  parse(json, NULL, 0, &sc);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_set_step_time_scale(&sc, 2, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_max_num_seqs(&sc, 16, &err), KVSIM_OK, "%s", err.msg);
  char *s = config_text(&sc);
  cr_assert(strstr(s, "\"model\":\"llama-3.1-8b\",\"engine\":{\"max_num_seqs\":16},"
                      "\"perf\":{\"step_time_scale\":2},\"workload\":"),
            "%s", s);
  free(s);
  kvsim_scenario_fini(&sc);
}
