/* The typed summary and summary.json printed from it. */
#include <criterion/criterion.h>

#include <math.h>
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
  /* 30 arrivals: 3 dropped at each end (kvsim/steady.h), all finished here. */
  cr_assert_eq(s->ttft.count, s->requests_finished - 6, "one TTFT per finished request in the window");
  cr_assert_eq(s->all_ttft.count, s->requests_finished, "one untrimmed TTFT per finished request");
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

/* ---- latency.calibration and the band's ranges -------------------------- */

static bool any_range_key(const cJSON *j) {
  for (const cJSON *c = j ? j->child : NULL; c; c = c->next) {
    size_t n = c->string ? strlen(c->string) : 0;
    if (n > 6 && !strcmp(c->string + n - 6, "_range"))
      return true;
    if (any_range_key(c))
      return true;
  }
  return false;
}

Test(summary, calibration_says_what_the_step_times_rest_on_per_gpu) {
  static const struct {
    const char *gpu, *status, *borrowed_from;
    double ttft, tpot;
  } want[] = {{"h100-sxm", "kernels", "", KVSIM_GPU_BAND_KERNELS_TTFT, KVSIM_GPU_BAND_KERNELS_TPOT},
              {"rtx4090", "kernels-borrowed", "l40s", KVSIM_GPU_BAND_BORROWED_TTFT, KVSIM_GPU_BAND_BORROWED_TPOT},
              {"h20", "kernels-borrowed", "h100-sxm", KVSIM_GPU_BAND_BORROWED_TTFT, KVSIM_GPU_BAND_BORROWED_TPOT},
              {"mi300x", "spec-only", "h100-sxm", KVSIM_GPU_BAND_SPEC_TTFT, KVSIM_GPU_BAND_SPEC_TPOT}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    kvsim_gpu_t g;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_gpu_load(want[i].gpu, &g, &err), KVSIM_OK, "%s: %s", want[i].gpu, err.msg);
    kvsim_summary_t *s = calloc(1, sizeof *s);
    s->ttft.count = 10; /* a figure of something: nothing finished has no +/- */
    s->ttft.p99 = 2.0;
    kvsim_summary_set_calibration(s, &g, false);
    cr_assert_str_eq(s->calibration.gpu, want[i].gpu, "gpu named");
    cr_assert_str_eq(kvsim_cal_status_name(s->calibration.status), want[i].status, "%s status",
                     want[i].gpu);
    cr_assert_str_eq(s->calibration.borrowed_from, want[i].borrowed_from, "%s borrowed_from", want[i].gpu);
    cr_assert_str_eq(s->calibration.kernels, want[i].borrowed_from[0] ? want[i].borrowed_from : want[i].gpu,
                     "%s: the profile its step times come from", want[i].gpu);
    cr_assert_eq(s->calibration.band_ttft_rel, want[i].ttft, "%s ttft band %g", want[i].gpu,
                 s->calibration.band_ttft_rel);
    cr_assert_eq(s->calibration.band_tpot_rel, want[i].tpot, "%s tpot band %g", want[i].gpu,
                 s->calibration.band_tpot_rel);
    /* Without ranges the +/- is the band times the p99. */
    cr_assert(s->has_uncertainty, "uncertainty always present");
    cr_assert_float_eq(s->uncertainty_ttft_p99_s, s->calibration.band_ttft_rel * 2.0, 1e-9,
                       "band x p99");
    free(s);
  }
}

/* A MoE model gets the MoE band, at least as wide as its GPU's dense one. */
Test(summary, a_moe_model_gets_the_moe_band) {
  kvsim_gpu_t h100;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &h100, &err), KVSIM_OK, "%s", err.msg);
  kvsim_summary_t *s = calloc(1, sizeof *s);
  kvsim_summary_set_calibration(s, &h100, false);
  const double dense_tpot = s->calibration.band_tpot_rel;
  cr_assert_not(s->calibration.moe, "dense");
  kvsim_summary_set_calibration(s, &h100, true);
  cr_assert(s->calibration.moe, "flagged");
  cr_assert_eq(s->calibration.band_tpot_rel, KVSIM_GPU_BAND_MOE_TPOT, "MoE TPOT band");
  cr_assert_eq(s->calibration.band_ttft_rel, KVSIM_GPU_BAND_MOE_TTFT, "MoE TTFT band");
  cr_assert_gt(s->calibration.band_tpot_rel, dense_tpot, "wider than the dense band");
  free(s);
}

