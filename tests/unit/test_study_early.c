/* Search points stopped once their miss is decided (study/early.c): the
 * verdict is exactly the full run's, over many seeds and rates around
 * the knee; the steady window's warm-up and drain never decide; a run
 * not stopped gives the full run's summary; a stopped point is never
 * served as a full run. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/scenario.h"
#include "kvsim/stats.h"
#include "kvsim/study.h"
#include "study/early.h"
#include "study/run.h"

/* Knee near 32 req/s for ttft_p99 1 s, tpot_p99 60 ms (kvsim plan). */
#define TINY                                                                                      \
  "{ \"name\": \"tiny\", \"seed\": 2, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" }," \
  "  \"engine\": { \"max_model_len\": 4096 },"                                                    \
  "  \"workload\": { \"synthetic\": { \"requests\": 1000, \"arrival\": { \"process\": \"poisson\", \"rate\": 20 }," \
  "  \"prompt_tokens\": { \"dist\": \"lognormal\", \"mean\": 400, \"sigma\": 0.8, \"max\": 2000 }," \
  "  \"output_tokens\": { \"dist\": \"lognormal\", \"mean\": 100, \"sigma\": 0.8, \"max\": 800 } } } }"

static void load(kvsim_scenario_t *sc) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(TINY, "tiny.json", ".", NULL, 0, sc, &err), KVSIM_OK, "parse: %s",
               err.msg);
}

/* The search's verdict on a full run (search.c evaluate). */
static bool meets(const kvsim_summary_t *s, const kvsim_slo_target_t *t, int nt) {
  if (s->requests_rejected > 0 || s->requests_finished == 0)
    return false;
  for (int i = 0; i < nt; i++) {
    const kvsim_latency_t *l = kvsim_summary_latency(s, t[i].metric);
    if (l->count > 0 && !(kvsim_latency_stat(l, t[i].stat) <= t[i].limit_s))
      return false;
  }
  return true;
}

Test(study_early, need_is_the_count_that_puts_the_quantile_past_the_limit) {
  cr_assert_eq(kvsim__early_need(1, 0.99), 1);
  cr_assert_eq(kvsim__early_need(100, 0.99), 2);
  cr_assert_eq(kvsim__early_need(3200, 0.99), 33);
  /* Against GSL's quantile: `need` values past 1.0 put every sample size
   * up to the window past it; one fewer, with the rest at 0 and those
   * barely past (so that interpolating cannot lift it), leaves some size
   * at or under. */
  for (int64_t w = 1; w <= 400; w += 7) {
    for (int qi = 0; qi < 3; qi++) {
      const double q = qi == 0 ? 0.5 : qi == 1 ? 0.9 : 0.99;
      int64_t need = kvsim__early_need(w, q);
      bool tight = false;
      for (int64_t n = need > 0 ? need : 1; n <= w; n++) {
        for (int k = 0; k < 2; k++) {
          int64_t past = k == 0 ? need : need - 1;
          kvsim_dist_t d;
          kvsim_dist_init(&d);
          for (int64_t i = 0; i < n; i++)
            cr_assert_eq(kvsim_dist_add(&d, i < past ? 1.0 + 1e-6 : 0.0), KVSIM_OK);
          double v = kvsim_dist_quantile(&d, q);
          kvsim_dist_fini(&d);
          if (k == 0)
            cr_assert_gt(v, 1.0, "w %lld q %g n %lld: %lld past gives %g", (long long)w, q,
                         (long long)n, (long long)past, v);
          else
            tight |= v <= 1.0;
        }
      }
      cr_assert(tight, "w %lld q %g: need %lld is not the least", (long long)w, q, (long long)need);
    }
  }
}

static kvsim_request_t finished(int64_t arrival, double ttft_s) {
  kvsim_request_t r;
  memset(&r, 0, sizeof r);
  r.status = KVSIM_REQ_FINISHED;
  r.arrival = arrival;
  r.first_scheduled = arrival;
  r.first_token = arrival + (int64_t)(ttft_s * 1e9);
  r.finish = r.first_token + 1000000000;
  r.num_output = 11;
  return r;
}

