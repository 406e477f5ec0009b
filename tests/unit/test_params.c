/* The parameter registry (kvsim/params.h): every row complete, bounds
 * ordered, flags and keys unique and mapping both ways, and the range
 * check's wording and parameter id. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/params.h"
#include "kvsim/report.h"
#include "kvsim/scenario.h"

Test(params, every_row_is_complete_and_at_its_id) {
  for (int id = 1; id < KVSIM_PARAM_COUNT; id++) {
    const kvsim_param_t *p = kvsim_param_get(id);
    cr_assert_not_null(p, "row %d", id);
    cr_assert_eq((int)p->id, id, "row %d holds id %d", id, (int)p->id);
    cr_assert(p->key && *p->key, "row %d has a key", id);
    cr_assert(p->doc && *p->doc, "%s has a doc line", p->key);
    cr_assert(p->dflt && *p->dflt, "%s has a default rule", p->key);
    cr_assert(p->profiles && *p->profiles, "%s names its profiles", p->key);
    cr_assert(!strchr(p->doc, '|') && !strchr(p->dflt, '|'), "%s: no table separator in its text",
              p->key);
  }
  cr_assert_null(kvsim_param_get(KVSIM_PARAM_NONE), "no row for NONE");
  cr_assert_null(kvsim_param_get(KVSIM_PARAM_COUNT), "no row past the end");
}

Test(params, bounds_are_ordered_and_integers_exact) {
  for (int id = 1; id < KVSIM_PARAM_COUNT; id++) {
    const kvsim_param_t *p = kvsim_param_get(id);
    if (p->type != KVSIM_PARAM_INT && p->type != KVSIM_PARAM_NUM) {
      cr_assert(p->min == 0 && p->max == 0, "%s: a %d has no bounds", p->key, (int)p->type);
      continue;
    }
    cr_assert(isfinite(p->min) && isfinite(p->max), "%s: finite bounds", p->key);
    cr_assert(p->min < p->max, "%s: min %g < max %g", p->key, p->min, p->max);
    if (p->type == KVSIM_PARAM_INT) {
      cr_assert(p->min == floor(p->min) && p->max == floor(p->max), "%s: integer bounds", p->key);
      cr_assert(p->max <= 9007199254740992.0, "%s: max %g exact as a double", p->key, p->max);
    }
  }
}

Test(params, keys_and_flags_map_both_ways) {
  for (int id = 1; id < KVSIM_PARAM_COUNT; id++) {
    const kvsim_param_t *p = kvsim_param_get(id);
    cr_assert_eq(kvsim_param_by_key(p->key), p, "%s found by its key", p->key);
    if (!p->flag)
      continue;
    cr_assert(!strncmp(p->flag, "--", 2), "%s: flag %s", p->key, p->flag);
    const kvsim_param_t *back = kvsim_param_by_flag(p->flag);
    cr_assert_eq(back, p, "%s -> %s -> %s", p->key, p->flag, back ? back->key : "(none)");
    cr_assert_eq(kvsim_param_by_key(back->key), p, "%s round-trips", p->flag);
  }
  cr_assert_null(kvsim_param_by_key("engine.no_such_key"), "unknown key");
  cr_assert_null(kvsim_param_by_flag("--no-such-flag"), "unknown flag");
  cr_assert_str_eq(kvsim_param_leaf(kvsim_param_get(KVSIM_PARAM_BLOCK_SIZE)), "block_size", "leaf");
  cr_assert_str_eq(kvsim_param_leaf(kvsim_param_get(KVSIM_PARAM_SEED)), "seed", "top-level leaf");
}

Test(params, the_shared_limits_are_the_rows_bounds) {
  cr_assert_eq(kvsim_param_get(KVSIM_PARAM_TENSOR_PARALLEL_SIZE)->max, KVSIM_MAX_PARALLEL, "TP");
  cr_assert_eq(kvsim_param_get(KVSIM_PARAM_PIPELINE_PARALLEL_SIZE)->max, KVSIM_MAX_PARALLEL, "PP");
  cr_assert_eq(kvsim_param_get(KVSIM_PARAM_REPLICAS)->max, KVSIM_MAX_REPLICAS, "replicas");
  cr_assert_eq(kvsim_param_get(KVSIM_PARAM_BLOCK_SIZE)->max, KVSIM_MAX_BLOCK_SIZE, "block size");
  cr_assert_eq(kvsim_param_get(KVSIM_PARAM_PAGE_SIZE)->max, KVSIM_MAX_BLOCK_SIZE, "page size");
  cr_assert_eq(kvsim_param_get(KVSIM_PARAM_EXPERT_PARALLEL_SIZE)->max,
               (double)KVSIM_MAX_PARALLEL * KVSIM_MAX_REPLICAS, "EP: TP x replicas");
}

Test(params, a_range_error_carries_the_id_and_what) {
  kvsim_err e = {0};
  cr_assert_eq(kvsim_param_check_int(KVSIM_PARAM_BLOCK_SIZE, 16, "x", &e), KVSIM_OK, "in range");
  cr_assert_eq(kvsim_param_check_int(KVSIM_PARAM_BLOCK_SIZE, 5000, "--block-size", &e),
               KVSIM_EINVAL, "out of range");
  cr_assert_str_eq(e.msg, "--block-size: 5000 is out of range [1, 4096]", "message");
  cr_assert_eq(e.param, KVSIM_PARAM_BLOCK_SIZE, "id");
  cr_assert_str_eq(kvsim_err_what(&e), "5000 is out of range [1, 4096]", "what");
  kvsim_err_prefix(&e, "file.json");
  cr_assert_str_eq(e.msg, "file.json: --block-size: 5000 is out of range [1, 4096]", "prefixed");
  cr_assert_str_eq(kvsim_err_what(&e), "5000 is out of range [1, 4096]", "what kept");
  cr_assert_eq(kvsim_param_check_num(KVSIM_PARAM_GPU_MEMORY_UTILIZATION, 0, "u", &e), KVSIM_EINVAL,
               "0 is outside (0, 1]");
  cr_assert_str_eq(kvsim_err_what(&e), "0 is outside (0, 1]", "open bound shown");
  cr_assert_eq(kvsim_param_check_num(KVSIM_PARAM_GPU_MEMORY_UTILIZATION, 1, "u", &e), KVSIM_OK,
               "1 is inside (0, 1]");
  cr_assert_eq(kvsim_param_check_num(KVSIM_PARAM_MEM_FRACTION_STATIC, 1, "f", &e), KVSIM_EINVAL,
               "1 is outside SGLang's (0, 1)");
  cr_assert_str_eq(e.msg, "f: 1 is outside (0, 1)", "both bounds open");
  kvsim_err_set(&e, KVSIM_EINVAL, "plain %d", 1);
  cr_assert_eq(e.param, 0, "a plain error names no parameter");
  cr_assert_str_eq(kvsim_err_what(&e), "plain 1", "its what is the message");
}

Test(params, the_plan_also_takes_zero_for_a_default) {
  kvsim_err e = {0};
  cr_assert_eq(kvsim_param_check_plan_int(KVSIM_PARAM_BLOCK_SIZE, 0, "b", &e), KVSIM_OK,
               "0: default");
  cr_assert_eq(kvsim_param_check_int(KVSIM_PARAM_BLOCK_SIZE, 0, "b", &e), KVSIM_EINVAL,
               "a given 0 is refused");
  cr_assert_eq(kvsim_param_check_plan_int(KVSIM_PARAM_BLOCK_SIZE, 4097, "b", &e), KVSIM_EINVAL,
               "past max");
  cr_assert_str_eq(e.msg, "b: 4097 is out of range [0, 4096]", "the plan's range");
  cr_assert_eq(kvsim_param_check_plan_int(KVSIM_PARAM_KV_QUANT_GROUP, 0, "g", &e), KVSIM_EINVAL,
               "no default of 0 for the group");
}

Test(params, calc_name_is_flag_and_key) {
  char b[128];
  cr_assert_str_eq(kvsim_param_calc_name(KVSIM_PARAM_MAX_NUM_SEQS, b, sizeof b),
                   "--max-num-seqs (engine.max_num_seqs)", "flag and key");
  cr_assert_str_eq(kvsim_param_calc_name(KVSIM_PARAM_REPLICAS, b, sizeof b), "hardware.replicas",
                   "no flag: the key");
}

/* ---- one parameter, one wording: scenario, --set and calc ---- */