Test(summary, ranges_hold_the_nominal_value_and_are_min_max_over_the_runs) {
  kvsim_summary_t *s = calloc(3, sizeof *s), *e = s + 1;
  s->ttft = (kvsim_latency_t){10, 1.0, 0.8, 1.5, 6.0, 7.0};
  e[0].ttft = (kvsim_latency_t){10, 0.5, 0.4, 0.9, 1.0, 1.5};
  e[1].ttft = (kvsim_latency_t){10, 3.0, 2.0, 4.0, 5.0, 9.0};
  s->preemptions = 4;
  e[0].preemptions = 0;
  e[1].preemptions = 2; /* not monotone: the nominal run preempts most */
  s->kv_usage_peak = 0.5;
  e[0].kv_usage_peak = 0.3;
  e[1].kv_usage_peak = 0.9;
  s->requests_finished = e[0].requests_finished = e[1].requests_finished = 10;
  s->tpot = (kvsim_latency_t){10, 0.02, 0.02, 0.02, 0.02, 0.02};
  /* An edge with no TPOT sample though it finished requests has no TPOT
   * to widen by. */
  e[1].tpot = (kvsim_latency_t){0, 0, 0, 0, 0, 0};
  e[0].tpot = (kvsim_latency_t){10, 0.01, 0.01, 0.01, 0.01, 0.01};
  kvsim_summary_merge_ranges(s, e, 2, &(kvsim_band_edge_t){0.8, 0.3}, &(kvsim_band_edge_t){1.2, 1.7});
  cr_assert(s->has_ranges, "ranges set");
  cr_assert_eq(s->ttft_range.p99.lo, 1.0, "p99 lo is the lowest run");
  cr_assert_eq(s->ttft_range.p99.hi, 6.0, "p99 hi is the nominal run's, above both edges");
  cr_assert_eq(s->ttft_range.mean.hi, 3.0, "mean hi");
  cr_assert_eq(s->preemptions_range.lo, 0, "preemptions lo");
  cr_assert_eq(s->preemptions_range.hi, 4, "preemptions hi holds the nominal 4");
  cr_assert_eq(s->kv_usage_peak_range.hi, 0.9, "kv peak hi");
  cr_assert_eq(s->tpot_range.p99.lo, 0.01, "tpot lo from the edge that finished requests");
  cr_assert_eq(s->tpot_range.p99.hi, 0.02, "an edge with no sample does not pull the range to 0");
  const kvsim_range_t *all[] = {&s->ttft_range.mean,    &s->ttft_range.p50, &s->ttft_range.p90,
                                &s->ttft_range.p99,     &s->ttft_range.max, &s->preemptions_range,
                                &s->kv_usage_peak_range};
  const double nominal[] = {1.0, 0.8, 1.5, 6.0, 7.0, 4, 0.5};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    cr_assert(all[i]->lo <= nominal[i] && nominal[i] <= all[i]->hi, "range %zu [%g, %g] holds %g",
              i, all[i]->lo, all[i]->hi, nominal[i]);
  cr_assert_float_eq(s->uncertainty_ttft_p99_s, 5.0, 1e-12, "+/- is the larger distance to an end");
  cr_assert_eq(s->band_scale_lo, 0.8, "scales kept");
  cr_assert_eq(s->band_prefill_scale_hi, 1.7, "prefill scales kept");
  free(s);
}

