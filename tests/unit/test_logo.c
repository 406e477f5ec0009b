/* The leave-one-group-out protocol's pieces (kvsim/fidelity.h): the
 * physical exclusion rule on hand-made silicon rows, the band quantiles
 * and their report per status, the host term's fit on hand-made items,
 * and the protocol's error without data. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "fidelity/logo.h"
#include "kvsim/fidelity.h"

#include <cJSON.h>
#include <stdlib.h>

static kvsim_fid_sil_row_t sil_row(const char *gpu, const char *model, const char *prec, int64_t tp,
                                   int64_t batch, int64_t isl, double ttft_ms, double tpot_ms) {
  kvsim_fid_sil_row_t r;
  memset(&r, 0, sizeof r);
  snprintf(r.gpu, sizeof r.gpu, "%s", gpu);
  snprintf(r.model, sizeof r.model, "%s", model);
  snprintf(r.precision, sizeof r.precision, "%s", prec);
  r.tp = tp;
  r.batch = batch;
  r.isl = isl;
  r.osl = 1000;
  r.ttft_ms = ttft_ms;
  r.tpot_ms = tpot_ms;
  return r;
}

Test(logo, logo_peak_fraction_flags_impossible_rows) {
  /* Llama-3.1-70B (~70e9 active) fp8 at TP 2 on H100: 64 clients decoding
   * at 20 ms is 64 x 2 x 35e9 / 0.02 = 2.2e14 FLOP/s, ~11 % of the fp8
   * peak (1979 TFLOPS); at 1 ms it would be 2.2e15, beyond the peak. */
  kvsim_fid_sil_row_t ok = sil_row("h100-sxm", "llama-3.1-70b", "fp8", 2, 64, 1000, 2000, 20);
  double f = kvsim_fidelity_logo_peak_frac(&ok);
  cr_assert(f > 0.08 && f < 0.15, "a plausible row: %.3f of peak", f);
  kvsim_fid_sil_row_t bad = sil_row("h100-sxm", "llama-3.1-70b", "fp8", 2, 64, 1000, 2000, 1);
  cr_assert_gt(kvsim_fidelity_logo_peak_frac(&bad), 0.8, "1 ms TPOT at 64 clients is not physical");
  /* A prompt's prefill alone faster than the peak: 8,000 tokens in 50 ms
   * at TP 1 in bf16 (989 TFLOPS) is 2 x 8e9 x 8000 / 0.05 = 2.6e15. */
  kvsim_fid_sil_row_t pre = sil_row("h100-sxm", "llama-3.1-8b", "", 1, 1, 8000, 50, 10);
  cr_assert_gt(kvsim_fidelity_logo_peak_frac(&pre), 1.0, "prefill past the peak: %.2f",
               kvsim_fidelity_logo_peak_frac(&pre));
  kvsim_fid_sil_row_t unk = sil_row("h100-sxm", "no-such-model", "", 1, 1, 8000, 50, 10);
  cr_assert(isnan(kvsim_fidelity_logo_peak_frac(&unk)), "unknown model: NAN");
}

Test(logo, logo_quantile_interpolates_between_rows) {
  /* 10 rows: the 90th percentile sits 1/10 of the way from the 9th row
   * (10 %) to the 10th (50 %); the median between the 5th and 6th. */
  double x[10] = {50, 10, 10, 10, 10, 10, 10, 10, 10, 10};
  cr_assert_float_eq(kvsim__logo_quantile(x, 10, 0.9), 14.0, 1e-12, "linear interpolation (%g)",
                     kvsim__logo_quantile(x, 10, 0.9));
  double y[10] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  cr_assert_float_eq(kvsim__logo_quantile(y, 10, 0.9), 9.1, 1e-12, "sorted first (%g)", y[0]);
  cr_assert_float_eq(kvsim__logo_quantile(y, 10, 0.5), 5.5, 1e-12, "the median");
  double one[1] = {7};
  cr_assert_float_eq(kvsim__logo_quantile(one, 1, 0.9), 7.0, 1e-12, "one row is its own quantile");
}

