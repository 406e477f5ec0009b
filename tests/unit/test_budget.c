/* The memory budget (kvsim/engine.h kvsim_memory_budget_set): a run whose
 * replicas or requests in flight would hold more stops with an error naming
 * the budget; and a replica search whose requests are too long for any
 * replica stops at its first point with the reason, instead of doubling
 * replicas (and memory) up to 1,024. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/engine.h"
#include "kvsim/pool.h"
#include "kvsim/study.h"

/* HF Transformers on an L4 whose max_cache_len (2,048) is shorter than
 * every request (3,000 + 50 tokens): each one is rejected for length. */
#define TOO_LONG                                                                                   \
  "{ \"name\": \"hf-l4\", \"seed\": 1, \"model\": \"llama-3.1-8b\", \"hardware\": { \"gpu\": "     \
  "\"l4\" }, \"engine\": { \"profile\": \"hf-transformers\", \"cache\": \"dynamic\", \"batch\": "  \
  "4, \"max_cache_len\": 2048 }, \"workload\": { \"synthetic\": { \"requests\": 20, \"arrival\": " \
  "{ \"process\": \"poisson\", \"rate\": 2 }, \"prompt_tokens\": { \"dist\": \"fixed\", "          \
  "\"value\": 3000 }, \"output_tokens\": { \"dist\": \"fixed\", \"value\": 50 } } } }"

#define SMALL                                                                                      \
  "{ \"name\": \"small\", \"seed\": 2, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": "     \
  "\"l4\" }, \"engine\": { \"max_model_len\": 2048 }, \"workload\": { \"synthetic\": { "           \
  "\"requests\": 20000, \"arrival\": { \"process\": \"poisson\", \"rate\": 1000000 }, "              \
  "\"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 1000 }, \"output_tokens\": { \"dist\": "   \
  "\"fixed\", \"value\": 50 } } } }"

static void load(const char *text, kvsim_scenario_t *sc) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", NULL, 0, sc, &err), KVSIM_OK, "%s",
               err.msg);
}

static int run(const kvsim_scenario_t *sc, kvsim_err *err) {
  kvsim_run_stats_t *st = calloc(1, sizeof *st);
  cr_assert_not_null(st, "stats allocated");
  int rc = kvsim_run(sc, NULL, NULL, st, err);
  free(st);
  return rc;
}

Test(budget, pool_bytes_grow_with_the_blocks) {
  cr_assert_gt(kvsim_pool_bytes(46195), 46195 * 20, "more than the per-block arrays: %lld",
               (long long)kvsim_pool_bytes(46195));
  cr_assert_gt(kvsim_pool_bytes(2000000), 20 * kvsim_pool_bytes(46195),
               "proportional to the blocks");
  cr_assert_eq(kvsim_pool_bytes(-1), 0, "nothing for a negative count");
}

Test(budget, replicas_past_the_budget_are_an_error_naming_it) {
  kvsim_scenario_t sc;
  load(TOO_LONG, &sc);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_set_replicas(&sc, 300, &err), KVSIM_OK, "%s", err.msg);
  kvsim_memory_budget_set(INT64_C(1) << 30);
  int rc = run(&sc, &err);
  kvsim_memory_budget_set(0);
  cr_assert_eq(rc, KVSIM_EBUDGET, "300 replicas of 46k blocks do not fit in 1 GiB (rc %d)", rc);
  cr_assert(strstr(err.msg, "memory budget of 1 GiB") && strstr(err.msg, "hardware.replicas = 300"),
            "names the budget and the key: %s", err.msg);
  cr_assert_eq(kvsim_memory_budget(), KVSIM_MEMORY_BUDGET_DEFAULT, "0 restores the default");
  cr_assert_eq(run(&sc, &err), KVSIM_OK, "within the default budget it runs: %s", err.msg);
  kvsim_scenario_fini(&sc);
}

