/* A disaggregated scenario's sides as typed scenarios (engine/sides.c):
 * parsed once with the scenario, reached by the typed overrides of the
 * keys they did not give themselves, checked again when built (an
 * override that leaves a side invalid is the error parsing the side with
 * it would be), copied with the scenario, and printed in summary.json's
 * config as given. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/params.h"
#include "kvsim/scenario.h"

/* The prefill side gives no TP, GPU or max_num_seqs of its own; the
 * decode side gives all three (its engine keys in this order). */
static const char *base =
    "{\"name\": \"d\", \"model\": \"llama-3.1-8b\", \"hardware\": {\"gpu\": \"h100-sxm\"},"
    " \"engine\": {\"max_model_len\": 4096, \"max_num_seqs\": 128},"
    " \"disaggregation\": {\"prefill\": {\"engine\": {\"num_gpu_blocks_override\": 800}},"
    "   \"decode\": {\"replicas\": 2, \"tensor_parallel_size\": 2, \"gpu\": \"h100-sxm\","
    "     \"engine\": {\"max_num_seqs\": 64, \"max_model_len\": \"4k\", \"block_size\": null}}},"
    " \"workload\": {\"synthetic\": {\"requests\": 20, \"arrival\": {\"process\": \"poisson\", \"rate\": 8},"
    "   \"prompt_tokens\": 500, \"output_tokens\": 50}}}";

/* Parsed as kvsim_scenario_load reads d.json (its errors name the file). */
static void parse(const char *set, kvsim_scenario_t *sc) {
  const char *sets[1] = {set};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(base, "d.json", ".", sets, set ? 1 : 0, sc, &err), KVSIM_OK,
               "parse: %s", err.msg);
  snprintf(sc->path, sizeof sc->path, "d.json");
}

static kvsim_scenario_t side(const kvsim_scenario_t *sc, kvsim_disagg_side s) {
  kvsim_scenario_t d;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_disagg_side(sc, s, &d, &err), KVSIM_OK, "side: %s", err.msg);
  return d;
}

static int64_t side_seqs(const kvsim_scenario_t *sc, kvsim_disagg_side s) {
  kvsim_scenario_t d = side(sc, s);
  const int64_t n = d.plan.max_num_seqs;
  kvsim_scenario_fini(&d);
  return n;
}