Test(logo, logo_rows_keep_each_rows_signed_errors_and_print_them) {
  /* A group keeps a copy of its rows (the caller's array may go), and
   * --json prints each with its shape and signed errors, so residuals can
   * be grouped by TP, clients or lengths; a per-request run has no shape. */
  kvsim_fid_logo_t l;
  memset(&l, 0, sizeof l);
  kvsim_fid_logo_group_t *g = kvsim__logo_group(&l, "b200", "llama-3.1-70b", "fp8", "silicon");
  cr_assert_not_null(g, "group");
  g->n = 2;
  kvsim_fid_logo_row_t rows[2];
  memset(rows, 0, sizeof rows);
  snprintf(rows[0].id, sizeof rows[0].id, "row-a");
  rows[0].tp = 8, rows[0].clients = 16, rows[0].isl = 1024, rows[0].osl = 8192;
  rows[0].err[0] = -12.5, rows[0].err[1] = 21.9, rows[0].err[2] = 20.0;
  snprintf(rows[1].id, sizeof rows[1].id, "per-request run");
  rows[1].err[0] = 3, rows[1].err[1] = -4, rows[1].err[2] = NAN;
  cr_assert_eq(kvsim__logo_set_rows(g, rows, 2), KVSIM_OK, "rows");
  memset(rows, 0, sizeof rows);
  cr_assert_eq(g->nrow, 2, "two rows (%d)", g->nrow);
  cr_assert_str_eq(g->row[0].id, "row-a", "a copy, not the caller's array");
  cr_assert_float_eq(g->row[0].err[1], 21.9, 1e-12, "signed, not |error|");
  char *j = kvsim_fidelity_logo_to_json(&l);
  cr_assert_not_null(j, "json");
  cJSON *o = cJSON_Parse(j);
  cr_assert_not_null(o, "valid JSON: %s", j);
  const cJSON *re = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "groups"), 0), "row_errors");
  cr_assert(cJSON_IsArray(re) && cJSON_GetArraySize(re) == 2, "row_errors, one a row: %s", j);
  const cJSON *a = cJSON_GetArrayItem(re, 0), *b = cJSON_GetArrayItem(re, 1);
  cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(a, "id")->valuestring, "row-a", "id");
  cr_assert_eq(cJSON_GetObjectItemCaseSensitive(a, "tp")->valueint, 8, "tp");
  cr_assert_eq(cJSON_GetObjectItemCaseSensitive(a, "clients")->valueint, 16, "clients");
  cr_assert_eq(cJSON_GetObjectItemCaseSensitive(a, "osl")->valueint, 8192, "osl");
  const cJSON *ha = cJSON_GetObjectItemCaseSensitive(a, "held_out");
  cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(ha, "tpot")->valuedouble, 21.9, 1e-9,
                     "tpot, signed");
  cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(ha, "ttft")->valuedouble, -12.5, 1e-9,
                     "ttft, signed");
  cr_assert_null(cJSON_GetObjectItemCaseSensitive(b, "tp"), "a run has no silicon shape");
  cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(b, "held_out"), "e2e")),
            "an error not compared is null");
  cJSON_Delete(o);
  free(j);
  kvsim_fidelity_logo_fini(&l);
}

Test(logo, logo_bands_are_named_per_status) {
  /* The band names are the statuses of gpu.h, and MoE apart. */
  cr_assert_str_eq(kvsim_fidelity_band_name(KVSIM_FID_BAND_KERNELS), kvsim_cal_status_name(KVSIM_CAL_KERNELS),
                   "kernels");
  cr_assert_str_eq(kvsim_fidelity_band_name(KVSIM_FID_BAND_BORROWED),
                   kvsim_cal_status_name(KVSIM_CAL_KERNELS_BORROWED), "kernels-borrowed");
  cr_assert_str_eq(kvsim_fidelity_band_name(KVSIM_FID_BAND_SPEC), kvsim_cal_status_name(KVSIM_CAL_SPEC_ONLY),
                   "spec-only");
  cr_assert_str_eq(kvsim_fidelity_band_name(KVSIM_FID_BAND_MOE), "moe", "moe");
  cr_assert_str_eq(kvsim_fidelity_band_name(KVSIM_FID_NBAND), "?", "out of range");
  cr_assert_str_eq(kvsim_fidelity_band_name(-1), "?", "out of range");
}