/* The tops of the TTFT and TPOT ranges hold the calibration's band: a
 * measured figure the nominal is within rel of (|sim - meas| / meas <=
 * rel) lies inside, so the top is at least nominal / (1 - rel); an edge run
 * above that keeps its figure; the bottoms stay the runs' own; the E2E top
 * holds both bands on its two parts. */
Test(summary, range_tops_hold_the_held_out_band) {
  kvsim_summary_t *s = calloc(3, sizeof *s), *e = s + 1;
  s->calibration.band_ttft_rel = 0.44;
  s->calibration.band_tpot_rel = 0.15;
  s->ttft = (kvsim_latency_t){10, 1.0, 0.8, 1.5, 2.0, 2.5};
  s->tpot = (kvsim_latency_t){10, 0.02, 0.02, 0.03, 0.04, 0.05};
  s->e2e = (kvsim_latency_t){10, 11.0, 10.0, 15.0, 20.0, 22.0};
  s->requests_finished = e[0].requests_finished = e[1].requests_finished = 10;
  for (int i = 0; i < 2; i++) {
    e[i].ttft = s->ttft;
    e[i].tpot = s->tpot;
    e[i].e2e = s->e2e;
  }
  e[0].ttft.p50 = 0.5;
  e[1].ttft.max = 9.0; /* above the band: kept */
  kvsim_summary_merge_ranges(s, e, 2, &(kvsim_band_edge_t){0.85, 0.56}, &(kvsim_band_edge_t){1.15, 1.44});
  cr_assert_float_eq(s->ttft_range.mean.hi, 1.0 / 0.56, 1e-9, "mean top %g", s->ttft_range.mean.hi);
  cr_assert_float_eq(s->ttft_range.p99.hi, 2.0 / 0.56, 1e-9, "p99 top %g", s->ttft_range.p99.hi);
  cr_assert_eq(s->ttft_range.max.hi, 9.0, "an edge above the band keeps its figure");
  cr_assert_eq(s->ttft_range.p50.lo, 0.5, "the bottom is the runs' own");
  cr_assert_eq(s->ttft_range.mean.lo, 1.0, "no band below the nominal");
  cr_assert_float_eq(s->tpot_range.p99.hi, 0.04 / 0.85, 1e-9, "TPOT top %g", s->tpot_range.p99.hi);
  cr_assert_float_eq(s->e2e_range.mean.hi, 1.0 / 0.56 + 10.0 / 0.85, 1e-9, "E2E top %g", s->e2e_range.mean.hi);
  for (int k = 0; k < 2; k++) {
    const kvsim_range_t *t = k ? &s->ttft_range.max : &s->ttft_range.p99, *x = k ? &s->e2e_range.max : &s->e2e_range.p99;
    cr_assert_geq(x->hi, t->hi, "the E2E top %g is over its TTFT's %g", x->hi, t->hi);
  }
  cr_assert_float_eq(s->uncertainty_ttft_p99_s, 2.0 / 0.56 - 2.0, 1e-9, "+/- from the band's top");
  kvsim_range_t r = {1, 1};
  kvsim_range_hold_band(&r, 1, 1.0);
  cr_assert(isinf(r.hi), "a band of 100 %% has no top");
  kvsim_range_t none = {NAN, NAN};
  kvsim_range_hold_band(&none, 1, 0.44);
  cr_assert(isnan(none.hi), "an empty range stays empty");
  free(s);
}

/* A nominal run that finished nothing has 0 s percentiles of nothing: its
 * range is the edge runs' figures alone, empty (NAN) when none finished,
 * and no +/- is claimed around a figure that does not exist. */
