/* Measured peaks (hw/borrow.c): a borrowed fit's GEMM and streaming
 * efficiencies are re-expressed against the target GPU's measured share
 * of its spec peaks; a figure missing on either side leaves them as they
 * are; a measured peak far above its spec figure is refused. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "kvsim/error.h"
#include "kvsim/gpu.h"

/* A hopper GPU file with spec 1,000 TFLOPS / 2,000 GB/s and `extra` keys. */
static int parse_with(const char *extra, kvsim_gpu_t *g, kvsim_err *err) {
  char text[512];
  snprintf(text, sizeof text,
           "{\"name\": \"t\", \"generation\": \"hopper\", \"memory_total_bytes\": 85045477376, "
           "\"hbm_bandwidth_GBps\": 2000, \"bf16_tflops\": 1000%s%s}",
           *extra ? ", " : "", extra);
  return kvsim_gpu_parse(text, "t.json", g, err);
}

Test(gpu_peaks, a_borrowed_fit_is_re_expressed_against_the_targets_measured_share) {
  kvsim_gpu_t h100, g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &h100, &err), KVSIM_OK, "%s", err.msg);
  cr_assert(h100.achieved_bf16_tflops > 0 && h100.achieved_copy_GBps > 0, "the origin's peaks are measured");
  /* 90 % of the spec matmul rate, 80 % of the spec bandwidth (below the
   * H100's 87 %, so that the rescaled mbu stays below its cap of 1). */
  cr_assert_eq(parse_with("\"achieved_bf16_tflops\": 900, \"achieved_copy_GBps\": 1600", &g, &err), KVSIM_OK,
               "%s", err.msg);
  kvsim_gpu_perf_t d;
  kvsim_gpu_default_perf("hopper", &d);
  const double bf16 = 0.9 / (h100.achieved_bf16_tflops / h100.bf16_tflops);
  const double copy = 0.80 / (h100.achieved_copy_GBps / h100.hbm_bandwidth_GBps);
  cr_assert_float_eq(g.perf.mfu, d.mfu * bf16, 1e-12, "mfu %g = %g x %g", g.perf.mfu, d.mfu, bf16);
  cr_assert_float_eq(g.perf.mbu, d.mbu * copy, 1e-12, "mbu %g = %g x %g", g.perf.mbu, d.mbu, copy);
  cr_assert_eq(g.perf.mfu_fp8, d.mfu_fp8, "fp8 is left as the donor's");
  cr_assert_eq(g.perf.attn_efficiency, d.attn_efficiency, "attention is left as the donor's");
  cr_assert_eq(g.perf.per_seq_us, d.per_seq_us, "floors are host costs, not the silicon's");
}

