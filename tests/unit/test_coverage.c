/* Coverage of measured means by the band (fidelity room, kvsim/fidelity.h):
 * each dev run simulated at nominal and at the band's edges, the measured
 * mean checked against [min, max], in-sample and held-out apart (kernel
 * tables are measured, never fitted on a run: every item is held out). */
#include <criterion/criterion.h>
#include <string.h>

#include "kvsim/fidelity.h"

#ifndef KVSIM_SOURCE_DIR
#define KVSIM_SOURCE_DIR "."
#endif
#define FIX KVSIM_SOURCE_DIR "/tests/golden/fidelity/"

static void load(const char *const *sets, int nsets, kvsim_fid_measured_t *m,
                 kvsim_scenario_t *sc) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_measured_load(FIX "requests.jsonl", NULL, m, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(kvsim_scenario_load(FIX "scenario.json", sets, nsets, sc, &err), KVSIM_OK, "%s",
               err.msg);
}

static void assert_consistent(const kvsim_fid_band_mean_t *b, const char *what) {
  cr_assert(b->has, "%s compared", what);
  cr_assert(b->lo <= b->sim && b->sim <= b->hi, "%s: [%g, %g] holds the nominal %g", what, b->lo,
            b->hi, b->sim);
  cr_assert_eq(b->inside, b->lo <= b->meas && b->meas <= b->hi, "%s: inside is the test of meas %g",
               what, b->meas);
}