#define WORKLOAD                                                                                   \
  "\"workload\": { \"synthetic\": { \"requests\": 1, \"arrival\": { \"process\": \"poisson\", "    \
  "\"rate\": 1 }, \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 10 }, \"output_tokens\": "  \
  "{ "                                                                                             \
  "\"dist\": \"fixed\", \"value\": 10 } } }"

static kvsim_calc_t calc; /* large: one per process */

/* calc with one flag set (as the command line sets it); the error. */
static kvsim_err calc_error(const char *name, const char *value) {
  const kvsim_calc_engine_t *e = kvsim_calc_engine_find(NULL, false);
  static kvsim_calc_args_t a;
  e->defaults(&a);
  const kvsim_calc_flag_t *f = e->flags;
  while (f->name && strcmp(f->name, name))
    f++;
  cr_assert_not_null(f->name, "%s is in vLLM's calc table", name);
  a.given[f - e->flags] = true;
  if (f->kind == KVSIM_CALC_INT)
    *(int64_t *)(a.bytes + f->offset) = strtoll(value, NULL, 10);
  else
    *(const char **)(a.bytes + f->offset) = value;
  kvsim_err err = {0};
  cr_assert_eq(e->compute(&a, &calc, &err), KVSIM_EINVAL, "calc %s %s is refused", name, value);
  return err;
}

