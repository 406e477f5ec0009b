/* The profile registry's checks of a scenario's engine keys: another
 * profile's options, and vLLM's gpu_memory_utilization under a profile
 * that does not read it, are refused (before: accepted, echoed into
 * summary.json's config and unused); and each profile's own share of GPU
 * memory, what `plan --search util` varies. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/sched.h"
#include "kvsim/study.h"

static int parse(const char *profile, const char *extra, kvsim_scenario_t *sc, kvsim_err *err) {
  char text[2048];
  snprintf(text, sizeof text,
           "{ \"name\": \"k\", \"seed\": 1, \"model\": \"llama-3.1-8b\", \"hardware\": { \"gpu\": "
           "\"l4\" }, \"engine\": { \"profile\": \"%s\", \"max_model_len\": 2048%s }, "
           "\"workload\": { \"synthetic\": { \"requests\": 8, \"arrival\": { \"process\": "
           "\"poisson\", \"rate\": 2 }, \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 500 "
           "}, \"output_tokens\": { \"dist\": \"fixed\", \"value\": 20 } } } }",
           profile, extra);
  return kvsim_scenario_parse(text, "k.json", ".", NULL, 0, sc, err);
}

static void refused(const char *profile, const char *extra, const char *words) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  int rc = parse(profile, extra, &sc, &err);
  if (rc == KVSIM_OK)
    kvsim_scenario_fini(&sc);
  cr_assert_eq(rc, KVSIM_EINVAL, "%s with%s: refused (rc %d)", profile, extra, rc);
  cr_assert(strstr(err.msg, words), "%s with%s: says '%s': %s", profile, extra, words, err.msg);
}

Test(sched_registry, another_profiles_options_are_refused) {
  refused("vllm-v1", ", \"mem_fraction_static\": 0.8",
          "engine.mem_fraction_static: an option of the sglang profile, not of vllm-v1");
  refused("vllm-v1", ", \"page_size\": 16", "engine.page_size: an option of the sglang profile");
  refused("vllm-v1", ", \"cache\": \"static\"", "engine.cache: an option of the hf-transformers");
  refused("vllm-v1", ", \"cuda_memory_fraction\": 0.9",
          "engine.cuda_memory_fraction: an option of the tgi profile, not of vllm-v1");
  refused("sglang", ", \"cuda_memory_fraction\": 0.9", "an option of the tgi profile, not of sglang");
  refused("tgi", ", \"mem_fraction_static\": 0.8", "an option of the sglang profile, not of tgi");
  refused("hf-transformers", ", \"watermark\": 0.01", "an option of the vllm-v0 profile");
  refused("sglang", ", \"gpu_memory_utilization\": 0.3",
          "engine.gpu_memory_utilization: not read by the sglang profile (engine.profile); its own "
          "is engine.mem_fraction_static");
  refused("tgi", ", \"gpu_memory_utilization\": 0.3", "its own is engine.cuda_memory_fraction");
  refused("hf-transformers", ", \"gpu_memory_utilization\": 0.3",
          "not read by the hf-transformers profile");
}

/* One key checked alone gives parsing's message: what a typed override
 * reaching a disaggregated side of another profile is refused with. */
