/* The study's cache of simulated points (study/memo.c) and the band
 * edges run in the advice's pool: a point asked twice inside a study is
 * run once and gives the summary a fresh run gives; a changed override
 * or step-time scale is another point; outside a study nothing is kept. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/scenario.h"
#include "kvsim/study.h"
#include "study/run.h"

#define TINY                                                                                      \
  "{ \"name\": \"tiny\", \"seed\": 2, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" }," \
  "  \"engine\": { \"max_model_len\": 2048 },"                                                    \
  "  \"workload\": { \"synthetic\": { \"requests\": 40, \"arrival\": { \"process\": \"poisson\", \"rate\": 20 }," \
  "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 300 },"                                \
  "  \"output_tokens\": { \"dist\": \"uniform\", \"min\": 4, \"max\": 60 } } } }"

static void load(kvsim_scenario_t *sc) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(TINY, "tiny.json", ".", NULL, 0, sc, &err), KVSIM_OK, "parse: %s", err.msg);
}

Test(study_memo, a_repeated_point_is_served_from_the_cache_and_equals_a_fresh_run) {
  kvsim_scenario_t sc;
  load(&sc);
  kvsim_err err = {0};
  kvsim_summary_t *fresh = calloc(1, sizeof *fresh), *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
  cr_assert(fresh && a && b);
  cr_assert_eq(kvsim_study_run(&sc, NULL, fresh, &err), KVSIM_OK, "%s", err.msg);
  int64_t h0 = kvsim__study_memo_hits();
  cr_assert_eq(kvsim_study_run(&sc, NULL, a, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim__study_memo_hits(), h0, "outside a study nothing is cached");

  kvsim__study_memo_begin();
  cr_assert_eq(kvsim_study_run(&sc, NULL, a, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim__study_memo_hits(), h0, "the first run of a point runs");
  memset(b, 0x5a, sizeof *b);
  cr_assert_eq(kvsim_study_run(&sc, NULL, b, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim__study_memo_hits(), h0 + 1, "the second is a hit");
  cr_assert_eq(memcmp(b, fresh, sizeof *b), 0, "the cached summary is the fresh run's");

  /* Another rate is another point. */
  kvsim_scenario_t other;
  cr_assert_eq(kvsim_scenario_copy(&sc, &other, &err), KVSIM_OK);
  cr_assert_eq(kvsim_scenario_set_workload(&other, "synthetic.arrival.rate", 40, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_run(&other, NULL, b, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim__study_memo_hits(), h0 + 1, "a changed override misses");
  cr_assert_neq(b->requests_per_s, fresh->requests_per_s, "and is really run");
  /* So is another step-time scale (the band's edges). */
  kvsim_band_edge_t e = {1.3, 1.3};
  cr_assert_eq(kvsim_scenario_set_band_edge(&other, &e, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_run(&other, NULL, b, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim__study_memo_hits(), h0 + 1, "a changed scale misses");
  kvsim_scenario_fini(&other);
  kvsim__study_memo_end();

  /* After the study's end its points are gone. */
  cr_assert_eq(kvsim_study_run(&sc, NULL, a, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim__study_memo_hits(), h0 + 1, "the cache ends with the study");
  free(fresh);
  free(a);
  free(b);
  kvsim_scenario_fini(&sc);
}

Test(study_memo, the_band_through_the_cache_equals_the_band_without_it) {
  kvsim_scenario_t sc;
  load(&sc);
  kvsim_err err = {0};
  kvsim_summary_t *plain = calloc(1, sizeof *plain), *memo = calloc(1, sizeof *memo),
                  *again = calloc(1, sizeof *again);
  cr_assert(plain && memo && again);
  cr_assert_eq(kvsim_study_run_band(&sc, NULL, true, plain, &err), KVSIM_OK, "%s", err.msg);
  kvsim__study_memo_begin();
  int64_t h0 = kvsim__study_memo_hits();
  cr_assert_eq(kvsim_study_run_band(&sc, NULL, true, memo, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_run_band(&sc, NULL, true, again, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim__study_memo_hits(), h0 + 3, "nominal and both edges served the second time");
  kvsim__study_memo_end();
  cr_assert_eq(memcmp(memo, plain, sizeof *memo), 0, "same summary, ranges included");
  cr_assert_eq(memcmp(again, plain, sizeof *again), 0, "and from the cache");
  free(plain);
  free(memo);
  free(again);
  kvsim_scenario_fini(&sc);
}

Test(study_memo, band_edges_in_the_advice_pool_give_the_serial_answer) {
  kvsim_scenario_t sc;
  load(&sc);
  kvsim_err err = {0};
  kvsim_summary_t *serial = calloc(1, sizeof *serial), *pooled = calloc(1, sizeof *pooled);
  cr_assert(serial && pooled);
  cr_assert_eq(kvsim_study_run_band(&sc, NULL, true, serial, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_verify_advice(&sc, serial, 1, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_run_verified(&sc, NULL, true, 2, pooled, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(memcmp(pooled, serial, sizeof *pooled), 0, "edges and advice in one pool: same summary");
  free(serial);
  free(pooled);
  kvsim_scenario_fini(&sc);
}

Test(study_memo, jobs_default_to_the_online_cores) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  int want = n < 1 ? 1 : n > 256 ? 256 : (int)n;
  cr_assert_eq(kvsim_study_cores(), want, "--jobs default %d, cores %ld", kvsim_study_cores(), n);
  cr_assert(kvsim_study_cores() >= 1 && kvsim_study_cores() <= 256);
}