static kvsim_err scenario_error(const char *text, const char *set) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  const char *sets[] = {set};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", sets, set ? 1 : 0, &sc, &err),
               KVSIM_EINVAL, "the scenario (--set %s) is refused", set ? set : "none");
  return err;
}

static void same_wording(int id, const kvsim_err *a, const kvsim_err *b, const char *what) {
  cr_assert_eq(a->param, id, "%s: '%s' carries the parameter", what, a->msg);
  cr_assert_eq(b->param, id, "%s: '%s' carries the parameter", what, b->msg);
  cr_assert_str_eq(kvsim_err_what(a), kvsim_err_what(b), "%s: one wording", what);
}

Test(params, a_bad_value_reads_alike_in_the_scenario_set_and_calc) {
  /* A range the scenario parser checks. */
  kvsim_err file = scenario_error(
      "{ \"model\": \"llama-3.1-8b\", \"engine\": { \"block_size\": 5000 }, " WORKLOAD " }", NULL);
  kvsim_err set =
      scenario_error("{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }", "engine.block_size=5000");
  kvsim_err flag = calc_error("--block-size", "5000");
  cr_assert_str_eq(file.msg, "s.json: engine.block_size: 5000 is out of range [1, 4096]", "by key");
  cr_assert_str_eq(set.msg, file.msg, "--set reads as the file");
  cr_assert_str_eq(flag.msg, "--block-size: 5000 is out of range [1, 4096]", "by flag");
  same_wording(KVSIM_PARAM_BLOCK_SIZE, &file, &flag, "block size");
  /* A rule only the plan checks: named by key in the scenario, by flag in calc. */
  set = scenario_error("{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }",
                       "hardware.tensor_parallel_size=3");
  flag = calc_error("--tensor-parallel-size", "3");
  cr_assert_str_eq(set.msg,
                   "s.json: hardware.tensor_parallel_size: 3 does not divide the model's 32 "
                   "attention heads",
                   "the plan's error by key");
  cr_assert_str_eq(flag.msg,
                   "--tensor-parallel-size: 3 does not divide the model's 32 attention heads",
                   "the plan's error by flag");
  same_wording(KVSIM_PARAM_TENSOR_PARALLEL_SIZE, &set, &flag, "TP");
  /* The plan's length check against the model. */
  set = scenario_error("{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }",
                       "engine.max_model_len=999999");
  flag = calc_error("--max-model-len", "999999");
  cr_assert(!strncmp(set.msg, "s.json: engine.max_model_len: 999999 is greater", 47), "by key: %s",
            set.msg);
  same_wording(KVSIM_PARAM_MAX_MODEL_LEN, &set, &flag, "max_model_len");
}

Test(params, engine_dtype_and_calc_dtype_take_the_same_names) {
  static const char *const names[] = {"auto", "bfloat16", "float16", "half", "float32", "float"};
  static const char *const stored[] = {"bfloat16", "bfloat16", "float16",
                                       "float16",  "float32",  "float32"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char set[64];
    snprintf(set, sizeof set, "engine.dtype=%s", names[i]);
    const char *sets[] = {set};
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_scenario_parse("{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }", "s.json",
                                      ".", sets, 1, &sc, &err),
                 KVSIM_OK, "engine.dtype %s: %s", names[i], err.msg);
    cr_assert_str_eq(sc.model.dtype, stored[i], "engine.dtype %s is stored as its one name",
                     names[i]);
    kvsim_scenario_fini(&sc);
    kvsim_model_t m = {.dtype = "bfloat16", .dtype_bytes = 2};
    cr_assert_eq(kvsim_model_set_dtype(&m, names[i]), KVSIM_OK, "calc --dtype %s", names[i]);
    cr_assert_str_eq(m.dtype, stored[i], "--dtype %s is stored as engine.dtype's", names[i]);
  }
  kvsim_err e1 =
      scenario_error("{ \"model\": \"llama-3.1-8b\", " WORKLOAD " }", "engine.dtype=fp7");
  cr_assert_str_eq(e1.msg,
                   "s.json: engine.dtype: 'fp7' (expected auto, bfloat16, float16, float32)",
                   "unknown dtype");
}