Test(logo, logo_json_and_text_print_the_band_of_each_status) {
  kvsim_fid_logo_t l;
  memset(&l, 0, sizeof l);
  for (int b = 0; b < KVSIM_FID_NBAND; b++) {
    l.band[b][0] = 0.1 * (b + 1);
    l.band[b][1] = 0.01 * (b + 1);
    l.band_rows[b] = 10 + b;
  }
  l.band[KVSIM_FID_BAND_SPEC][0] = l.band[KVSIM_FID_BAND_SPEC][1] = NAN;
  char *j = kvsim_fidelity_logo_to_json(&l);
  cr_assert_not_null(j, "json");
  cJSON *o = cJSON_Parse(j);
  cr_assert_not_null(o, "valid JSON: %s", j);
  const cJSON *bands = cJSON_GetObjectItemCaseSensitive(o, "bands");
  cr_assert_not_null(bands, "bands: %s", j);
  for (int b = 0; b < KVSIM_FID_NBAND; b++) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(bands, kvsim_fidelity_band_name(b));
    cr_assert_not_null(e, "band %s", kvsim_fidelity_band_name(b));
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "ttft");
    if (b == KVSIM_FID_BAND_SPEC) {
      cr_assert(cJSON_IsNull(t), "a band without rows is null");
    } else {
      cr_assert(cJSON_IsNumber(t), "%s ttft", kvsim_fidelity_band_name(b));
      cr_assert_float_eq(t->valuedouble, 0.1 * (b + 1), 1e-9, "%s ttft", kvsim_fidelity_band_name(b));
      cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(e, "tpot")->valuedouble, 0.01 * (b + 1), 1e-9, "tpot");
    }
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(e, "rows")->valueint, 10 + b, "rows");
  }
  cJSON_Delete(o);
  free(j);
  char *t = kvsim_fidelity_logo_to_text(&l);
  cr_assert_not_null(t, "text");
  cr_assert(strstr(t, "band per status") != NULL, "the band table: %s", t);
  cr_assert(strstr(t, "kernels-borrowed") != NULL, "each status named: %s", t);
  cr_assert(strstr(t, "20.0% /") != NULL, "the borrowed band in percent: %s", t);
  free(t);
}

Test(logo, logo_host_fit_recovers_planted_host_times_and_leaves_out_the_held_gpu) {
  /* Items whose latencies are linear in the host times: at0 with none,
   * at1 with KVSIM__LOGO_H1 fixed, at2 with KVSIM__LOGO_S1 per request.
   * Measured at host 1000 us, 30 us per request; a third GPU's item says
   * otherwise and is left out as the held-out GPU. */
  kvsim__logo_item_t it[5];
  memset(it, 0, sizeof it);
  const char *gpus[5] = {"a", "a", "b", "b", "c"};
  for (int i = 0; i < 5; i++) {
    snprintf(it[i].gpu, sizeof it[i].gpu, "%s", gpus[i]);
    for (int k = 0; k < 3; k++) {
      it[i].at0[k] = 10.0 * (i + 1) * (k + 1);
      it[i].at1[k] = it[i].at0[k] + 4.0 * (i + 1); /* fixed host time weighs more on later items */
      it[i].at2[k] = it[i].at0[k] + 4.0 * (5 - i); /* per-request time on earlier ones */
    }
  }
  kvsim__logo_par_t truth = {.host_us = {1000, 1000}, .per_seq_us = {30, 30}};
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < 3; k++)
      it[i].meas[k] = kvsim__logo_linear(&it[i], k, &truth);
  for (int k = 0; k < 3; k++)
    it[4].meas[k] = 3 * it[4].at0[k]; /* far off: would pull the fit */
  kvsim__logo_par_t p;
  cr_assert_eq(kvsim__logo_fit(it, 5, "c", &p), 4, "four items used");
  cr_assert_float_eq(p.host_us[0], 1000, 30, "host recovered: %g", p.host_us[0]);
  cr_assert_float_eq(p.per_seq_us[0], 30, 3, "per request recovered: %g", p.per_seq_us[0]);
  cr_assert_float_eq(p.host_us[1], p.host_us[0], 1e-9, "no async rows: the sync figures");
  kvsim__logo_par_t all;
  cr_assert_eq(kvsim__logo_fit(it, 5, NULL, &all), 5, "every item without a GPU held out");
  cr_assert_eq(kvsim__logo_fit(it, 5, "a", &all), 3, "GPU a's two items held out");
}