Test(coverage, a_run_on_its_own_kernel_tables_is_held_out_and_its_ranges_hold_the_nominal) {
  kvsim_fid_measured_t m;
  kvsim_scenario_t sc;
  load(NULL, 0, &m, &sc);
  kvsim_fid_coverage_t c = {0};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_coverage_measured(&m, &sc, NULL, &c, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(c.n, 1, "one item");
  const kvsim_fid_cover_item_t *it = &c.items[0];
  /* Kernel tables are measured, not fitted on the run: never in-sample. */
  cr_assert(it->ok && !it->in_sample, "h100-sxm's own tables: held out");
  cr_assert(strstr(it->coefficients, "(kernels)") != NULL, "labelled with its status: %s", it->coefficients);
  double lo, hi;
  kvsim_gpu_band_scales(&sc.gpu.perf, &lo, &hi);
  cr_assert(it->scale_lo == lo && it->scale_hi == hi, "the GPU's band edges");
  cr_assert_float_eq(it->scale_hi, 1 + KVSIM_GPU_BAND_KERNELS_TPOT, 1e-12, "the kernels band (%g)", it->scale_hi);
  cr_assert_float_eq(it->prefill_hi, 1 + KVSIM_GPU_BAND_KERNELS_TTFT, 1e-12, "prefill edge (%g)", it->prefill_hi);
  assert_consistent(&it->mean[KVSIM_FID_TTFT], "ttft");
  assert_consistent(&it->mean[KVSIM_FID_TPOT], "tpot");
  assert_consistent(&it->mean[KVSIM_FID_E2E], "e2e");
  cr_assert_lt(it->mean[KVSIM_FID_TPOT].lo, it->mean[KVSIM_FID_TPOT].hi, "a band, not a point");
  for (int k = 0; k < KVSIM_FID_COVER_NLAT; k++) {
    cr_assert_eq(c.compared[0][k], 1, "counted held out");
    cr_assert_eq(c.compared[1][k], 0, "nothing in-sample");
    cr_assert_eq(c.inside[0][k], it->mean[k].inside, "tallied");
  }
  kvsim_fidelity_coverage_fini(&c);
  kvsim_fidelity_measured_fini(&m);
  kvsim_scenario_fini(&sc);
}

Test(coverage, another_gpus_tables_are_labelled_held_out_with_the_borrowed_band) {
  kvsim_fid_measured_t m;
  kvsim_scenario_t sc;
  load(NULL, 0, &m, &sc);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_use_kernels(&sc.gpu, "h200", &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(sc.gpu.perf.status, KVSIM_CAL_KERNELS_BORROWED, "h100-sxm on h200's tables borrows them");
  kvsim_fid_coverage_t c = {0};
  cr_assert_eq(kvsim_fidelity_coverage_measured(&m, &sc, "h200", &c, &err), KVSIM_OK, "%s", err.msg);
  const kvsim_fid_cover_item_t *it = &c.items[0];
  cr_assert(!it->in_sample, "held out");
  cr_assert(strstr(it->coefficients, "h200's kernel tables, held out from h100-sxm (kernels-borrowed band)") != NULL,
            "labelled: %s", it->coefficients);
  cr_assert_float_eq(it->scale_lo, 1 - KVSIM_GPU_BAND_BORROWED_TPOT, 1e-12, "borrowed band lo (%g)", it->scale_lo);
  cr_assert_float_eq(it->scale_hi, 1 + KVSIM_GPU_BAND_BORROWED_TPOT, 1e-12, "borrowed band hi (%g)", it->scale_hi);
  cr_assert_float_eq(it->prefill_hi, 1 + KVSIM_GPU_BAND_BORROWED_TTFT, 1e-12, "borrowed prefill edge");
  cr_assert_eq(c.compared[0][KVSIM_FID_TPOT], 1, "counted held out");
  kvsim_fidelity_coverage_fini(&c);
  /* An unknown profile is refused, naming it. */
  cr_assert_eq(kvsim_gpu_use_kernels(&sc.gpu, "no-such-gpu", &err), KVSIM_ENOENT, "unknown profile");
  cr_assert(strstr(err.msg, "no-such-gpu") != NULL, "named: %s", err.msg);
  kvsim_fidelity_measured_fini(&m);
  kvsim_scenario_fini(&sc);
}

Test(coverage, a_mean_outside_every_run_is_reported_outside) {
  /* Steps 8x slower than the fit: every simulated TPOT, edges included,
   * lies far above the measured one. */
  const char *sets[] = {"perf.step_time_scale=8"};
  kvsim_fid_measured_t m;
  kvsim_scenario_t sc;
  load(sets, 1, &m, &sc);
  kvsim_fid_coverage_t c = {0};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_coverage_measured(&m, &sc, NULL, &c, &err), KVSIM_OK, "%s", err.msg);
  const kvsim_fid_band_mean_t *b = &c.items[0].mean[KVSIM_FID_TPOT];
  cr_assert(!b->inside, "measured %g outside [%g, %g]", b->meas, b->lo, b->hi);
  cr_assert_gt(b->lo, b->meas, "the whole range is slower");
  double glo, ghi;
  kvsim_gpu_band_scales(&sc.gpu.perf, &glo, &ghi);
  cr_assert_float_eq(c.items[0].scale_lo, 8 * glo, 1e-12,
                     "lo edge relative to the scenario's own scale");
  cr_assert_float_eq(c.items[0].scale_hi, 8 * ghi, 1e-12,
                     "hi edge relative to the scenario's own scale");
  cr_assert_eq(c.inside[0][KVSIM_FID_TPOT], 0, "none inside");
  kvsim_fidelity_coverage_fini(&c);
  kvsim_fidelity_measured_fini(&m);
  kvsim_scenario_fini(&sc);
}

Test(coverage, silicon_rows_compare_ttft_and_tpot_and_count_the_skipped) {
  kvsim_fid_coverage_t c = {0};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_coverage_silicon(FIX "silicon.csv", NULL, 0, NULL, 0, 1.0, NULL, NULL,
                                               &c, &err),
               KVSIM_OK, "%s", err.msg);
  cr_assert_gt(c.n, 0, "rows simulated");
  cr_assert_gt(c.skipped, 0, "the fixture has rows kvsim cannot reproduce");
  for (int i = 0; i < c.n; i++) {
    const kvsim_fid_cover_item_t *it = &c.items[i];
    cr_assert(it->ok, "%s: %s", it->label, it->error);
    assert_consistent(&it->mean[KVSIM_FID_TTFT], it->label);
    assert_consistent(&it->mean[KVSIM_FID_TPOT], it->label);
    cr_assert(!it->mean[KVSIM_FID_E2E].has, "a silicon row has no E2E");
  }
  cr_assert_eq(c.compared[0][KVSIM_FID_TTFT] + c.compared[1][KVSIM_FID_TTFT], c.n,
               "every row counted once");
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_eq(kvsim_fidelity_coverage_report(&c, false, f), KVSIM_OK, "text report");
  fclose(f);
  cr_assert(strstr(buf, "coverage (measured mean inside [lo, hi])") != NULL,
            "fractions printed: %s", buf);
  free(buf);
  kvsim_fidelity_coverage_fini(&c);
}