/* calc's tables: a row of a registry parameter shows the registry's flag
 * and doc; in vLLM's table no registry flag is spelled out by hand but
 * calc's common arguments, whose help names calc's own defaults (the
 * scenario has no default model), and --speculative-config's example. */
Test(params, calc_tables_take_flag_and_help_from_the_registry) {
  static const char *const engines[] = {"vllm-v1", "sglang", "tgi", "hf-transformers"};
  int rows = 0;
  for (size_t i = 0; i < sizeof engines / sizeof *engines; i++) {
    const kvsim_calc_engine_t *e = kvsim_calc_engine_find(engines[i], false);
    for (const kvsim_calc_flag_t *f = e->flags; f->name; f++) {
      const kvsim_param_t *p = kvsim_param_get(f->param);
      if (p) {
        rows++;
        cr_assert_str_eq(f->name, p->flag, "%s: row of %s", engines[i], p->key);
        cr_assert_str_eq(f->help, p->doc, "%s %s: the registry's doc", engines[i], f->name);
      } else if (i == 0 && strcmp(f->name, "--model") && strcmp(f->name, "--gpu") &&
                 strcmp(f->name, "--engine") && strcmp(f->name, "--speculative-config")) {
        cr_assert_null(kvsim_param_by_flag(f->name), "vLLM's %s is the registry's: a registry row",
                       f->name);
      }
    }
  }
  cr_assert_geq(rows, 40, "the tables read the registry (%d rows)", rows);
}

/* A profile's own option of the registry is one its profile parses (the
 * profiles' option lists, kvsim/sched.h), and a shared engine key is none. */
Test(params, profile_options_are_the_profiles_own) {
  const char *keys[256];
  size_t n = 0;
  cr_assert_eq(kvsim_sched_option_keys(keys, &n, 256), KVSIM_OK, "the profiles' options fit");
  for (int id = 1; id < KVSIM_PARAM_COUNT; id++) {
    const kvsim_param_t *p = kvsim_param_get(id);
    if (strncmp(p->key, "engine.", 7))
      continue;
    bool found = false;
    for (size_t i = 0; i < n; i++)
      found = found || !strcmp(keys[i], kvsim_param_leaf(p));
    if (p->flags & KVSIM_PARAM_PROFILE_OPTION)
      cr_assert(found, "%s is a profile's own option: some profile parses it", p->key);
    else
      cr_assert(!found, "%s is shared by every profile: no profile lists it as its own", p->key);
  }
}

/* The plans of SGLang and TGI check their own options by the registry's
 * range, 0 being the engine's automatic value. */
Test(params, the_plans_check_profile_options_by_the_registry) {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load("llama-3.1-8b", &m, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &g, &err), KVSIM_OK, "%s", err.msg);
  static kvsim_plan_t pl;
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_SGLANG;
  p.block_size = KVSIM_MAX_BLOCK_SIZE + 1;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "page past the bound");
  cr_assert_str_eq(err.msg, "--page-size (engine.page_size): 4097 is out of range [0, 4096]",
                   "SGLang");
  cr_assert_eq(err.param, KVSIM_PARAM_PAGE_SIZE, "the id");
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_SGLANG;
  p.sglang.chunked_prefill_size = -2;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "chunk below -1");
  cr_assert_str_eq(err.msg,
                   "--chunked-prefill-size (engine.chunked_prefill_size): -2 is out of range [-1, "
                   "1073741824]",
                   "the chunk's own range");
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_TGI;
  p.tgi.max_input_tokens = -1;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "negative input tokens");
  cr_assert_str_eq(
      err.msg, "--max-input-tokens (engine.max_input_tokens): -1 is out of range [0, 1073741824]",
      "TGI");
  cr_assert_eq(err.param, KVSIM_PARAM_MAX_INPUT_TOKENS, "the id");
}