Test(sched_registry, one_key_is_checked_as_parsing_checks_it) {
  static const struct {
    const char *profile, *key, *says;
  } cases[] = {
      {"sglang", "gpu_memory_utilization",
       "W.gpu_memory_utilization: not read by the sglang profile (engine.profile); its own is "
       "engine.mem_fraction_static"},
      {"vllm-v1", "mem_fraction_static",
       "W.mem_fraction_static: an option of the sglang profile, not of vllm-v1 (engine.profile)"},
      {"sglang", "mem_fraction_static", NULL},
      {"vllm-v1", "gpu_memory_utilization", NULL},
      {"sglang", "max_num_seqs", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kvsim_err err = {0};
    int rc = kvsim_sched_check_key(kvsim_sched_find(cases[i].profile), cases[i].key, "W", &err);
    cr_assert_eq(rc, cases[i].says ? KVSIM_EINVAL : KVSIM_OK, "%s, %s: rc %d", cases[i].profile,
                 cases[i].key, rc);
    if (cases[i].says)
      cr_assert_str_eq(err.msg, cases[i].says, "%s, %s: the message", cases[i].profile, cases[i].key);
  }
}

Test(sched_registry, own_options_shared_keys_and_nulls_still_parse) {
  const char *ok[][2] = {{"sglang", ", \"mem_fraction_static\": 0.8, \"page_size\": 16"},
                         {"tgi", ", \"cuda_memory_fraction\": 0.9, \"max_total_tokens\": 2048"},
                         {"sglang", ", \"max_total_tokens\": 4096"},
                         {"vllm-v1", ", \"gpu_memory_utilization\": 0.8, \"mem_fraction_static\": null"},
                         {"hf-transformers", ", \"cache\": \"static\", \"batch\": 2"}};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    cr_assert_eq(parse(ok[i][0], ok[i][1], &sc, &err), KVSIM_OK, "%s with%s: %s", ok[i][0], ok[i][1],
                 err.msg);
    kvsim_scenario_fini(&sc);
  }
}

Test(sched_registry, each_profile_names_its_share_of_gpu_memory) {
  const char *want[][2] = {{"vllm-v1", "gpu_memory_utilization"},
                           {"vllm-v0", "gpu_memory_utilization"},
                           {"sglang", "mem_fraction_static"},
                           {"tgi", "cuda_memory_fraction"},
                           {"hf-transformers", NULL}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    const char *k = kvsim_sched_fraction_key(kvsim_sched_find(want[i][0]));
    if (want[i][1])
      cr_assert(k && !strcmp(k, want[i][1]), "%s: %s (got %s)", want[i][0], want[i][1],
                k ? k : "none");
    else
      cr_assert_null(k, "%s has none (got %s)", want[i][0], k);
  }
}

/* SGLang's pool follows the mem_fraction_static set, where setting
 * gpu_memory_utilization (what plan --search util did) left it as it was. */
Test(sched_registry, setting_sglangs_fraction_moves_its_pool) {
  kvsim_scenario_t a, b;
  kvsim_err err = {0};
  cr_assert_eq(parse("sglang", "", &a, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_copy(&a, &b, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_memory_fraction(&a, 0.9, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_memory_fraction(&b, 0.8, &err), KVSIM_OK, "%s", err.msg);
  kvsim_resolved_t ra, rb;
  cr_assert_eq(kvsim_scenario_resolve(&a, &ra, &err), KVSIM_OK, "0.9 fits: %s", err.msg);
  cr_assert_eq(kvsim_scenario_resolve(&b, &rb, &err), KVSIM_OK, "0.8 fits: %s", err.msg);
  cr_assert_gt(ra.pool_usable, rb.pool_usable, "0.9 holds more than 0.8 (%lld, %lld)",
               (long long)ra.pool_usable, (long long)rb.pool_usable);
  kvsim_scenario_fini(&a);
  kvsim_scenario_fini(&b);
}

Test(sched_registry, a_util_search_under_hf_is_refused_naming_the_profile) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(parse("hf-transformers", "", &sc, &err), KVSIM_OK, "%s", err.msg);
  kvsim_search_t *se = calloc(1, sizeof *se);
  cr_assert_not_null(se, "allocated");
  se->base = &sc;
  se->kind = KVSIM_SEARCH_UTIL;
  se->targets[0] = (kvsim_slo_target_t){KVSIM_METRIC_TTFT, KVSIM_STAT_P99, 2};
  se->ntargets = 1;
  se->no_range = true;
  cr_assert_eq(kvsim_search_run(se, &err), KVSIM_EINVAL, "refused");
  cr_assert(strstr(err.msg, "--search util: the hf-transformers profile has no share"), "%s",
            err.msg);
  cr_assert_eq(se->npoints, 0, "before any simulation (%d)", se->npoints);
  free(se);
  kvsim_scenario_fini(&sc);
}