Test(study_early, warmup_and_drain_requests_never_decide) {
  /* 1,000 arrivals 1 ms apart: the window drops 100 at each end and
   * holds 800, of which 9 past the limit put the p99 past it. */
  int64_t a[1000];
  for (int i = 0; i < 1000; i++)
    a[i] = (int64_t)i * 1000000;
  const kvsim_slo_target_t t = {KVSIM_METRIC_TTFT, KVSIM_STAT_P99, 1.0};
  kvsim__early_t e;
  cr_assert_eq(kvsim__early_init_arrivals(&e, a, 1000, &t, 1), KVSIM_OK);
  cr_assert(e.active);
  cr_assert_eq(e.need[0], 9);
  for (int i = 0; i < 100; i++) {
    kvsim_request_t w = finished(a[i], 10.0), d = finished(a[999 - i], 10.0);
    cr_assert(!kvsim__early_request(&e, &w), "a warm-up request decided");
    cr_assert(!kvsim__early_request(&e, &d), "a drain request decided");
  }
  /* Exactly at the limit, and within the rounding margin, is not past. */
  kvsim_request_t at = finished(a[500], 1.0);
  for (int i = 0; i < 20; i++)
    cr_assert(!kvsim__early_request(&e, &at));
  for (int i = 0; i < 8; i++) {
    kvsim_request_t r = finished(a[200 + i], 1.5);
    cr_assert(!kvsim__early_request(&e, &r), "decided after %d", i + 1);
  }
  kvsim_request_t r = finished(a[300], 1.5);
  cr_assert(kvsim__early_request(&e, &r), "9 past decide");
  /* A mean is never decided early. */
  const kvsim_slo_target_t m = {KVSIM_METRIC_TTFT, KVSIM_STAT_MEAN, 1.0};
  cr_assert_eq(kvsim__early_init_arrivals(&e, a, 1000, &m, 1), KVSIM_OK);
  cr_assert(!e.active);
}

/* One point run both ways: the same verdict; a run not stopped gives the
 * full run's summary byte for byte. Returns whether it stopped. */
static bool both_ways(const kvsim_scenario_t *base, double rate, uint64_t seed,
                      const kvsim_slo_target_t *t, int nt, bool *verdict) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_copy(base, &sc, &err), KVSIM_OK);
  sc.seed = seed;
  cr_assert_eq(kvsim_study_set_rate(&sc, "synthetic.arrival.rate", rate, &err), KVSIM_OK, "%s", err.msg);
  kvsim_summary_t *full = calloc(1, sizeof *full), *part = calloc(1, sizeof *part);
  kvsim__early_t *e = calloc(1, sizeof *e);
  cr_assert(full && part && e);
  cr_assert_eq(kvsim_study_run(&sc, NULL, full, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim__early_init(e, &sc, t, nt, &err), KVSIM_OK, "%s", err.msg);
  cr_assert(e->active, "the rule applies to a synthetic open loop");
  cr_assert_eq(e->window.start_ns, full->steady.start_ns, "the window read first is the run's");
  cr_assert_eq(e->window.end_ns, full->steady.end_ns);
  int rc = kvsim__study_run_early(&sc, NULL, NULL, e, part, &err);
  cr_assert(rc == KVSIM_OK || rc == KVSIM__STUDY_STOPPED, "rc %d: %s", rc, err.msg);
  bool stopped = rc == KVSIM__STUDY_STOPPED;
  *verdict = meets(full, t, nt);
  if (stopped)
    cr_assert(!*verdict, "rate %g seed %llu: stopped early but the full run meets", rate,
              (unsigned long long)seed);
  else
    cr_assert_eq(memcmp(full, part, sizeof *full), 0, "rate %g seed %llu: a run not stopped differs",
                 rate, (unsigned long long)seed);
  free(e);
  free(full);
  free(part);
  kvsim_scenario_fini(&sc);
  return stopped;
}