Test(disagg_sides, an_override_reaches_the_sides_that_did_not_give_its_key) {
  kvsim_scenario_t sc;
  parse("engine.max_num_seqs=32", &sc);
  cr_assert_eq(side_seqs(&sc, KVSIM_SIDE_PREFILL), 32, "--set reaches the prefill side");
  cr_assert_eq(side_seqs(&sc, KVSIM_SIDE_DECODE), 64, "not the decode side, which gave its own");
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_set_max_num_seqs(&sc, 16, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_tensor_parallel(&sc, 4, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_gpu(&sc, "a100-80g", &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_step_time_scale(&sc, 1.5, &err), KVSIM_OK, "%s", err.msg);
  kvsim_scenario_t p = side(&sc, KVSIM_SIDE_PREFILL), d = side(&sc, KVSIM_SIDE_DECODE);
  cr_assert_eq(p.plan.max_num_seqs, 16, "a typed override reaches the prefill side");
  cr_assert_eq(p.plan.tp, 4, "and its TP");
  cr_assert_str_eq(p.gpu.name, "a100-80g", "and its GPU");
  cr_assert_eq(p.plan.num_gpu_blocks_override, 800, "its own key kept");
  cr_assert_eq(d.plan.max_num_seqs, 64, "the decode side's own max_num_seqs kept");
  cr_assert_eq(d.plan.tp, 2, "its own TP");
  cr_assert_str_eq(d.gpu.name, "h100-sxm", "its own GPU");
  cr_assert_float_eq(d.step_time_scale, 1.5, 1e-12, "a key no side gives reaches both");
  cr_assert_eq(d.replicas, 2, "its instances");
  kvsim_scenario_fini(&p);
  kvsim_scenario_fini(&d);
  kvsim_scenario_fini(&sc);
}

/* An override that leaves a side invalid: the error is the one parsing
 * the side with the key gives, when the side is built. */
Test(disagg_sides, an_override_that_breaks_a_side_is_the_parsers_error) {
  kvsim_scenario_t sc, tmp;
  kvsim_err want = {0}, err = {0};
  const char *sets[] = {"disaggregation.prefill.engine.max_model_len=200000"};
  cr_assert_lt(kvsim_scenario_parse(base, "d.json", ".", sets, 1, &tmp, &want), 0, "refused");
  cr_assert(strstr(want.msg, "d.json: disaggregation.prefill (as a scenario): engine.max_model_len"),
            "%s", want.msg);
  parse(NULL, &sc);
  cr_assert_eq(kvsim_scenario_set_max_model_len(&sc, 200000, &err), KVSIM_OK, "the key's own range");
  cr_assert_lt(kvsim_scenario_disagg_side(&sc, KVSIM_SIDE_PREFILL, &tmp, &err), 0, "the side is refused");
  cr_assert_str_eq(err.msg, want.msg, "as parsing it with the key: %s, not %s", want.msg, err.msg);
  cr_assert_eq(kvsim_scenario_gpus_per_replica(&sc), 0, "a side that cannot be built has no GPUs");
  kvsim_scenario_fini(&sc);
  /* A share the side's profile does not read: refused as parsed. */
  parse("disaggregation.decode.engine.profile=sglang", &sc);
  cr_assert_eq(kvsim_scenario_set_memory_fraction(&sc, 0.8, &err), KVSIM_OK, "vLLM's own key");
  cr_assert_eq(kvsim_scenario_disagg_side(&sc, KVSIM_SIDE_PREFILL, &tmp, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_float_eq(tmp.plan.gpu_memory_utilization, 0.8, 1e-12, "the vllm-v1 side takes it");
  kvsim_scenario_fini(&tmp);
  cr_assert_lt(kvsim_scenario_disagg_side(&sc, KVSIM_SIDE_DECODE, &tmp, &err), 0, "the sglang side not");
  cr_assert_str_eq(err.msg,
                   "d.json: disaggregation.decode (as a scenario): engine.gpu_memory_utilization: "
                   "not read by the sglang profile (engine.profile); its own is engine.mem_fraction_static",
                   "as parsing it with the key");
  kvsim_scenario_fini(&sc);
  /* n units of a side past the registry's replicas. */
  parse(NULL, &sc);
  cr_assert_eq(kvsim_scenario_set_replicas(&sc, KVSIM_MAX_REPLICAS, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_lt(kvsim_scenario_disagg_side(&sc, KVSIM_SIDE_DECODE, &tmp, &err), 0, "2 x 4096 instances");
  cr_assert(strstr(err.msg, "(as a scenario): hardware.replicas: 8192 is out of range [1, 4096]"), "%s",
            err.msg);
  kvsim_scenario_fini(&sc);
}

/* A copy owns its sides: overriding it leaves the original's as they
 * were, and it outlives the original. */
Test(disagg_sides, a_copys_sides_are_its_own) {
  kvsim_scenario_t sc, copy;
  kvsim_err err = {0};
  parse(NULL, &sc);
  cr_assert_eq(kvsim_scenario_copy(&sc, &copy, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_max_num_seqs(&copy, 8, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(side_seqs(&copy, KVSIM_SIDE_PREFILL), 8, "the copy's side overridden");
  cr_assert_eq(side_seqs(&sc, KVSIM_SIDE_PREFILL), 128, "the original's side as parsed");
  cr_assert_eq(kvsim_scenario_set_max_num_seqs(&sc, 4, &err), KVSIM_OK, "%s", err.msg);
  kvsim_scenario_fini(&sc);
  cr_assert_eq(side_seqs(&copy, KVSIM_SIDE_PREFILL), 8, "and stays so once the original is gone");
  kvsim_scenario_t d = side(&copy, KVSIM_SIDE_DECODE);
  cr_assert(d.workload != NULL, "a built side has the scenario's workload");
  kvsim_scenario_fini(&d);
  kvsim_scenario_fini(&copy);
}

/* summary.json's config prints each side's keys as the side gave them,
 * in the order given, from its typed scenario (canonical: "4k" is 4000;
 * a null left out); an override of a key the side gave is the scenario's
 * own, not the side's. */
Test(disagg_sides, the_config_prints_the_sides_given_keys) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  parse(NULL, &sc);
  cr_assert_eq(kvsim_scenario_set_max_num_seqs(&sc, 16, &err), KVSIM_OK, "%s", err.msg);
  cJSON *c = kvsim_scenario_config_json(&sc);
  cr_assert(c, "the config prints");
  char *s = cJSON_PrintUnformatted(c);
  cr_assert(strstr(s, "\"engine\":{\"max_model_len\":4096,\"max_num_seqs\":16}"), "%s", s);
  cr_assert(strstr(s, "\"prefill\":{\"engine\":{\"num_gpu_blocks_override\":800}}"), "%s", s);
  cr_assert(strstr(s, "\"decode\":{\"gpu\":\"h100-sxm\",\"tensor_parallel_size\":2,\"replicas\":2,"
                      "\"engine\":{\"max_num_seqs\":64,\"max_model_len\":4000}}"),
            "%s", s);
  /* Fed back, it parses to the same config. */
  cJSON *again_tree = cJSON_Duplicate(c, 1);
  kvsim_scenario_t again;
  cr_assert_eq(kvsim_scenario_from_json(again_tree, "config", ".", &again, &err), KVSIM_OK, "%s", err.msg);
  cJSON *c2 = kvsim_scenario_config_json(&again);
  char *s2 = cJSON_PrintUnformatted(c2);
  cr_assert_str_eq(s2, s, "the round trip");
  cJSON_free(s);
  cJSON_free(s2);
  cJSON_Delete(c);
  cJSON_Delete(c2);
  kvsim_scenario_fini(&again);
  kvsim_scenario_fini(&sc);
}