Test(summary, a_nominal_run_that_finished_nothing_does_not_anchor_its_ranges) {
  kvsim_summary_t *s = calloc(3, sizeof *s), *e = s + 1;
  s->ttft = (kvsim_latency_t){0, 0, 0, 0, 0, 0};
  e[0].requests_finished = 5;
  e[0].ttft = (kvsim_latency_t){5, 2.0, 1.8, 2.5, 3.0, 3.5};
  e[1].ttft = (kvsim_latency_t){0, 0, 0, 0, 0, 0};
  s->tpot = e[0].tpot = e[1].tpot = (kvsim_latency_t){0, 0, 0, 0, 0, 0};
  kvsim_summary_merge_ranges(s, e, 2, &(kvsim_band_edge_t){0.8, 0.3},
                             &(kvsim_band_edge_t){1.2, 1.7});
  cr_assert_eq(s->ttft_range.p99.lo, 3.0, "lo from the one run that finished: %g",
               s->ttft_range.p99.lo);
  cr_assert(isinf(s->ttft_range.p99.hi),
            "hi unbounded: two of the three runs finished nothing, so no figure bounds them: %g",
            s->ttft_range.p99.hi);
  cr_assert(isnan(s->tpot_range.p99.lo) && isnan(s->tpot_range.p99.hi),
            "no run finished: empty range [%g, %g]", s->tpot_range.p99.lo, s->tpot_range.p99.hi);
  cr_assert(isnan(s->uncertainty_ttft_p99_s), "no +/- around a figure of nothing: %g",
            s->uncertainty_ttft_p99_s);
  free(s);
}

/* The slow edge finished nothing (cut off by output.max_time_s, or every
 * request rejected) while the nominal and fast runs finished: the latency
 * there lies beyond the run, so the ranges have no finite top, and a
 * capacity check against them fails instead of reading the nominal p99 as
 * the slow edge's. */
Test(summary, an_edge_that_finished_nothing_leaves_the_range_open_above) {
  kvsim_summary_t *s = calloc(3, sizeof *s), *e = s + 1;
  s->requests_finished = e[0].requests_finished = 8;
  s->ttft = (kvsim_latency_t){8, 1.0, 0.9, 1.2, 1.4, 1.5};
  e[0].ttft = (kvsim_latency_t){8, 0.5, 0.4, 0.6, 0.7, 0.8};
  s->e2e = (kvsim_latency_t){8, 3.0, 2.9, 3.2, 3.4, 3.5};
  e[0].e2e = (kvsim_latency_t){8, 2.0, 1.9, 2.2, 2.4, 2.5};
  s->requests_per_s = 4;
  e[0].requests_per_s = 5; /* e[1]: 0 req/s, nothing finished */
  kvsim_summary_merge_ranges(s, e, 2, &(kvsim_band_edge_t){0.8, 0.3},
                             &(kvsim_band_edge_t){1.2, 1.7});
  cr_assert_eq(s->ttft_range.p99.lo, 0.7, "lo from the fast edge: %g", s->ttft_range.p99.lo);
  cr_assert(
      isinf(s->ttft_range.p99.hi) && isinf(s->ttft_range.mean.hi) && isinf(s->e2e_range.p99.hi),
      "no finite top: %g %g %g", s->ttft_range.p99.hi, s->ttft_range.mean.hi, s->e2e_range.p99.hi);
  cr_assert(!(s->ttft_range.p99.hi <= 2.0), "a 2 s target is not met at the slow edge");
  cr_assert(isnan(s->tpot_range.p99.lo), "no TPOT anywhere: still empty, not opened");
  cr_assert_eq(s->requests_per_s_range.lo, 0, "throughput down to 0: %g",
               s->requests_per_s_range.lo);
  cr_assert(isinf(s->uncertainty_ttft_p99_s), "the +/- is unbounded too: %g",
            s->uncertainty_ttft_p99_s);
  free(s);
  /* In summary.json the open end is null beside a number. */
  kvsim_scenario_t sc;
  s = calloc(2, sizeof *s);
  run(&sc, s);
  cr_assert(s[0].requests_finished > 0, "the run finished requests");
  s[1] = s[0];
  s[1].requests_finished = 0;
  s[1].ttft = s[1].tpot = s[1].e2e = s[1].queue = (kvsim_latency_t){0, 0, 0, 0, 0, 0};
  kvsim_summary_merge_ranges(s, s + 1, 1, &(kvsim_band_edge_t){1.4, 1.4},
                             &(kvsim_band_edge_t){1.4, 1.4});
  cJSON *j = kvsim_summary_json(s, &sc);
  const cJSON *r = cJSON_GetObjectItem(
      cJSON_GetObjectItem(cJSON_GetObjectItem(j, "latency"), "ttft_s"), "p99_range");
  cr_assert(cJSON_IsNumber(cJSON_GetArrayItem(r, 0)) && cJSON_IsNull(cJSON_GetArrayItem(r, 1)),
            "p99_range [number, null]");
  cJSON_Delete(j);
  kvsim_scenario_fini(&sc);
  free(s);
}