Test(study_early, the_verdict_is_the_full_runs_over_seeds_and_rates, .timeout = 300) {
  kvsim_scenario_t base;
  load(&base);
  const kvsim_slo_target_t p99[] = {{KVSIM_METRIC_TTFT, KVSIM_STAT_P99, 1.0},
                                    {KVSIM_METRIC_TPOT, KVSIM_STAT_P99, 0.060}};
  const kvsim_slo_target_t p90[] = {{KVSIM_METRIC_E2E, KVSIM_STAT_P90, 6.0}};
  const double rates[] = {24, 29, 31, 32, 33, 35, 40, 56};
  int stopped = 0, met = 0, missed_in_full = 0;
  for (uint64_t seed = 1; seed <= 6; seed++)
    for (size_t k = 0; k < sizeof rates / sizeof *rates; k++)
      for (int s = 0; s < 2; s++) {
        bool verdict;
        stopped += both_ways(&base, rates[k], seed, s ? p90 : p99, s ? 1 : 2, &verdict);
        met += verdict;
        missed_in_full += !verdict;
      }
  /* The test means something: both verdicts occur, and misses stop. */
  cr_assert_gt(met, 10);
  cr_assert_gt(missed_in_full, 10);
  cr_assert_gt(stopped, missed_in_full / 2, "%d of %d misses stopped early", stopped, missed_in_full);
  kvsim_scenario_fini(&base);
}

Test(study_early, a_search_finds_the_same_answer_and_points_either_way) {
  kvsim_scenario_t base;
  load(&base);
  kvsim_err err = {0};
  kvsim_search_t *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
  cr_assert(a && b);
  a->base = &base;
  a->kind = KVSIM_SEARCH_RATE;
  a->tolerance = 0.02;
  a->ntargets = 2;
  a->targets[0] = (kvsim_slo_target_t){KVSIM_METRIC_TTFT, KVSIM_STAT_P99, 1.0};
  a->targets[1] = (kvsim_slo_target_t){KVSIM_METRIC_TPOT, KVSIM_STAT_P99, 0.060};
  *b = *a;
  b->early_stop = true;
  cr_assert_eq(kvsim_search_run(a, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_search_run(b, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(a->best, b->best);
  cr_assert_eq(a->range[0], b->range[0]);
  cr_assert_eq(a->range[1], b->range[1]);
  cr_assert_eq(a->npoints, b->npoints);
  int stopped = 0;
  for (int i = 0; i < a->npoints; i++) {
    cr_assert_eq(a->points[i].x, b->points[i].x);
    cr_assert_eq(a->points[i].meets, b->points[i].meets);
    cr_assert(!a->points[i].stopped_early, "no point stops unless asked");
    if (b->points[i].stopped_early) {
      stopped++;
      cr_assert(isnan(b->points[i].actual[0]), "a stopped point has no figures");
      cr_assert(!strncmp(b->points[i].note, "stopped early", 13), "note: %s", b->points[i].note);
    } else {
      cr_assert_eq(a->points[i].actual[0], b->points[i].actual[0]);
    }
  }
  cr_assert_gt(stopped, 0);
  free(a);
  free(b);
  kvsim_scenario_fini(&base);
}

Test(study_early, a_stopped_point_is_never_served_as_a_full_run) {
  kvsim_scenario_t sc;
  load(&sc);
  kvsim_err err = {0};
  kvsim_summary_t *s = calloc(1, sizeof *s);
  cr_assert(s);
  kvsim__study_memo_begin();
  kvsim__study_memo_put_stopped(&sc, "tag");
  cr_assert(kvsim__study_memo_get_stopped(&sc, "tag"));
  cr_assert(!kvsim__study_memo_get_stopped(&sc, "other"), "stopped for other targets");
  cr_assert(!kvsim__study_memo_get(&sc, s), "a full run is not served by a stopped point");
  cr_assert_eq(kvsim_study_run(&sc, NULL, s, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_gt(s->requests_finished, 0, "and runs");
  kvsim__study_memo_end();
  free(s);
  kvsim_scenario_fini(&sc);
}
