/* The typed summary and summary.json printed from it. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/study.h"
#include "kvsim/summary.h"

static const char *text =
    "{ \"name\": \"sum\", \"seed\": 5, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" },"
    "  \"engine\": { \"max_model_len\": 2048, \"max_num_seqs\": 2 }, \"slo\": { \"ttft_p99_s\": 0.05 },"
    "  \"workload\": { \"synthetic\": { \"requests\": 30, \"arrival\": { \"process\": \"poisson\", \"rate\": 40 },"
    "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 300 },"
    "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 20 } } } }";

static void run(kvsim_scenario_t *sc, kvsim_summary_t *s) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", NULL, 0, sc, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_run(sc, NULL, s, &err), KVSIM_OK, "run: %s", err.msg);
}

static double num(const cJSON *j, const char *a, const char *b, const char *c) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);
  if (b)
    x = cJSON_GetObjectItemCaseSensitive(x, b);
  if (c)
    x = cJSON_GetObjectItemCaseSensitive(x, c);
  cr_assert(cJSON_IsNumber(x) || cJSON_IsBool(x), "%s.%s.%s present", a, b ? b : "", c ? c : "");
  return cJSON_IsBool(x) ? cJSON_IsTrue(x) : x->valuedouble;
}

Test(summary, summary_json_is_printed_from_the_struct_in_the_contract_order) {
  kvsim_scenario_t sc;
  kvsim_summary_t *s = malloc(sizeof *s);
  run(&sc, s);
  cJSON *j = kvsim_summary_json(s, &sc);
  cr_assert_not_null(j, "json built");
  const char *order[] = {"name", "seed", "kvsim_version", "config", "workload_resolved", "memory_plan",
                         "requests", "simulated_time_s", "makespan_s", "throughput", "latency",
                         "kv_cache", "preemptions", "prefix_cache", "slo", "engine", "diagnosis"};
  const cJSON *c = j->child;
  for (size_t i = 0; i < sizeof order / sizeof *order; i++, c = c->next) {
    cr_assert_not_null(c, "key %zu present", i);
    cr_assert_str_eq(c->string, order[i], "key %zu in order", i);
  }
  cr_assert_null(c, "no key past diagnosis (no CPU tier here)");
  cr_assert_eq(num(j, "requests", "total", NULL), 30, "30 requests");
  cr_assert_eq(num(j, "requests", "finished", NULL), (double)s->requests_finished, "finished");
  cr_assert_eq(num(j, "latency", "ttft_s", "p99"), s->ttft.p99, "ttft p99 from the struct");
  cr_assert_eq(num(j, "latency", "tpot_s", "mean"), s->tpot.mean, "tpot mean from the struct");
  cr_assert_eq(num(j, "memory_plan", "num_gpu_blocks", NULL), (double)s->plan.num_gpu_blocks, "plan");
  cr_assert_eq(num(j, "memory_plan", "pool_usable_blocks", NULL), (double)s->pool_usable_blocks, "pool");
  cr_assert_eq(num(j, "slo", "ttft_p99_s", "actual"), s->slo_ttft_p99.actual, "slo actual");
  cr_assert_eq(num(j, "slo", "ttft_p99_s", "met"), s->slo_ttft_p99.met, "slo met");
  cr_assert(s->slo_ttft_p99.given && !s->slo_tpot_p99.given, "only the ttft target is given");
  cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "diagnosis")), s->ndiagnosis, "diagnoses");
  cr_assert_eq(s->ttft.count, s->requests_finished, "one TTFT per finished request");
  cr_assert(s->ttft.p50 <= s->ttft.p90 && s->ttft.p90 <= s->ttft.p99 && s->ttft.p99 <= s->ttft.max,
            "percentiles ordered");
  cJSON_Delete(j);
  kvsim_scenario_fini(&sc);
  free(s);
}

Test(summary, the_diagnosis_reads_the_resolved_limits) {
  kvsim_scenario_t sc;
  kvsim_summary_t *s = malloc(sizeof *s);
  run(&sc, s);
  /* max_num_seqs 2 at 40 req/s: the scheduler limit binds. */
  bool found = false;
  for (int i = 0; i < s->ndiagnosis; i++)
    if (!strcmp(s->diagnosis[i].code, "max_num_seqs_bound")) {
      found = true;
      cr_assert(strstr(s->diagnosis[i].message, "max_num_seqs (2)") != NULL,
                "quotes the resolved limit: %s", s->diagnosis[i].message);
    }
  cr_assert(found, "a max_num_seqs-bound run says so (%d findings)", s->ndiagnosis);
  kvsim_scenario_fini(&sc);
  free(s);
}

Test(summary, metric_and_statistic_names) {
  kvsim_metric m;
  kvsim_stat st;
  cr_assert_eq(kvsim_metric_parse("queue", &m), KVSIM_OK, "queue is a metric");
  cr_assert_eq(m, KVSIM_METRIC_QUEUE, "queue");
  cr_assert_eq(kvsim_metric_parse("itl", &m), KVSIM_EINVAL, "itl is not");
  cr_assert_eq(kvsim_stat_parse("p90", &st), KVSIM_OK, "p90 is a statistic");
  cr_assert_eq(st, KVSIM_STAT_P90, "p90");
  cr_assert_eq(kvsim_stat_parse("p95", &st), KVSIM_EINVAL, "p95 is not");
  kvsim_latency_t l = {3, 1, 2, 3, 4, 5};
  cr_assert_eq(kvsim_latency_stat(&l, KVSIM_STAT_MEAN), 1, "mean");
  cr_assert_eq(kvsim_latency_stat(&l, KVSIM_STAT_P99), 4, "p99");
}
