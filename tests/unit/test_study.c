/* The study room: grid and zip expansion, the plan bisection on synthetic
 * predicates, and a tiny sweep run in memory. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/study.h"

/* A scenario inline in the sweep file, so no file is needed. */
#define SCENARIO                                                                                  \
  "{ \"name\": \"tiny\", \"seed\": 2, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" }," \
  "  \"engine\": { \"max_model_len\": 2048 },"                                                    \
  "  \"workload\": { \"synthetic\": { \"requests\": 12, \"arrival\": { \"process\": \"poisson\", \"rate\": 20 }," \
  "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 100 },"                                \
  "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 8 } } } }"

static int parse(const char *grid_and_mode, kvsim_sweep_t *s, kvsim_err *err) {
  char text[4096];
  snprintf(text, sizeof text, "{ \"name\": \"t\", \"scenario\": " SCENARIO ", %s }", grid_and_mode);
  return kvsim_sweep_parse(text, "t.json", NULL, s, err);
}

Test(study, grid_expands_every_combination_last_key_fastest) {
  kvsim_sweep_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("\"grid\": { \"engine.max_num_seqs\": [4, 8], \"engine.kv_cache_dtype\": [\"auto\", \"fp8\", \"int8\"] }",
                     &s, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(s.points, 6, "2 x 3 points (got %lld)", (long long)s.points);
  cr_assert_eq(s.nkeys, 2, "two axes");
  const int seqs[] = {4, 4, 4, 8, 8, 8};
  const char *dt[] = {"auto", "fp8", "int8", "auto", "fp8", "int8"};
  for (int i = 0; i < 6; i++) {
    cr_assert_eq(kvsim_sweep_value(&s, i, 0)->valueint, seqs[i], "point %d: max_num_seqs", i);
    cr_assert_str_eq(kvsim_sweep_value(&s, i, 1)->valuestring, dt[i], "point %d: kv dtype", i);
  }
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_sweep_scenario(&s, 4, &sc, &err), KVSIM_OK, "point 4 builds: %s", err.msg);
  cr_assert_eq(sc.plan.max_num_seqs, 8, "point 4 has its max_num_seqs");
  cr_assert_eq(sc.plan.kv_dtype, KVSIM_KV_FP8, "and its dtype");
  kvsim_scenario_fini(&sc);
  kvsim_sweep_fini(&s);
}

Test(study, zip_pairs_lists_of_equal_length) {
  kvsim_sweep_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("\"mode\": \"zip\", \"grid\": { \"hardware.gpu\": [\"l4\", \"h100-sxm\", \"a100-80g\"],"
                     " \"hardware.tensor_parallel_size\": [1, 2, 4] }", &s, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(s.points, 3, "zip: one point per pair (got %lld)", (long long)s.points);
  const char *gpu[] = {"l4", "h100-sxm", "a100-80g"};
  for (int i = 0; i < 3; i++) {
    cr_assert_str_eq(kvsim_sweep_value(&s, i, 0)->valuestring, gpu[i], "pair %d: gpu", i);
    cr_assert_eq(kvsim_sweep_value(&s, i, 1)->valueint, 1 << i, "pair %d: its tp", i);
  }
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_sweep_scenario(&s, 2, &sc, &err), KVSIM_OK, "pair 2 builds: %s", err.msg);
  cr_assert_eq(sc.plan.tp, 4, "a100 with tp 4");
  kvsim_scenario_fini(&sc);
  kvsim_sweep_fini(&s);
}