/* The slow edge ended with 5 of its 100 served requests in flight: their
 * latencies lie past the run, so no finite figure bounds its p99 or its
 * mean and max; its p50 and p90 (5 % < 10 %) are still bounded. */
Test(summary, an_edge_that_left_requests_in_flight_opens_the_tops_it_does_not_bound) {
  kvsim_summary_t *s = calloc(3, sizeof *s), *e = s + 1;
  s->requests_finished = e[0].requests_finished = 100;
  e[1].requests_finished = 95;
  e[1].running_at_end = 2;
  e[1].waiting_at_end = 3;
  e[1].requests_rejected = 50; /* rejected: not served, not in the share */
  s->ttft = (kvsim_latency_t){100, 1.0, 0.9, 1.2, 1.4, 1.5};
  e[0].ttft = (kvsim_latency_t){100, 0.5, 0.4, 0.6, 0.7, 0.8};
  e[1].ttft = (kvsim_latency_t){95, 2.0, 1.8, 2.2, 2.4, 2.5};
  kvsim_summary_merge_ranges(s, e, 2, &(kvsim_band_edge_t){0.8, 0.3},
                             &(kvsim_band_edge_t){1.2, 1.7});
  cr_assert_eq(s->ttft_range.p50.hi, 1.8, "p50 bounded: %g", s->ttft_range.p50.hi);
  cr_assert_eq(s->ttft_range.p90.hi, 2.2, "p90 bounded (5 %% in flight < 10 %%): %g",
               s->ttft_range.p90.hi);
  cr_assert(isinf(s->ttft_range.p99.hi) && isinf(s->ttft_range.mean.hi) &&
                isinf(s->ttft_range.max.hi),
            "p99, mean and max open: %g %g %g", s->ttft_range.p99.hi, s->ttft_range.mean.hi,
            s->ttft_range.max.hi);
  cr_assert_eq(s->ttft_range.p99.lo, 0.7, "the bottom stays: %g", s->ttft_range.p99.lo);
  cr_assert(strstr(s->uncertainty_source, "unfinished"), "said: %s", s->uncertainty_source);
  free(s);
}

