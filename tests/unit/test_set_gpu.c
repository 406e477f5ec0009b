/* kvsim_scenario_set_gpu (engine/override.c) on the typed fields is what
 * parsing the scenario with --set hardware.gpu=GPU gives: the same GPU
 * (the perf section laid over its perf), plan, disaggregation block,
 * config and, where it fails, the same error; a failure leaves the
 * scenario as it was. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/scenario.h"

#define WORKLOAD                                                                                   \
  "\"workload\": { \"synthetic\": { \"requests\": 10, \"arrival\": { \"process\": \"poisson\", "   \
  "\"rate\": 5 }, \"prompt_tokens\": 100, \"output_tokens\": 10 } }"

static char *config_text(const kvsim_scenario_t *sc) {
  cJSON *c = kvsim_scenario_config_json(sc);
  cr_assert(c);
  char *s = cJSON_PrintUnformatted(c);
  cJSON_Delete(c);
  return s;
}

/* Sets gpu on json's scenario both ways and holds them equal. */
static void same_as_parsed(const char *json, const char *gpu) {
  kvsim_scenario_t a, b;
  kvsim_err ea = {0}, eb = {0};
  cr_assert_eq(kvsim_scenario_parse(json, "s.json", ".", NULL, 0, &a, &ea), KVSIM_OK, "%s", ea.msg);
  char set[128];
  snprintf(set, sizeof set, "hardware.gpu=%s", gpu);
  const char *sets[] = {set};
  int rb = kvsim_scenario_parse(json, "s.json", ".", sets, 1, &b, &eb);
  char *before = config_text(&a);
  kvsim_gpu_t gpu_before = a.gpu;
  int ra = kvsim_scenario_set_gpu(&a, gpu, &ea);
  cr_assert_eq(ra, rb, "%s to %s: set %d (%s), parsed %d (%s)", json, gpu, ra, ea.msg, rb, eb.msg);
  if (rb < 0) {
    /* Named after the scenario ("s", a text's; its file's path when
     * loaded) where parsing names the text's where ("s.json"). */
    cr_assert_str_eq(strchr(ea.msg, ':'), strchr(eb.msg, ':'), "the same error:\n%s\n%s", ea.msg,
                     eb.msg);
    char *after = config_text(&a);
    cr_assert_str_eq(after, before, "a failure leaves the scenario as it was");
    cr_assert_str_eq(a.gpu.name, gpu_before.name);
    free(after);
    free(before);
    kvsim_scenario_fini(&a);
    return;
  }
  cr_assert_str_eq(a.gpu.name, b.gpu.name);
  cr_assert_eq(memcmp(&a.gpu.perf, &b.gpu.perf, sizeof a.gpu.perf), 0, "the GPU's perf");
  cr_assert_eq(a.gpu.memory_total_bytes, b.gpu.memory_total_bytes);
  cr_assert_eq(memcmp(&a.plan, &b.plan, sizeof a.plan), 0, "the plan's parameters");
  cr_assert(a.parsed_plan.valid && b.parsed_plan.valid);
  cr_assert_eq(a.parsed_plan.plan.num_gpu_blocks, b.parsed_plan.plan.num_gpu_blocks);
  cr_assert_eq(memcmp(&a.disagg, &b.disagg, sizeof a.disagg), 0, "the disaggregation block");
  char *ca = config_text(&a), *cb = config_text(&b);
  cr_assert_str_eq(ca, cb);
  free(ca);
  free(cb);
  free(before);
  kvsim_scenario_fini(&a);
  kvsim_scenario_fini(&b);
}

Test(set_gpu, perf_overrides_and_memory_kept) {
  same_as_parsed("{ \"model\": \"llama-3.1-8b\", \"hardware\": { \"gpu\": \"h100-sxm\", "
                 "\"gpu_memory_gib\": 70 }, \"perf\": { \"host_us\": 30, \"status\": "
                 "\"spec-only\", \"source\": \"mine\" }, " WORKLOAD " }",
                 "a100-80g");
}

Test(set_gpu, the_gpus_own_perf_without_overrides) {
  same_as_parsed("{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }", "l40s");
}

Test(set_gpu, a_plan_that_does_not_fit_is_the_parsers_error) {
  same_as_parsed(
      "{ \"model\": \"llama-3.1-70b\", \"hardware\": { \"gpu\": \"h200\" }, " WORKLOAD " }", "l4");
}

Test(set_gpu, an_unknown_gpu_is_the_parsers_error) {
  same_as_parsed("{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }", "h900");
}

/* The link's default bandwidth is the GPU's (NVLink): the block is parsed
 * again over the new GPU. */
Test(set_gpu, disaggregation_follows_the_gpu) {
  same_as_parsed("{ \"model\": \"llama-3.1-8b\", \"hardware\": { \"gpu\": \"h100-sxm\" }, "
                 "\"disaggregation\": { \"prefill\": { \"engine\": { \"max_model_len\": 4096 } }, "
                 "\"decode\": { \"engine\": { \"max_model_len\": 4096 } }, "
                 "\"link\": { \"kind\": \"nvlink\" } }, " WORKLOAD " }",
                 "b200");
}