Test(gpu_peaks, without_a_measured_peak_the_donors_efficiency_stays) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(parse_with("\"achieved_bf16_tflops\": 700", &g, &err), KVSIM_OK, "%s", err.msg);
  kvsim_gpu_perf_t d;
  kvsim_gpu_default_perf("hopper", &d);
  cr_assert(g.perf.mfu < d.mfu, "a 70 %% share is below the H100's 80 %%: %g < %g", g.perf.mfu, d.mfu);
  cr_assert_eq(g.perf.mbu, d.mbu, "no copy figure: mbu as it is");
  cr_assert_eq(parse_with("", &g, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(g.perf.mfu, d.mfu);
}

Test(gpu_peaks, an_efficiency_stays_at_most_one) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  /* 125 % of the spec bandwidth over the H100's 87 %: mbu 0.99 x 1.44 > 1. */
  cr_assert_eq(parse_with("\"achieved_copy_GBps\": 2500", &g, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(g.perf.mbu, 1.0, "mbu %g", g.perf.mbu);
}

Test(gpu_peaks, a_fit_of_the_gpus_own_is_not_rescaled) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(parse_with("\"achieved_bf16_tflops\": 600, \"perf\": {\"mfu\": 0.5}", &g, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(g.perf.mfu, 0.5);
}

Test(gpu_peaks, a_measured_peak_far_from_its_spec_is_refused_with_key_and_file) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(parse_with("\"achieved_bf16_tflops\": 1300", &g, &err), KVSIM_EINVAL);
  cr_assert(strstr(err.msg, "t.json: achieved_bf16_tflops") && strstr(err.msg, "[50, 1250]"), "%s",
            err.msg);
  cr_assert_eq(parse_with("\"achieved_bf16_tflops\": 1e-300", &g, &err), KVSIM_EINVAL,
               "a peak that would divide mfu towards 0 is refused");
  cr_assert(strstr(err.msg, "out of range [50, 1250]") != NULL, "%s", err.msg);
  cr_assert_eq(parse_with("\"achieved_copy_GBps\": 0", &g, &err), KVSIM_OK, "0 = not measured: %s", err.msg);
  cr_assert_eq(parse_with("\"achieved_copy_GBps\": -1", &g, &err), KVSIM_EINVAL);
  cr_assert(strstr(err.msg, "achieved_copy_GBps") != NULL, "%s", err.msg);
  cr_assert_eq(parse_with("\"achieved_source\": 3", &g, &err), KVSIM_EINVAL, "%s", err.msg);
}

/* The fp8 matmul peak is a share of fp8_tflops: without that spec figure
 * it has nothing to be a share of, and it does not move a borrowed fit
 * (kvsim calibrate's ceiling is its only use). */
Test(gpu_peaks, an_fp8_peak_needs_its_spec_figure_and_leaves_a_borrowed_fit_alone) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(parse_with("\"achieved_fp8_tflops\": 700", &g, &err), KVSIM_EINVAL, "no fp8_tflops");
  cr_assert(strstr(err.msg, "t.json: achieved_fp8_tflops") && strstr(err.msg, "fp8_tflops is 0"),
            "%s", err.msg);
  cr_assert_eq(parse_with("\"fp8_tflops\": 2000, \"achieved_fp8_tflops\": 3000", &g, &err),
               KVSIM_EINVAL);
  cr_assert(strstr(err.msg, "out of range [100, 2500]") != NULL, "%s", err.msg);
  cr_assert_eq(parse_with("\"fp8_tflops\": 2000, \"achieved_fp8_tflops\": 1400", &g, &err),
               KVSIM_OK, "%s", err.msg);
  cr_assert(g.achieved_fp8_tflops == 1400, "read: %g", g.achieved_fp8_tflops);
  kvsim_gpu_t h200;
  cr_assert_eq(kvsim_gpu_load("h200", &h200, &err), KVSIM_OK, "%s", err.msg);
  kvsim_gpu_perf_t p, d;
  kvsim_gpu_borrow_perf(&h200, "hopper", &p);
  kvsim_gpu_default_perf("hopper", &d);
  cr_assert(h200.achieved_fp8_tflops > 0, "the H200's fp8 peak is measured");
  cr_assert(p.mfu_fp8 == d.mfu_fp8, "mfu_fp8 is the donor's: %g vs %g", p.mfu_fp8, d.mfu_fp8);
}

/* The held-out RTX 4090 gets hopper's fit at its own measured peaks: its
 * card reaches more of its spec matmul rate than the H100 does. */
Test(gpu_peaks, perf_named_default_applies_the_targets_peaks) {
  kvsim_gpu_t g4090;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("rtx4090", &g4090, &err), KVSIM_OK, "%s", err.msg);
  kvsim_gpu_perf_t p, d;
  char label[96];
  cr_assert_eq(kvsim_gpu_perf_named("default:hopper", &g4090, &p, label, sizeof label, &err), KVSIM_OK, "%s",
               err.msg);
  kvsim_gpu_default_perf("hopper", &d);
  cr_assert(p.mfu > d.mfu * 1.2, "106 %% of spec against 80 %%: %g vs %g", p.mfu, d.mfu);
  cr_assert_eq(kvsim_gpu_perf_named("default:hopper", NULL, &p, label, sizeof label, &err), KVSIM_OK);
  cr_assert_eq(p.mfu, d.mfu, "no target: the default as it is");
}

/* validate --silicon --perf default:GEN resolves the default without a
 * GPU; each row's GPU then borrows it at its own peaks, as --all does. */
Test(gpu_peaks, a_default_without_a_gpu_is_borrowed_where_it_is_used) {
  kvsim_gpu_t g4090, h100;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("rtx4090", &g4090, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &h100, &err), KVSIM_OK, "%s", err.msg);
  kvsim_gpu_perf_t p, want;
  char label[96];
  cr_assert_eq(kvsim_gpu_perf_named("default:hopper", NULL, &p, label, sizeof label, &err), KVSIM_OK);
  cr_assert_str_eq(p.default_of, "hopper");
  cr_assert_eq(kvsim_gpu_perf_named("default:hopper", &g4090, &want, label, sizeof label, &err), KVSIM_OK);
  cr_assert_str_eq(want.default_of, "", "a default given its GPU is final");
  kvsim_gpu_use_perf(&g4090, &p);
  cr_assert_eq(g4090.perf.mfu, want.mfu, "%g vs %g", g4090.perf.mfu, want.mfu);
  cr_assert_eq(g4090.perf.mbu, want.mbu);
  /* A tagged default that is the GPU's own perf (p == &g->perf): borrowing
   * overwrites it, and the generation must survive that. */
  kvsim_gpu_t l4;
  cr_assert_eq(kvsim_gpu_load("l4", &l4, &err), KVSIM_OK, "%s", err.msg);
  kvsim_gpu_perf_t ada;
  cr_assert_eq(kvsim_gpu_perf_named("default:ada", &l4, &ada, label, sizeof label, &err), KVSIM_OK);
  cr_assert_eq(kvsim_gpu_perf_named("default:ada", NULL, &l4.perf, label, sizeof label, &err), KVSIM_OK);
  kvsim_gpu_use_perf(&l4, &l4.perf);
  cr_assert_eq(l4.perf.mfu, ada.mfu, "%g vs %g", l4.perf.mfu, ada.mfu);
  cr_assert_eq(l4.perf.status, ada.status);
  cr_assert_str_eq(l4.perf.source, ada.source);
  cr_assert_str_eq(l4.perf.default_of, "");
  kvsim_gpu_use_perf(&h100, &want); /* a final perf is taken as it is */
  cr_assert_eq(h100.perf.mfu, want.mfu);
}