Test(summary, range_keys_sit_beside_their_figures_and_only_with_ranges) {
  kvsim_scenario_t sc;
  kvsim_summary_t *s = calloc(2, sizeof *s);
  run(&sc, s);
  cJSON *j = kvsim_summary_json(s, &sc);
  cr_assert(!any_range_key(j), "no *_range key without the edge runs");
  const cJSON *cal = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "latency"), "calibration");
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cal, "status")), "kernels-borrowed",
                   "l4");
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cal, "gpu")), "l4", "gpu");
  cr_assert(cJSON_IsString(cJSON_GetObjectItem(cal, "kernels")), "kernels");
  cr_assert(cJSON_IsString(cJSON_GetObjectItem(cal, "source")), "source");
  cr_assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "latency"), "band"), "no band object");
  cJSON_Delete(j);
  s[1] = s[0];
  s[1].ttft.p99 *= 2;
  kvsim_summary_merge_ranges(s, s + 1, 1, &(kvsim_band_edge_t){0.6, 0.6}, &(kvsim_band_edge_t){1.4, 1.4});
  j = kvsim_summary_json(s, &sc);
  const cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "latency"), "ttft_s");
  static const char *const keys[] = {"count",     "mean", "mean_range", "p50", "p50_range", "p90",
                                     "p90_range", "p99",  "p99_range",  "max", "max_range"};
  const cJSON *c = t->child;
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++, c = c->next)
    cr_assert_str_eq(c ? c->string : "(none)", keys[i], "ttft_s key %zu", i);
  const cJSON *p99 = cJSON_GetObjectItem(t, "p99_range");
  cr_assert_eq(cJSON_GetArraySize(p99), 2, "[lo, hi]");
  cr_assert_eq(cJSON_GetArrayItem(p99, 1)->valuedouble, s->ttft.p99 * 2, "hi from the edge");
  cr_assert_not_null(
      cJSON_GetObjectItem(cJSON_GetObjectItem(j, "throughput"), "requests_per_s_range"),
      "throughput range");
  cr_assert_not_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "kv_cache"), "usage_peak_range"),
                     "kv");
  cr_assert_not_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "preemptions"), "total_range"),
                     "pre");
  cr_assert_not_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "latency"), "band"), "band object");
  cJSON_Delete(j);
  kvsim_scenario_fini(&sc);
  free(s);
}

Test(summary, a_gpu_without_its_own_tables_is_diagnosed_and_said_on_the_run_line) {
  kvsim_scenario_t sc;
  kvsim_summary_t *s = malloc(sizeof *s);
  run(&sc, s); /* l4: the L40S's tables */
  bool found = false;
  for (int i = 0; i < s->ndiagnosis; i++)
    found |= !strcmp(s->diagnosis[i].code, "uncalibrated_gpu") &&
             strstr(s->diagnosis[i].message, "kernels-borrowed") != NULL &&
             strstr(s->diagnosis[i].message, "l40s") != NULL;
  cr_assert(found, "uncalibrated_gpu finding on l4");
  char line[1024];
  kvsim_summary_run_line(s, "out", line, sizeof line);
  cr_assert(strstr(line, "l4 has no kernel tables of its own: kernels-borrowed, those of l40s") != NULL,
            "run line says so: %s", line);
  cr_assert(strstr(line, "-> out/") != NULL, "the folder ends the line: %s", line);
  /* summary.json names the profile ("kernels"), no fitted rows. */
  cJSON *j = kvsim_summary_json(s, &sc);
  cr_assert_not_null(j, "json built");
  const cJSON *cal = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "latency"), "calibration");
  cr_assert_not_null(cal, "latency.calibration");
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(cal, "kernels");
  cr_assert(cJSON_IsString(k) && !strcmp(k->valuestring, "l40s"), "kernels named");
  k = cJSON_GetObjectItemCaseSensitive(cal, "status");
  cr_assert(cJSON_IsString(k) && !strcmp(k->valuestring, "kernels-borrowed"), "status named");
  k = cJSON_GetObjectItemCaseSensitive(cal, "borrowed_from");
  cr_assert(cJSON_IsString(k) && !strcmp(k->valuestring, "l40s"), "borrowed_from named");
  cr_assert_null(cJSON_GetObjectItemCaseSensitive(cal, "rows"), "no fitted rows any more");
  cr_assert_null(cJSON_GetObjectItemCaseSensitive(cal, "moe_efficiency_fitted"), "no MoE fit flag");
  cJSON_Delete(j);
  kvsim_scenario_fini(&sc);
  kvsim_err err = {0};
  const char *sets[] = {"hardware.gpu=h100-sxm"};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", sets, 1, &sc, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(kvsim_study_run(&sc, NULL, s, &err), KVSIM_OK, "run: %s", err.msg);
  for (int i = 0; i < s->ndiagnosis; i++)
    cr_assert_str_neq(s->diagnosis[i].code, "uncalibrated_gpu", "a GPU with its own tables is not flagged");
  kvsim_summary_run_line(s, "out", line, sizeof line);
  cr_assert(strstr(line, "no kernel tables") == NULL, "nothing said for a GPU with tables: %s", line);
  kvsim_scenario_fini(&sc);
  /* A spec-only GPU is a warning, not information. */
  const char *amd[] = {"hardware.gpu=mi300x"};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", amd, 1, &sc, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_run(&sc, NULL, s, &err), KVSIM_OK, "run: %s", err.msg);
  found = false;
  for (int i = 0; i < s->ndiagnosis; i++)
    found |= !strcmp(s->diagnosis[i].code, "uncalibrated_gpu") && !strcmp(s->diagnosis[i].severity, "warning");
  cr_assert(found, "uncalibrated_gpu warning for a spec-only GPU");
  kvsim_scenario_fini(&sc);
  free(s);
}

