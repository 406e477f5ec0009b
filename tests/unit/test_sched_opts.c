/* A profile's own options printed back from its typed options (sched.h
 * print_opts, sched/opts_print.c): every option has a registry row and a
 * printer, the given ones print in canonical form and parse back into the
 * same options, and the others do not print. summary.json's config takes
 * them from here (engine/config_json.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/params.h"
#include "kvsim/plan.h"
#include "kvsim/sched.h"

static const char *const profiles[] = {"vllm-v1",         "vllm-v0", "static", "contiguous",
                                       "contiguous-pow2", "sglang",  "tgi",    "hf-transformers"};

/* Every option of each profile at a value other than its default. */
static const char *every_option(const char *profile) {
  if (!strcmp(profile, "vllm-v1"))
    return "{\"long_prefill_token_threshold\": 256}";
  if (!strcmp(profile, "vllm-v0"))
    return "{\"watermark\": 0.05}";
  if (!strncmp(profile, "contiguous", 10))
    return "{\"oracle_lengths\": true}";
  if (!strcmp(profile, "sglang"))
    return "{\"mem_fraction_static\": 0.8, \"page_size\": 16, \"max_total_tokens\": 100000, "
           "\"max_running_requests\": 64, \"chunked_prefill_size\": -1, \"max_prefill_tokens\": "
           "8192, \"schedule_policy\": \"lof\", \"schedule_conservativeness\": 0.5, "
           "\"gpu_memory_capacity_mib\": 81559, \"speculative_num_steps\": 3, "
           "\"speculative_eagle_topk\": 2, \"speculative_num_draft_tokens\": 4, \"scheduler_recv_interval\": 10}";
  if (!strcmp(profile, "tgi"))
    return "{\"cuda_memory_fraction\": 0.9, \"tgi_version\": \"3.2.1\", \"attention\": \"paged\", "
           "\"max_input_tokens\": 1000, \"max_total_tokens\": 2000, \"max_batch_prefill_tokens\": "
           "1024, \"max_batch_total_tokens\": 50000, \"waiting_served_ratio\": 0.5, "
           "\"max_waiting_tokens\": 10, \"reserve_max_total_tokens\": true}";
  if (!strcmp(profile, "hf-transformers"))
    return "{\"cache\": \"static\", \"batch\": 4, \"max_cache_len\": 4096, \"nbits\": 2, "
           "\"q_group_size\": 32, \"residual_length\": 64}";
  return "{}";
}

/* Parses `json` as ops' engine keys into *opts and the plan's parameters. */
static void parse(const kvsim_sched_ops_t *ops, const char *json, kvsim_sched_opts_t *opts,
                  kvsim_plan_params_t *p) {
  cJSON *e = cJSON_Parse(json);
  cr_assert_not_null(e, "json %s", json);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_sched_parse_opts(ops, e, "t: engine", opts, &err), KVSIM_OK, "%s %s: %s",
               ops->name, json, err.msg);
  cJSON_Delete(e);
  kvsim_plan_params_default(p);
  if (ops->plan_params)
    ops->plan_params(opts, p);
}

/* ops' given options as printed (caller frees). */
static char *print(const kvsim_sched_ops_t *ops, const kvsim_sched_opts_t *opts,
                   const kvsim_plan_params_t *p) {
  cJSON *e = cJSON_CreateObject();
  cr_assert_eq(kvsim_sched_print_opts(ops, opts, p, e), KVSIM_OK, "%s prints", ops->name);
  char *s = cJSON_PrintUnformatted(e);
  cJSON_Delete(e);
  return s;
}

static int count(const char *const *keys) {
  int n = 0;
  while (keys && keys[n])
    n++;
  return n;
}