Test(logo, logo_without_data_is_one_error) {
  kvsim_fid_logo_opts_t o = {.validation_dir = "/nonexistent-kvsim-dir", .scenario_dir = ".", .max_iter = 1};
  kvsim_fid_logo_t l;
  kvsim_err err = {0};
  cr_assert_lt(kvsim_fidelity_logo_run(&o, &l, &err), 0, "no data: an error");
  cr_assert(err.msg[0], "with a message");
  kvsim_fidelity_logo_fini(&l);
}

Test(logo, physical_rule_excludes_a_tpot_below_the_bandwidth_floor) {
  /* Qwen3-32B fp8 at TP 1 on H100, 24 clients at 4000 in / 1000 out:
   * the mean decode step reads the fp8 weights (~32.8 GB) and 24 fp8 KV
   * caches at the mean context 0.9 x 4000 + 0.9 x 1000 / 2 = 4050 tokens
   * of 64 layers x 2 x 8 heads x 128 x 1 B = 128 KiB each (~12.7 GB):
   * ~45.5 GB at 3.35 TB/s is ~13.6 ms. A TTFT of 10 s leaves the request
   * cycle (10 s + 899 x 16.85 ms = 25.1 s) above what the kernel tables
   * need for 24 prefills of 4000 tokens and the decode steps (~24 s). */
  kvsim_fid_sil_row_t slow = sil_row("h100-sxm", "qwen3-32b", "fp8", 1, 24, 4000, 10000, 16.85);
  slow.pp = 1;
  double bytes = 0, floor_ms = 0;
  kvsim_err e = {0};
  cr_assert_eq(kvsim_fidelity_sil_decode_floor(&slow, KVSIM_FID_SIL_RANGE_RATIO, &bytes, &floor_ms, &e), KVSIM_OK,
               "%s", e.msg);
  cr_assert(bytes > 44e9 && bytes < 47e9, "weights + KV of the step: %.3g B", bytes);
  cr_assert(floor_ms > 13.0 && floor_ms < 14.2, "floor at 100 %% of HBM: %.2f ms", floor_ms);
  char why[192] = "";
  cr_assert(kvsim_fidelity_sil_physical(&slow, KVSIM_FID_SIL_RANGE_RATIO, why, sizeof why),
            "16.85 ms is above the floor: kept (%s)", why);
  kvsim_fid_sil_row_t fast = slow;
  fast.tpot_ms = 12.0;
  cr_assert_not(kvsim_fidelity_sil_physical(&fast, KVSIM_FID_SIL_RANGE_RATIO, why, sizeof why),
                "12 ms is below the floor: excluded");
  cr_assert(strstr(why, "below the") && strstr(why, "HBM bandwidth"), "the reason names the limit: %s", why);
  /* The compute rule is the same function's: 1 ms at 64 clients of 70B. */
  kvsim_fid_sil_row_t peak = sil_row("h100-sxm", "llama-3.1-70b", "fp8", 2, 64, 1000, 2000, 1);
  peak.pp = 1;
  cr_assert_not(kvsim_fidelity_sil_physical(&peak, KVSIM_FID_SIL_RANGE_RATIO, why, sizeof why), "past the peak");
  cr_assert(strstr(why, "dense fp8 peak"), "%s", why);
  /* The tables rule: the same row with a 300 ms TTFT claims a request
   * cycle of 15.4 s, shorter than the ~24 s of GPU time the tables need. */
  kvsim_fid_sil_row_t quick = slow;
  quick.ttft_ms = 300;
  cr_assert_not(kvsim_fidelity_sil_physical(&quick, KVSIM_FID_SIL_RANGE_RATIO, why, sizeof why),
                "a cycle shorter than the tables allow");
  cr_assert(strstr(why, "kernel tables") && strstr(why, "request cycle"), "the reason names the tables: %s", why);
}