/* Regression: with no request finished the line printed TTFT p50 0.000 s,
 * which reads as instant service. */
Test(summary, a_run_where_nothing_finished_prints_no_latency_figures) {
  kvsim_summary_t *s = calloc(1, sizeof *s);
  snprintf(s->name, sizeof s->name, "t");
  s->requests_total = 2;
  s->requests_rejected = 2;
  s->calibration.status = KVSIM_CAL_KERNELS;
  char line[1024];
  kvsim_summary_run_line(s, "out", line, sizeof line);
  cr_assert(strstr(line, "(0 finished, 2 rejected)") &&
                strstr(line, "no request finished: no latency figures"),
            "says so: %s", line);
  cr_assert_null(strstr(line, "TTFT"), "no percentile of nothing: %s", line);
  s->requests_finished = 1;
  kvsim_summary_run_line(s, "out", line, sizeof line);
  cr_assert(strstr(line, "TTFT p50 0.000 s"), "one finished: the figures (%s)", line);
  free(s);
}

/* Regression: with no request finished the p99 of nothing was 0 s and
 * every target read as met; a run cut off before any request finished
 * served nothing and meets no SLO. */
Test(summary, a_run_where_nothing_finished_meets_no_slo_and_says_why) {
  static const char *cut =
      "{ \"name\": \"cut\", \"seed\": 1, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": "
      "\"l4\" },"
      "  \"engine\": { \"max_model_len\": 2048 }, \"output\": { \"max_time_s\": 0.5 },"
      "  \"slo\": { \"ttft_p99_s\": 2, \"tpot_p99_s\": 0.1 },"
      "  \"workload\": { \"synthetic\": { \"requests\": 4, \"arrival\": { \"process\": "
      "\"constant\", \"rate\": 100 },"
      "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 200 },"
      "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 1000 } } } }";
  kvsim_scenario_t sc;
  kvsim_summary_t *s = malloc(sizeof *s);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(cut, "s.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(kvsim_study_run(&sc, NULL, s, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(s->requests_finished, 0, "cut off at 0.5 s before any of 1000 tokens is out (%lld)",
               (long long)s->requests_finished);
  cr_assert(s->slo_ttft_p99.given && !s->slo_ttft_p99.met, "the TTFT target is not met");
  cr_assert(s->slo_tpot_p99.given && !s->slo_tpot_p99.met, "the TPOT target is not met");
  cJSON *j = kvsim_summary_json(s, &sc);
  cr_assert_not_null(j, "json built");
  const cJSON *slo = cJSON_GetObjectItemCaseSensitive(j, "slo");
  const char *keys[] = {"ttft_p99_s", "tpot_p99_s"};
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(num(j, "slo", keys[k], "met"), 0, "summary.json: %s met false", keys[k]);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(slo, keys[k]);
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "actual")),
              "summary.json: %s actual kept, null: no p99 of nothing", keys[k]);
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(t, "reason");
    cr_assert(cJSON_IsString(why) && !strcmp(why->valuestring, "no request finished"),
              "summary.json: %s says why beside met", keys[k]);
  }
  cr_assert_eq(num(j, "slo", "ttft_p99_s", "target"), 2, "summary.json: the target kept");
  cr_assert_null(cJSON_GetObjectItemCaseSensitive(slo, "e2e_p99_s"),
                 "no block for a target not given");
  cJSON_Delete(j);
  kvsim_scenario_fini(&sc);

  /* A run that served requests keeps the block as it was: no reason key. */
  run(&sc, s);
  cr_assert_gt(s->requests_finished, 0, "requests finished");
  j = kvsim_summary_json(s, &sc);
  cr_assert_not_null(j, "json built");
  cr_assert_null(cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "slo"),
                                                      "ttft_p99_s"),
                     "reason"),
                 "no reason when requests finished");
  cr_assert_eq(num(j, "slo", "ttft_p99_s", "met"), s->slo_ttft_p99.actual <= 0.05,
               "met by its p99");
  cJSON_Delete(j);
  kvsim_scenario_fini(&sc);
  free(s);
}