Test(sched_opts, every_option_has_a_registry_row_and_a_printer) {
  for (size_t i = 0; i < sizeof profiles / sizeof *profiles; i++) {
    const kvsim_sched_ops_t *ops = kvsim_sched_find(profiles[i]);
    cr_assert_not_null(ops, "%s is a profile", profiles[i]);
    int n = count(ops->option_keys);
    cr_assert_leq(n, KVSIM_SCHED_MAX_OPTIONS, "%s: its options fit the given mask", ops->name);
    cr_assert(!n || ops->print_opts, "%s has options and prints them", ops->name);
    for (int k = 0; k < n; k++) {
      char key[128];
      snprintf(key, sizeof key, "engine.%s", ops->option_keys[k]);
      const kvsim_param_t *row = kvsim_param_by_key(key);
      cr_assert_not_null(row, "%s: %s has a registry row", ops->name, key);
      cr_assert(row->flags & KVSIM_PARAM_PROFILE_OPTION, "%s: a profile's option", key);
    }
  }
}

/* Each profile's every option, given: all print, parse back into the same
 * options, and print the same again. */
Test(sched_opts, given_options_print_back_to_the_same_options) {
  for (size_t i = 0; i < sizeof profiles / sizeof *profiles; i++) {
    const kvsim_sched_ops_t *ops = kvsim_sched_find(profiles[i]);
    kvsim_sched_opts_t a, b;
    kvsim_plan_params_t pa, pb;
    parse(ops, every_option(ops->name), &a, &pa);
    char *s = print(ops, &a, &pa);
    cJSON *back = cJSON_Parse(s);
    cr_assert_eq(cJSON_GetArraySize(back), count(ops->option_keys), "%s: every option prints: %s",
                 ops->name, s);
    cJSON_Delete(back);
    parse(ops, s, &b, &pb);
    cr_assert_eq(memcmp(a.bytes, b.bytes, sizeof a.bytes), 0, "%s: %s parses to the same options",
                 ops->name, s);
    cr_assert_eq(a.given, b.given, "%s: the same given", ops->name);
    char *t = print(ops, &b, &pb);
    cr_assert_str_eq(t, s, "%s: prints the same again", ops->name);
    free(s);
    free(t);
  }
}

Test(sched_opts, only_given_options_print_in_canonical_form) {
  const kvsim_sched_ops_t *tgi = kvsim_sched_find("tgi");
  kvsim_sched_opts_t o;
  kvsim_plan_params_t p;
  /* A null is the key left out; the release as a number is 3.2.0. */
  parse(tgi, "{\"tgi_version\": 3.2, \"attention\": null, \"max_waiting_tokens\": 0}", &o, &p);
  char *s = print(tgi, &o, &p);
  cr_assert_str_eq(s, "{\"tgi_version\":\"3.2.0\",\"max_waiting_tokens\":0}", "given only");
  free(s);
  parse(tgi, "{}", &o, &p);
  s = print(tgi, &o, &p);
  cr_assert_str_eq(s, "{}", "nothing given, nothing printed");
  free(s);
  const kvsim_sched_ops_t *sgl = kvsim_sched_find("sglang");
  parse(sgl, "{\"schedule_conservativeness\": 2, \"schedule_policy\": \"lpm\"}", &o, &p);
  s = print(sgl, &o, &p);
  cr_assert_str_eq(s, "{\"schedule_policy\":\"lpm\",\"schedule_conservativeness\":2}",
                   "in the profile's order");
  free(s);
}

/* The memory share prints from the plan's parameters, where a typed
 * override sets it, once marked given. */
Test(sched_opts, the_memory_share_prints_from_the_plan) {
  const kvsim_sched_ops_t *sgl = kvsim_sched_find("sglang");
  kvsim_sched_opts_t o;
  kvsim_plan_params_t p;
  parse(sgl, "{}", &o, &p);
  sgl->set_fraction(&p, 0.7);
  cr_assert(kvsim_sched_opts_mark_given(sgl, &o, "mem_fraction_static"), "an option of sglang");
  cr_assert(!kvsim_sched_opts_mark_given(sgl, &o, "watermark"), "not one of sglang's");
  char *s = print(sgl, &o, &p);
  cr_assert_str_eq(s, "{\"mem_fraction_static\":0.7}", "the plan's value");
  free(s);
}