/* validate --silicon and its --band leave out what the rule refuses, as
 * calibrate and --all do: the row is skipped with the reason, the others
 * stay as they were. */
Test(logo, silicon_tables_skip_the_rows_the_physical_rule_refuses) {
  kvsim_fid_sil_row_t rows[3] = {
      sil_row("h100-sxm", "qwen3-32b", "fp8", 1, 24, 4000, 10000, 16.85),
      sil_row("h100-sxm", "qwen3-32b", "fp8", 1, 24, 4000, 10000, 12.0),
      sil_row("h100-sxm", "qwen3-32b", "fp8", 1, 24, 4000, 10000, 12.0),
  };
  for (int i = 0; i < 3; i++)
    rows[i].pp = 1;
  rows[2].skipped = true;
  snprintf(rows[2].reason, sizeof rows[2].reason, "already skipped");
  kvsim_fid_sil_table_t t = {rows, 3, 3};
  cr_assert_eq(kvsim_fidelity_sil_exclude_unphysical(&t, KVSIM_FID_SIL_RANGE_RATIO), 1, "one row excluded");
  cr_assert_not(rows[0].skipped, "a possible row is kept");
  cr_assert(rows[1].skipped && strstr(rows[1].reason, "beyond what the GPU can do"), "%s", rows[1].reason);
  cr_assert_str_eq(rows[2].reason, "already skipped", "a skipped row keeps its reason");
}

Test(logo, targets_are_the_issues_and_a_per_request_run_is_held_to_five_percent) {
  kvsim_fid_logo_group_t g;
  memset(&g, 0, sizeof g);
  double t[3];
  bool m[3];
  /* A dense silicon group: TTFT 15, TPOT 7, no E2E target. */
  snprintf(g.source, sizeof g.source, "silicon");
  g.held[0] = 16, g.held[1] = 6.9, g.held[2] = 50;
  cr_assert_eq(kvsim_fidelity_logo_targets(&g, t, m), 1, "only TTFT misses");
  cr_assert(t[0] == 15 && t[1] == 7 && isnan(t[2]), "dense targets %g %g %g", t[0], t[1], t[2]);
  cr_assert(m[0] && !m[1] && !m[2], "TTFT 16 > 15; E2E has no target");
  /* MoE: 20 / 12. */
  g.moe = true;
  cr_assert_eq(kvsim_fidelity_logo_targets(&g, t, NULL), 0, "16 / 6.9 within 20 / 12");
  cr_assert(t[0] == 20 && t[1] == 12, "MoE targets %g %g", t[0], t[1]);
  /* A per-request run: TPOT and E2E within 5 %, TTFT within 10 %. */
  snprintf(g.source, sizeof g.source, "per-request");
  g.moe = false;
  g.held[0] = 9.4, g.held[1] = 5.0, g.held[2] = 5.1;
  cr_assert_eq(kvsim_fidelity_logo_targets(&g, t, m), 1, "E2E 5.1 misses, TPOT 5.0 does not");
  cr_assert(t[1] == 5 && t[2] == 5 && !m[1] && m[2], "per-request 5 %% / 5 %%");
  /* No figure, no miss. */
  g.held[0] = g.held[1] = g.held[2] = NAN;
  cr_assert_eq(kvsim_fidelity_logo_targets(&g, t, m), 0, "NAN never misses");
}