Test(budget, requests_piling_up_past_the_budget_are_an_error_naming_it) {
  kvsim_scenario_t sc;
  load(SMALL, &sc);
  kvsim_err err = {0};
  /* 10^6 req/s: the 20,000 arrive before the first finishes. */
  kvsim_memory_budget_set(INT64_C(8) << 20); /* the pool is about 3 MiB */
  int rc = run(&sc, &err);
  kvsim_memory_budget_set(0);
  cr_assert_eq(rc, KVSIM_EBUDGET, "thousands in flight past 8 MiB (rc %d: %s)", rc, err.msg);
  cr_assert(strstr(err.msg, "requests in flight") && strstr(err.msg, "memory budget"),
            "names what grew and the budget: %s", err.msg);
  cr_assert_eq(run(&sc, &err), KVSIM_OK, "the default budget holds them: %s", err.msg);
  kvsim_scenario_fini(&sc);
}

Test(budget, a_replica_search_of_requests_too_long_stops_at_once) {
  kvsim_scenario_t sc;
  load(TOO_LONG, &sc);
  kvsim_search_t *se = calloc(1, sizeof *se);
  cr_assert_not_null(se, "search allocated");
  se->base = &sc;
  se->kind = KVSIM_SEARCH_REPLICAS;
  se->targets[0] = (kvsim_slo_target_t){KVSIM_METRIC_TTFT, KVSIM_STAT_P99, 2};
  se->ntargets = 1;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_search_run(se, &err), KVSIM_OK, "search runs: %s", err.msg);
  cr_assert(isnan(se->best), "no replica count meets (%g)", se->best);
  cr_assert_eq(se->npoints, 1, "one simulation, not 11 doublings (%d)", se->npoints);
  cr_assert_eq(se->range_points, 0, "no range searched either (%d)", se->range_points);
  cr_assert(strstr(se->stopped, "20 requests rejected as longer than max_model_len"),
            "the reason: %s", se->stopped);
  char line[1024];
  kvsim_search_summary(se, "ttft_p99=2s", line, sizeof line);
  cr_assert(strstr(line, "whatever the replica count") && strstr(line, "stopped after 1"),
            "said in the answer: %s", line);
  free(se);
  kvsim_scenario_fini(&sc);
}

static int stop(void *ctx, double x, kvsim_err *err) {
  (*(int *)ctx)++;
  return KVSIM_SEARCH_STOP;
}

Test(budget, a_predicate_that_stops_ends_the_replica_search) {
  int calls = 0;
  double best = 0;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_search_replicas(stop, &calls, &best, &err), KVSIM_OK, "runs");
  cr_assert_eq(calls, 1, "one call (%d)", calls);
  cr_assert(isnan(best), "no answer (%g)", best);
}

/* A replica count past the budget ends the doubling as 1,024 replicas
 * did, the budget named, rather than failing the search (compare's rows
 * keep their answers) or growing past it. */
Test(budget, a_replica_search_ends_its_doubling_at_the_budget) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  /* Requests that fit (max_cache_len 4,096), under a TTFT no count meets. */
  const char *sets[] = {"engine.max_cache_len=4096"};
  cr_assert_eq(kvsim_scenario_parse(TOO_LONG, "s.json", ".", sets, 1, &sc, &err),
               KVSIM_OK, "%s", err.msg);
  kvsim_search_t *se = calloc(1, sizeof *se);
  cr_assert_not_null(se, "search allocated");
  se->base = &sc;
  se->kind = KVSIM_SEARCH_REPLICAS;
  se->targets[0] = (kvsim_slo_target_t){KVSIM_METRIC_TTFT, KVSIM_STAT_P99, 1e-6};
  se->ntargets = 1;
  se->no_range = true;
  kvsim_memory_budget_set(INT64_C(20) << 20); /* 20 MiB: 4 replicas, not 8 */
  int rc = kvsim_search_run(se, &err);
  kvsim_memory_budget_set(0);
  cr_assert_eq(rc, KVSIM_OK, "the search ends without an error: %s", err.msg);
  cr_assert(isnan(se->best), "no answer (%g)", se->best);
  cr_assert(se->stopped_budget, "stopped by the budget");
  cr_assert_eq(se->npoints, 4, "1, 2, 4 run, 8 refused (%d)", se->npoints);
  cr_assert(strstr(se->stopped, "hardware.replicas = 8") && strstr(se->stopped, "memory budget"),
            "names the count and the budget: %s", se->stopped);
  free(se);
  kvsim_scenario_fini(&sc);
}