Test(study, a_bad_sweep_is_one_error_line_naming_what) {
  const char *bad[][2] = {
      {"\"grid\": { \"engine.max_num_seq\": [4, 8] }", "engine.max_num_seq"},
      {"\"grid\": { \"engine.max_num_seqs\": [] }", "non-empty"},
      {"\"mode\": \"zip\", \"grid\": { \"engine.max_num_seqs\": [4, 8], \"engine.block_size\": [16] }",
       "equal length"},
      {"\"mode\": \"cross\", \"grid\": { \"engine.max_num_seqs\": [4] }", "grid or zip"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim_sweep_t s;
    kvsim_err err = {0};
    cr_assert_eq(parse(bad[i][0], &s, &err), KVSIM_EINVAL, "case %zu is refused", i);
    cr_assert(strstr(err.msg, bad[i][1]) != NULL, "case %zu: '%s' names '%s'", i, err.msg, bad[i][1]);
    cr_assert(strchr(err.msg, '\n') == NULL, "case %zu: one line", i);
    cr_assert_null(s.root, "case %zu: nothing kept", i);
  }
}

/* Monotone predicates: meets while x <= edge (rate), x >= edge (others). */
typedef struct pred {
  double edge;
  int calls;
  bool up;
} pred_t;

static int below(void *ctx, double x, kvsim_err *err) {
  pred_t *p = ctx;
  p->calls++;
  return p->up ? x <= p->edge : x >= p->edge;
}

Test(study, bisection_finds_the_boundary_within_tolerance) {
  kvsim_err err = {0};
  pred_t p = {7.3, 0, true};
  double best;
  cr_assert_eq(kvsim_search_bisect_up(below, &p, 1, 16, 0.01, false, &best, &err), KVSIM_OK, "runs");
  cr_assert(best <= 7.3 && 7.3 - best <= 0.01 * best, "largest meeting x: %g within 1%% of 7.3", best);
  p.calls = 0;
  cr_assert_eq(kvsim_search_rate(below, &p, 0.02, &best, &err), KVSIM_OK, "rate search runs");
  cr_assert(best <= 7.3 && 7.3 - best <= 0.02 * best, "rate multiplier %g within 2%% of 7.3", best);
  p = (pred_t){0.47, 0, false};
  cr_assert_eq(kvsim_search_util(below, &p, &best, &err), KVSIM_OK, "util search runs");
  cr_assert(best >= 0.47 && best - 0.47 <= 0.005, "lowest util %g within 0.005 above 0.47", best);
  p = (pred_t){5, 0, false};
  cr_assert_eq(kvsim_search_replicas(below, &p, &best, &err), KVSIM_OK, "replica search runs");
  cr_assert_eq(best, 5, "fewest replicas is exactly 5 (got %g)", best);
}

Test(study, bisection_handles_never_and_always_meeting) {
  kvsim_err err = {0};
  double best;
  pred_t never = {-1, 0, true}, always = {1e300, 0, true};
  cr_assert_eq(kvsim_search_rate(below, &never, 0.02, &best, &err), KVSIM_OK, "never: runs");
  cr_assert(isnan(best), "never meeting: no rate (got %g)", best);
  cr_assert_eq(never.calls, 12, "halved 12 times before giving up (%d)", never.calls);
  cr_assert_eq(kvsim_search_rate(below, &always, 0.02, &best, &err), KVSIM_OK, "always: runs");
  cr_assert_eq(best, 2048, "always meeting: the largest multiplier tried (got %g)", best);
  pred_t none = {1e300, 0, false}, all = {-1, 0, false};
  cr_assert_eq(kvsim_search_replicas(below, &none, &best, &err), KVSIM_OK, "replicas never");
  cr_assert(isnan(best), "no replica count meets");
  cr_assert_eq(kvsim_search_util(below, &none, &best, &err), KVSIM_OK, "util never");
  cr_assert(isnan(best), "no utilization meets");
  cr_assert_eq(kvsim_search_util(below, &all, &best, &err), KVSIM_OK, "util always");
  cr_assert_eq(best, 0.3, "the lowest utilization searched");
}

static int fatal(void *ctx, double x, kvsim_err *err) {
  return kvsim_err_set(err, KVSIM_EINVAL, "bad scenario");
}

Test(study, a_fatal_predicate_stops_the_search) {
  kvsim_err err = {0};
  double best;
  cr_assert_eq(kvsim_search_rate(fatal, NULL, 0.02, &best, &err), KVSIM_EINVAL, "code passed up");
  cr_assert_eq(kvsim_search_replicas(fatal, NULL, &best, &err), KVSIM_EINVAL, "code passed up");
}

static void run_tiny(int jobs, kvsim_sweep_result_t *res) {
  kvsim_sweep_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("\"grid\": { \"engine.max_num_seqs\": [2, 16], \"engine.gpu_memory_utilization\": [0.9, 0.02] }",
                     &s, &err), KVSIM_OK, "parse: %s", err.msg);
  kvsim_sweep_opts_t o = {NULL, jobs, 0, 1};
  cr_assert_eq(kvsim_sweep_run(&s, &o, res, &err), KVSIM_OK, "sweep runs: %s", err.msg);
  kvsim_sweep_fini(&s);
}

Test(study, a_tiny_sweep_runs_in_memory_the_same_with_any_jobs) {
  kvsim_sweep_result_t a, b;
  run_tiny(1, &a);
  run_tiny(2, &b);
  for (int i = 0; i < 4; i++) {
    cr_assert(a.rows[i].ran, "point %d ran", i);
    bool fits = i % 2 == 0; /* utilization 0.02 leaves no KV cache */
    cr_assert_eq(a.rows[i].rc, fits ? KVSIM_OK : KVSIM_ENOFIT, "point %d: rc %d", i, a.rows[i].rc);
    cr_assert_eq(b.rows[i].rc, a.rows[i].rc, "point %d: same outcome with 2 jobs", i);
    if (fits) {
      cr_assert_eq(a.rows[i].fig[0], 12, "point %d: 12 requests", i);
      cr_assert(memcmp(a.rows[i].fig, b.rows[i].fig, sizeof a.rows[i].fig) == 0,
                "point %d: same figures through the fork pool", i);
    } else {
      cr_assert_str_eq(a.rows[i].error, b.rows[i].error, "point %d: same error", i);
    }
  }
  cr_assert_neq(a.rows[0].fig[5], a.rows[2].fig[5], "max_num_seqs 2 vs 16 changes TTFT p50");
  cr_assert_eq(a.no_fit, 2, "two points do not fit");
  cr_assert_eq(a.failed, 0, "no point failed otherwise");
  kvsim_sweep_result_fini(&a);
  kvsim_sweep_result_fini(&b);
}