/* The fused MoE row of DeepSeek-V3 (fp8_block, 7168 / 2048, top-8 of 256)
 * at tp and `tokens` in the B200 profile, read here with cJSON. */
static double b200_dsv3_moe_us(int tp, int tokens) {
#ifndef KVSIM_SOURCE_DIR
#define KVSIM_SOURCE_DIR "."
#endif
  FILE *f = fopen(KVSIM_SOURCE_DIR "/configs/kernels/b200.json", "rb");
  cr_assert_not_null(f, "open the B200 profile");
  fseek(f, 0, SEEK_END);
  const long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  cr_assert_not_null(text);
  cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
  text[n] = '\0';
  fclose(f);
  cJSON *j = cJSON_Parse(text);
  free(text);
  double us = NAN;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "moe")) {
    if (strcmp(cJSON_GetObjectItem(e, "dtype")->valuestring, "fp8_block") ||
        cJSON_GetObjectItem(e, "hidden")->valueint != 7168 || cJSON_GetObjectItem(e, "experts")->valueint != 256 ||
        cJSON_GetObjectItem(e, "tp")->valueint != tp || cJSON_GetObjectItem(e, "ep")->valueint != 1 ||
        strcmp(cJSON_GetObjectItem(e, "distribution")->valuestring, "power_law_1.01"))
      continue;
    const cJSON *t = cJSON_GetObjectItem(e, "tokens");
    for (int i = 0; i < cJSON_GetArraySize(t); i++)
      if (cJSON_GetArrayItem(t, i)->valueint == tokens)
        us = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "us"), i)->valuedouble;
  }
  cJSON_Delete(j);
  cr_assert(!isnan(us), "the profile has DeepSeek-V3's MoE row at tp %d, %d tokens", tp, tokens);
  return us;
}

Test(logo, prefill_terms_of_a_row_are_its_step_term_by_term) {
  /* A B200 DeepSeek-V3 fp8 row at TP 8 with 8,192-token prompts (kvsim
   * validate --silicon --terms): the experts are the table's fused MoE row
   * at 8,192 tokens in each of the 58 MoE layers, and the terms add up to
   * the step (the device's share is above its roofline here). */
  kvsim_fid_sil_row_t r = sil_row("b200", "deepseek-v3", "fp8", 8, 4, 8192, 479, 9.6);
  r.pp = 1;
  kvsim_step_cost_t c;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_sil_prefill_terms(&r, KVSIM_FID_SIL_RANGE_AUTO, &c, &err), KVSIM_OK, "%s", err.msg);
  const double moe = 58 * b200_dsv3_moe_us(8, 8192) * 1e-6;
  cr_assert_float_eq(c.moe_s, moe, 1e-9, "experts %g s, table %g s", c.moe_s, moe);
  const double sum = c.attn_s + c.moe_s + c.comm_s + c.gemm_s + c.elem_s + c.host_s;
  cr_assert_float_eq(c.total_s, sum, 1e-12, "the terms add up: %g vs %g", c.total_s, sum);
  cr_assert_gt(c.total_s - c.host_s, c.roofline_s, "above the roofline");
  /* One prompt of the row's whole length: an eighth of it costs less. */
  kvsim_fid_sil_row_t s = sil_row("b200", "deepseek-v3", "fp8", 8, 4, 1024, 183, 8.8);
  s.pp = 1;
  kvsim_step_cost_t d;
  cr_assert_eq(kvsim_fidelity_sil_prefill_terms(&s, KVSIM_FID_SIL_RANGE_AUTO, &d, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_lt(d.total_s, c.total_s);
  /* A row kvsim cannot plan: the plan's error. */
  kvsim_fid_sil_row_t unk = sil_row("b200", "no-such-model", "fp8", 8, 4, 8192, 479, 9.6);
  unk.pp = 1;
  cr_assert_lt(kvsim_fidelity_sil_prefill_terms(&unk, KVSIM_FID_SIL_RANGE_AUTO, &c, &err), 0);
  cr_assert(strstr(err.msg, "no-such-model") != NULL, "names the model: %s", err.msg);
}