/* Regression: with one output token per request no request has a TPOT;
 * its statistics printed as 0 (the run line "TPOT p50 0.0000 s [nan,
 * nan]") and the TPOT target as met by an actual of 0. Now the statistics
 * are null beside count 0, the target's actual is null and it is met with
 * the reason (no request missed it), and the line says there is no TPOT. */
Test(summary, a_run_where_no_request_had_a_second_token_has_no_tpot) {
  static const char *one =
      "{ \"name\": \"one\", \"seed\": 1, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": "
      "\"l4\" }, \"engine\": { \"max_model_len\": 2048 },"
      "  \"slo\": { \"ttft_p99_s\": 2, \"tpot_p99_s\": 0.1 },"
      "  \"workload\": { \"synthetic\": { \"requests\": 4, \"arrival\": { \"process\": "
      "\"constant\", \"rate\": 1 },"
      "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 200 },"
      "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 1 } } } }";
  kvsim_scenario_t sc;
  kvsim_summary_t *s = malloc(sizeof *s);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(one, "s.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(kvsim_study_run_band(&sc, NULL, true, s, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(s->requests_finished, 4, "all 4 finished");
  cr_assert_eq(s->tpot.count, 0, "no TPOT sample");
  cr_assert(isnan(s->tpot.p50) && isnan(s->tpot.p99) && isnan(s->tpot.mean) && isnan(s->tpot.max),
            "the statistics of no sample are not 0 s: p50 %g", s->tpot.p50);
  cr_assert(s->slo_tpot_p99.met && isnan(s->slo_tpot_p99.actual), "met, with no actual");
  cr_assert_str_eq(s->slo_tpot_p99.reason, "no request had a second token", "reason");
  cr_assert(s->slo_ttft_p99.met && !s->slo_ttft_p99.reason[0], "TTFT as before");

  cJSON *j = kvsim_summary_json(s, &sc);
  cr_assert_not_null(j, "json built");
  const cJSON *tp =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "latency"), "tpot_s");
  cr_assert_eq(num(j, "latency", "tpot_s", "count"), 0, "count kept");
  const char *stats[] = {"mean", "p50", "p90", "p99", "max"};
  for (int k = 0; k < 5; k++)
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(tp, stats[k])), "tpot_s.%s null",
              stats[k]);
  cr_assert_gt(num(j, "latency", "ttft_s", "p99"), 0, "TTFT has its figures");
  const cJSON *t =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "slo"), "tpot_p99_s");
  cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "actual")), "slo actual null");
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "met")), "slo met");
  cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "reason")),
                   "no request had a second token", "slo reason beside met");
  cJSON_Delete(j);

  char line[1024];
  kvsim_summary_run_line(s, "out", line, sizeof line);
  cr_assert(strstr(line, "TPOT - (no request had a second token)"), "no TPOT: %s", line);
  cr_assert_null(strstr(line, "nan"), "no nan: %s", line);
  cr_assert(strstr(line, "TTFT p50 "), "the TTFT figures stay: %s", line);
  kvsim_scenario_fini(&sc);
  free(s);
}
