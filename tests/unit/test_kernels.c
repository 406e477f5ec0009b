/* Kernel profiles (kvsim/kernels.h, sim/src/perf/kernels*.c): the reader on
 * small hand-written profiles (errors, holes, the lower envelope), and the
 * lookups on the catalog's h100-sxm profile against the numbers of
 * configs/kernels/h100-sxm.json read here with cJSON. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "kvsim/gpu.h"
#include "kvsim/kernels.h"
#include "kvsim/model.h"
#include "kvsim/perf.h"
#include "kvsim/plan.h"

#ifndef KVSIM_SOURCE_DIR
#define KVSIM_SOURCE_DIR "."
#endif

/* ---- hand-written profiles ---- */

/* GEMM: m {1, 2}, n {64, 128}, k {64, 128}; times rise with every axis, so
 * the envelope leaves them as they are. T[n][k][m]. */
#define GEMM_OK                                                                                        \
  "{\"m\": [1, 2], \"n\": [64, 128], \"k\": [64, 128], \"dtypes\": {\"bfloat16\": "                    \
  "[[[10, 20], [12, 22]], [[14, 24], [16, 26]]]}}"
/* Prefill: 8 heads, 8 KV heads, head_dim 128; batch {1, 2, 4} x isl {16,
 * 32}; batch 4 at isl 16 not measured. */
#define CTX_OK                                                                                         \
  "[{\"head_dim\": 128, \"num_heads\": 8, \"num_kv_heads\": 8, \"kv_dtype\": \"bfloat16\", "            \
  "\"batch\": [1, 2, 4], \"isl\": [16, 32], \"us\": [[1, 4], [2, 8], [null, 16]]}]"
#define GEN_OK                                                                                         \
  "[{\"head_dim\": 128, \"num_heads\": 8, \"num_kv_heads\": 8, \"kv_dtype\": \"bfloat16\", "            \
  "\"batch\": [1, 2], \"kv_len\": [16, 32], \"us\": [[1, 2], [2, 4]]}]"

static void profile(char *out, size_t cap, const char *head, const char *gemm, const char *ctx, const char *gen) {
  snprintf(out, cap,
           "{%s\"source\": \"hand\", \"vllm_version\": \"0.0.0\", \"units\": \"us\", \"gemm\": %s, "
           "\"context_attention\": %s, \"generation_attention\": %s}",
           head, gemm, ctx, gen);
}

static kvsim_kernels_t *parse_ok(const char *json) {
  kvsim_kernels_t *k = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_kernels_parse(json, "p.json", &k, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_not_null(k, "a profile");
  return k;
}

Test(kernels, a_hand_written_profile_reads_and_looks_up_at_its_grid) {
  char j[2048];
  profile(j, sizeof j, "\"gpu\": \"t\", ", GEMM_OK, CTX_OK, GEN_OK);
  kvsim_kernels_t *k = parse_ok(j);
  cr_assert_str_eq(kvsim_kernels_gpu(k), "t", "gpu");
  cr_assert_str_eq(kvsim_kernels_source(k), "hand", "source");
  cr_assert_str_eq(kvsim_kernels_vllm_version(k), "0.0.0", "version");
  cr_assert(kvsim_kernels_has_gemm(k, KVSIM_KGEMM_BF16) && !kvsim_kernels_has_gemm(k, KVSIM_KGEMM_FP8),
            "bf16 only");
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 1, 64, 64), 10, 1e-12, "grid point");
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 2, 128, 64), 24, 1e-12, "grid point");
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 1.5, 64, 64), 15, 1e-12, "linear in m");
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 1, 96, 96), 13, 1e-12,
                     "bilinear in (n, k): mean of 10, 12, 14, 16");
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 4, 64, 64), 40, 1e-12, "proportional past m's end");
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 1, 256, 64), 28, 1e-12, "proportional past n's end");
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 1, 32, 32), 10, 1e-12, "first point below the start");
  cr_assert_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_FP8, 1, 64, 64), 0.0, "an absent precision is 0");
  cr_assert_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 0, 64, 64), 0.0, "no rows, no time");
  /* Derived: the best rate, and the shortest kernel. */
  cr_assert_float_eq(kvsim_kernels_min_kernel_us(k), 10, 1e-12, "shortest kernel");
  cr_assert_float_eq(kvsim_kernels_peak_flops(k, KVSIM_KGEMM_BF16), 2.0 * 2 * 128 * 128 / 26e-6, 1e-3,
                     "best rate: the largest shape");
  cr_assert_eq(kvsim_kernels_peak_flops(k, KVSIM_KGEMM_FP8), 0.0, "no fp8 rate");
  /* Attention at its grid, bilinear between, quadratic past the prompt axis. */
  cr_assert_float_eq(kvsim_kernels_attn_us(k, false, false, 8, 8, 128, 2, 32), 4, 1e-12, "decode grid point");
  cr_assert_float_eq(kvsim_kernels_attn_us(k, false, false, 8, 8, 128, 1.5, 24), 2.25, 1e-12, "bilinear");
  cr_assert_float_eq(kvsim_kernels_attn_us(k, true, false, 8, 8, 128, 1, 64), 16, 1e-12,
                     "prefill past the last length: its square");
  cr_assert_float_eq(kvsim_kernels_attn_us(k, false, false, 8, 8, 128, 1, 64), 4, 1e-12,
                     "decode past the last length: proportional");
  cr_assert_lt(kvsim_kernels_allreduce_us(k, 2, 1024, true), 0, "no all-reduce table");
  cr_assert_lt(kvsim_kernels_nccl_us(k, "all_gather", 2, 1024), 0, "no NCCL table");
  cr_assert_eq(kvsim_kernels_moe_us(k, "bfloat16", 64, 64, 2, 8, 1, 1, 4), (double)KVSIM_ENOENT, "no MoE table");
  kvsim_kernels_free(k);
}

Test(kernels, holes_in_attention_grids_are_filled_proportionally_in_batch) {
  char j[2048];
  profile(j, sizeof j, "\"gpu\": \"t\", ", GEMM_OK, CTX_OK, GEN_OK);
  kvsim_kernels_t *k = parse_ok(j);
  /* batch 4 at isl 16: batch 2's 2 us x 4 / 2. */
  cr_assert_float_eq(kvsim_kernels_attn_us(k, true, false, 8, 8, 128, 4, 16), 4, 1e-12, "filled: %g",
                     kvsim_kernels_attn_us(k, true, false, 8, 8, 128, 4, 16));
  cr_assert_float_eq(kvsim_kernels_attn_us(k, true, false, 8, 8, 128, 4, 32), 16, 1e-12, "measured");
  kvsim_kernels_free(k);
  /* A hole at every batch of the shortest length cannot be filled. */
  profile(j, sizeof j, "\"gpu\": \"t\", ", GEMM_OK,
          "[{\"head_dim\": 128, \"num_heads\": 8, \"num_kv_heads\": 8, \"kv_dtype\": \"bfloat16\", "
          "\"batch\": [1, 2], \"isl\": [16, 32], \"us\": [[null, 4], [null, 8]]}]",
          GEN_OK);
  kvsim_kernels_t *bad = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_kernels_parse(j, "p.json", &bad, &err), KVSIM_EINVAL, "refused");
  cr_assert(strstr(err.msg, "p.json: context_attention") != NULL, "names file and key: %s", err.msg);
  cr_assert_null(bad, "nothing returned");
}

Test(kernels, the_lower_envelope_replaces_a_slower_smaller_shape) {
  /* T(n 64, k 64, m 1) = 50 us, slower than every larger shape: the
   * engine could run it with the (n 64, k 128, m 1) kernel, 12 us. */
  char j[2048];
  profile(j, sizeof j, "\"gpu\": \"t\", ",
          "{\"m\": [1, 2], \"n\": [64, 128], \"k\": [64, 128], \"dtypes\": {\"bfloat16\": "
          "[[[50, 20], [12, 22]], [[14, 24], [16, 26]]]}}",
          "[{\"head_dim\": 128, \"num_heads\": 8, \"num_kv_heads\": 8, \"kv_dtype\": \"bfloat16\", "
          "\"batch\": [1, 2], \"isl\": [16, 32], \"us\": [[9, 4], [2, 8]]}]",
          GEN_OK);
  kvsim_kernels_t *k = parse_ok(j);
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 1, 64, 64), 12, 1e-12,
                     "the fastest larger shape: %g", kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 1, 64, 64));
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 2, 64, 64), 20, 1e-12, "a faster cell stays");
  cr_assert_float_eq(kvsim_kernels_attn_us(k, true, false, 8, 8, 128, 1, 16), 2, 1e-12,
                     "attention too: batch 2's 2 us replaces 9 us");
  cr_assert_float_eq(kvsim_kernels_attn_us(k, true, false, 8, 8, 128, 1, 32), 4, 1e-12, "unchanged");
  kvsim_kernels_free(k);
}

/* Each bad profile: one line naming the file and the key. */
Test(kernels, bad_profiles_are_one_line_naming_file_and_key) {
  char missing[2048], zero[2048], desc[2048], nobf16[2048], negattn[2048];
  profile(missing, sizeof missing, "", GEMM_OK, CTX_OK, GEN_OK); /* no "gpu" */
  profile(zero, sizeof zero, "\"gpu\": \"t\", ",
          "{\"m\": [1, 2], \"n\": [64, 128], \"k\": [64, 128], \"dtypes\": {\"bfloat16\": "
          "[[[10, 20], [12, 0]], [[14, 24], [16, 26]]]}}",
          CTX_OK, GEN_OK);
  profile(desc, sizeof desc, "\"gpu\": \"t\", ",
          "{\"m\": [2, 1], \"n\": [64, 128], \"k\": [64, 128], \"dtypes\": {\"bfloat16\": "
          "[[[10, 20], [12, 22]], [[14, 24], [16, 26]]]}}",
          CTX_OK, GEN_OK);
  profile(nobf16, sizeof nobf16, "\"gpu\": \"t\", ",
          "{\"m\": [1, 2], \"n\": [64, 128], \"k\": [64, 128], \"dtypes\": {\"fp8\": "
          "[[[10, 20], [12, 22]], [[14, 24], [16, 26]]]}}",
          CTX_OK, GEN_OK);
  profile(negattn, sizeof negattn, "\"gpu\": \"t\", ", GEMM_OK, CTX_OK,
          "[{\"head_dim\": 128, \"num_heads\": 8, \"num_kv_heads\": 8, \"kv_dtype\": \"bfloat16\", "
          "\"batch\": [1, 2], \"kv_len\": [16, 32], \"us\": [[1, 2], [-2, 4]]}]");
  const struct {
    const char *json, *msg;
  } cases[] = {
      {missing, "p.json: gpu: missing"},
      {zero, "p.json: gemm.dtypes: expected positive finite numbers"},
      {desc, "p.json: m: expected ascending positive numbers"},
      {nobf16, "p.json: gemm.dtypes: no bfloat16 table"},
      {negattn, "p.json: generation_attention: expected positive finite numbers"},
      {"{\"gpu\": 3}", "p.json"},
      {"not json", "p.json"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kvsim_kernels_t *k = NULL;
    kvsim_err err = {0};
    int rc = kvsim_kernels_parse(cases[i].json, "p.json", &k, &err);
    cr_assert_lt(rc, 0, "case %zu refused", i);
    cr_assert_null(k, "case %zu: nothing returned", i);
    cr_assert(strstr(err.msg, cases[i].msg) != NULL, "case %zu: '%s' in: %s", i, cases[i].msg, err.msg);
    cr_assert_null(strchr(err.msg, '\n'), "case %zu: one line: %s", i, err.msg);
  }
  /* An unknown catalog name is refused, naming it. */
  const kvsim_kernels_t *k;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_kernels_get("h100-sxxm", &k, &err), KVSIM_ENOENT, "unknown");
  cr_assert(strstr(err.msg, "h100-sxxm") != NULL, "named: %s", err.msg);
}

/* ---- the catalog's h100-sxm profile against its file ---- */

static cJSON *h100_json(void) {
  const char *path = KVSIM_SOURCE_DIR "/configs/kernels/h100-sxm.json";
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  cr_assert_not_null(text, "memory");
  cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n, "read %s", path);
  text[n] = '\0';
  fclose(f);
  cJSON *j = cJSON_Parse(text);
  free(text);
  cr_assert_not_null(j, "%s parses", path);
  return j;
}

static const kvsim_kernels_t *h100(void) {
  const kvsim_kernels_t *k;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_kernels_get("h100-sxm", &k, &err), KVSIM_OK, "%s", err.msg);
  return k;
}

static int index_of(const cJSON *axis, double v) {
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, axis) {
    if (e->valuedouble == v)
      return i;
    i++;
  }
  cr_assert_fail("%g is not on the axis", v);
  return -1;
}

static double num_at(const cJSON *a, int i) { return cJSON_GetArrayItem(a, i)->valuedouble; }

/* The bf16 GEMM table's cell (n, k, m) as stored, and the least time of it
 * and of every larger shape (the lower envelope, by brute force). */
static void gemm_cell(const cJSON *j, double m, double n, double k, double *raw, double *env) {
  const cJSON *g = cJSON_GetObjectItem(j, "gemm");
  const cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(g, "dtypes"), "bfloat16");
  const int im = index_of(cJSON_GetObjectItem(g, "m"), m), in = index_of(cJSON_GetObjectItem(g, "n"), n),
            ik = index_of(cJSON_GetObjectItem(g, "k"), k);
  const int nm = cJSON_GetArraySize(cJSON_GetObjectItem(g, "m")), nn = cJSON_GetArraySize(cJSON_GetObjectItem(g, "n")),
            nk = cJSON_GetArraySize(cJSON_GetObjectItem(g, "k"));
  *raw = num_at(cJSON_GetArrayItem(cJSON_GetArrayItem(t, in), ik), im);
  *env = INFINITY;
  for (int a = in; a < nn; a++)
    for (int b = ik; b < nk; b++)
      for (int c = im; c < nm; c++)
        *env = fmin(*env, num_at(cJSON_GetArrayItem(cJSON_GetArrayItem(t, a), b), c));
}

Test(kernels, h100_gemm_lookups_match_the_table) {
  cJSON *j = h100_json();
  const kvsim_kernels_t *k = h100();
  /* Grid points: the envelope of the file's numbers; at least one where no
   * larger shape is faster, so the stored number itself comes back. */
  static const double pts[][3] = {{8, 4096, 4096}, {1, 6144, 4096}, {2048, 4096, 12288},
                                  {256, 1024, 4096}, {32768, 16384, 16384}};
  int exact = 0;
  for (size_t i = 0; i < sizeof pts / sizeof *pts; i++) {
    double raw, env;
    gemm_cell(j, pts[i][0], pts[i][1], pts[i][2], &raw, &env);
    const double got = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, pts[i][0], pts[i][1], pts[i][2]);
    cr_assert_float_eq(got, env, 1e-9, "m %g n %g k %g: %g us, table %g (envelope %g)", pts[i][0], pts[i][1],
                       pts[i][2], got, raw, env);
    exact += raw == env;
  }
  cr_assert_gt(exact, 0, "some point is the stored number itself");
  /* Linear in m between grid points (m 8 and 16 at n = k = 4096). */
  const double t8 = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 8, 4096, 4096);
  const double t16 = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 16, 4096, 4096);
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 10, 4096, 4096), t8 + 0.25 * (t16 - t8), 1e-9,
                     "a quarter of the way from m 8 to 16");
  /* Bilinear in (n, k): n 4608 halfway from 4096 to 5120, k 6656 halfway
   * from 6144 to 7168, at m 64. */
  const double a = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 64, 4096, 6144);
  const double b = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 64, 4096, 7168);
  const double c = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 64, 5120, 6144);
  const double d = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 64, 5120, 7168);
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 64, 4608, 6656), (a + b + c + d) / 4, 1e-9,
                     "the mean of the four corners");
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 64, 4352, 6144), a + 0.25 * (c - a), 1e-9,
                     "linear along n on a k grid line");
  /* Past the end of m: proportional. */
  const double tmax = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 32768, 4096, 4096);
  cr_assert_float_eq(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 65536, 4096, 4096), 2 * tmax, 1e-9,
                     "twice the last m, twice the time");
  /* The fp8 tables are there, and faster than bf16 on a large GEMM. */
  cr_assert(kvsim_kernels_has_gemm(k, KVSIM_KGEMM_FP8) && kvsim_kernels_has_gemm(k, KVSIM_KGEMM_FP8_BLOCK), "fp8");
  cr_assert_lt(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_FP8, 8192, 8192, 8192),
               kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 8192, 8192, 8192), "fp8 faster at 8192^3");
  /* Derived figures in the H100's range: the best bf16 rate below its
   * 989 TFLOPS spec, weights streamed below its 3.35 TB/s. */
  const double peak = kvsim_kernels_peak_flops(k, KVSIM_KGEMM_BF16), bw = kvsim_kernels_stream_bw(k);
  cr_assert(peak > 400e12 && peak < 989.5e12, "best bf16 rate %g", peak);
  cr_assert(bw > 1e12 && bw < 3.35e12, "streaming rate %g", bw);
  cr_assert(kvsim_kernels_min_kernel_us(k) > 1 && kvsim_kernels_min_kernel_us(k) < 10, "shortest kernel %g us",
            kvsim_kernels_min_kernel_us(k));
  cJSON_Delete(j);
}

/* The attention row of a head shape, bf16 KV, full attention. */
static const cJSON *attn_row(const cJSON *j, bool prefill, int heads, int kv, int hd) {
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, prefill ? "context_attention" : "generation_attention")) {
    const cJSON *w = cJSON_GetObjectItem(e, "window");
    if ((w && w->valuedouble > 0) || strcmp(cJSON_GetObjectItem(e, "kv_dtype")->valuestring, "bfloat16"))
      continue;
    if (cJSON_GetObjectItem(e, "num_heads")->valueint == heads && cJSON_GetObjectItem(e, "num_kv_heads")->valueint == kv &&
        cJSON_GetObjectItem(e, "head_dim")->valueint == hd)
      return e;
  }
  return NULL;
}

/* A cell of an attention row, and the least measured time of it and of
 * every larger (batch, length). */
static void attn_cell(const cJSON *row, bool prefill, double batch, double len, double *raw, double *env) {
  const cJSON *xs = cJSON_GetObjectItem(row, "batch"), *ys = cJSON_GetObjectItem(row, prefill ? "isl" : "kv_len");
  const cJSON *us = cJSON_GetObjectItem(row, "us");
  const int i = index_of(xs, batch), jj = index_of(ys, len);
  const cJSON *v = cJSON_GetArrayItem(cJSON_GetArrayItem(us, i), jj);
  cr_assert(cJSON_IsNumber(v), "a measured cell");
  *raw = v->valuedouble;
  *env = INFINITY;
  for (int a = i; a < cJSON_GetArraySize(xs); a++)
    for (int b = jj; b < cJSON_GetArraySize(ys); b++) {
      const cJSON *c = cJSON_GetArrayItem(cJSON_GetArrayItem(us, a), b);
      if (cJSON_IsNumber(c))
        *env = fmin(*env, c->valuedouble);
    }
}

Test(kernels, h100_attention_lookups_match_the_table_and_scale_to_the_nearest_shape) {
  cJSON *j = h100_json();
  const kvsim_kernels_t *k = h100();
  /* Llama-3.1-8B's shape (32 heads, 8 KV heads, head_dim 128). */
  const cJSON *gen = attn_row(j, false, 32, 8, 128), *ctx = attn_row(j, true, 32, 8, 128);
  cr_assert(gen && ctx, "the profile has the 8B shape");
  double raw, env;
  attn_cell(gen, false, 8, 1024, &raw, &env);
  cr_assert_float_eq(kvsim_kernels_attn_us(k, false, false, 32, 8, 128, 8, 1024), env, 1e-9,
                     "decode batch 8 at 1024 keys: table %g, envelope %g", raw, env);
  attn_cell(ctx, true, 1, 1024, &raw, &env);
  cr_assert_float_eq(kvsim_kernels_attn_us(k, true, false, 32, 8, 128, 1, 1024), env, 1e-9,
                     "prefill of one 1024-token prompt: table %g, envelope %g", raw, env);
  /* Decode of 32 query / 16 KV heads (not measured): the nearest shape,
   * 32 / 8, times the ratio of KV heads. */
  cr_assert_null(attn_row(j, false, 32, 16, 128), "32/16 is not in the decode table");
  const double d8 = kvsim_kernels_attn_us(k, false, false, 32, 8, 128, 16, 2048);
  cr_assert_float_eq(kvsim_kernels_attn_us(k, false, false, 32, 16, 128, 16, 2048), 2 * d8, 1e-9,
                     "decode scales with KV heads");
  /* Prefill of 48 query heads (not measured): 40 / 8 is nearest, times
   * 48 / 40 query heads. */
  cr_assert_null(attn_row(j, true, 48, 8, 128), "48/8 is not in the prefill table");
  const double p40 = kvsim_kernels_attn_us(k, true, false, 40, 8, 128, 2, 2048);
  cr_assert_float_eq(kvsim_kernels_attn_us(k, true, false, 48, 8, 128, 2, 2048), 1.2 * p40, 1e-9,
                     "prefill scales with query heads");
  /* Longer contexts and larger batches cost more; an fp8 cache has its
   * own rows. */
  cr_assert_gt(kvsim_kernels_attn_us(k, false, false, 32, 8, 128, 64, 32768),
               kvsim_kernels_attn_us(k, false, false, 32, 8, 128, 64, 1024), "longer context");
  cr_assert_gt(kvsim_kernels_attn_us(k, true, false, 32, 8, 128, 1, 8192),
               kvsim_kernels_attn_us(k, true, false, 32, 8, 128, 1, 1024), "longer prompt");
  cr_assert_gt(kvsim_kernels_attn_us(k, false, true, 32, 8, 128, 8, 1024), 0, "fp8 KV rows");
  cJSON_Delete(j);
}

/* A collective row by mode/op and GPU count. */
static const cJSON *coll_row(const cJSON *j, const char *list, const char *key, const char *op, int gpus) {
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, list)) {
    if (!strcmp(cJSON_GetObjectItem(e, key)->valuestring, op) && cJSON_GetObjectItem(e, "num_gpus")->valueint == gpus)
      return e;
  }
  return NULL;
}

/* Least time at `bytes` or any larger message (the envelope of a curve). */
static double curve_env(const cJSON *row, const char *xkey, double x) {
  const cJSON *xs = cJSON_GetObjectItem(row, xkey), *ys = cJSON_GetObjectItem(row, "us");
  double env = INFINITY;
  for (int i = index_of(xs, x); i < cJSON_GetArraySize(xs); i++)
    env = fmin(env, num_at(ys, i));
  return env;
}

static void plan_for(const char *model, const char *gpu, int tp, bool eager, kvsim_model_t *m, kvsim_gpu_t *g,
                     kvsim_plan_t *pl, kvsim_perf_t *pf) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load(model, m, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_load(gpu, g, &err), KVSIM_OK, "%s", err.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.tp = tp;
  p.max_model_len = 8192;
  p.enforce_eager = eager;
  cr_assert_eq(kvsim_plan_compute(m, g, &p, pl, &err), KVSIM_OK, "plan: %s", err.msg);
  cr_assert_eq(kvsim_perf_init(pf, m, g, pl, &err), KVSIM_OK, "perf: %s", err.msg);
}

Test(kernels, h100_allreduce_graph_and_eager_rows_and_the_switch_at_512_tokens) {
  cJSON *j = h100_json();
  const kvsim_kernels_t *k = h100();
  const cJSON *graph = coll_row(j, "allreduce", "mode", "graph", 2), *eager = coll_row(j, "allreduce", "mode", "eager", 2);
  cr_assert(graph && eager, "both rows for 2 GPUs");
  const double bytes = 1048576;
  const double g = kvsim_kernels_allreduce_us(k, 2, bytes, true), e = kvsim_kernels_allreduce_us(k, 2, bytes, false);
  cr_assert_float_eq(g, curve_env(graph, "bytes", bytes), 1e-9, "graph row at 1 MiB");
  cr_assert_float_eq(e, curve_env(eager, "bytes", bytes), 1e-9, "eager row at 1 MiB");
  cr_assert_neq(g, e, "graph and eager differ");
  cr_assert_lt(g, e, "a captured all-reduce launches faster: %g vs %g us", g, e);
  /* A GPU count between rows is the nearest row's, its bytes scaled by the
   * ring's 2 (n - 1) / n: 3 GPUs from the 2- or 4-GPU row. */
  cr_assert_gt(kvsim_kernels_allreduce_us(k, 3, bytes, true), 0, "3 GPUs from a neighbour");
  /* The step model: tokens up to 512 (vLLM's capture size) in a graph. */
  kvsim_model_t m;
  kvsim_gpu_t gpu;
  kvsim_plan_t pl;
  kvsim_perf_t pf;
  plan_for("llama-3.1-8b", "h100-sxm", 2, false, &m, &gpu, &pl, &pf);
  cr_assert_eq(pf.graph_max_tokens, 512, "vLLM's default capture size");
  const double msg = 512.0 * (double)m.hidden_size * 2;
  cr_assert_float_eq(kvsim_perf_allreduce_time(&pf, msg, 512), kvsim_kernels_allreduce_us(k, 2, msg, true) * 1e-6,
                     1e-15, "512 tokens: graph");
  cr_assert_float_eq(kvsim_perf_allreduce_time(&pf, msg, 513), kvsim_kernels_allreduce_us(k, 2, msg, false) * 1e-6,
                     1e-15, "513 tokens: eager");
  cr_assert_neq(kvsim_perf_allreduce_time(&pf, msg, 512), kvsim_perf_allreduce_time(&pf, msg, 513), "a switch");
  /* --enforce-eager: nothing captured. */
  plan_for("llama-3.1-8b", "h100-sxm", 2, true, &m, &gpu, &pl, &pf);
  cr_assert_float_eq(kvsim_perf_allreduce_time(&pf, msg, 8), kvsim_kernels_allreduce_us(k, 2, msg, false) * 1e-6,
                     1e-15, "eager at 8 tokens under enforce_eager");
  plan_for("llama-3.1-8b", "h100-sxm", 1, false, &m, &gpu, &pl, &pf);
  cr_assert_eq(kvsim_perf_allreduce_time(&pf, msg, 8), 0.0, "no all-reduce at TP 1");
  cJSON_Delete(j);
}

Test(kernels, h100_moe_shape_present_and_absent) {
  cJSON *j = h100_json();
  const kvsim_kernels_t *k = h100();
  /* Qwen3-30B-A3B's fused layer (hidden 2048, 768 per expert, top 8 of
   * 128) at TP 1, EP 1: the skewed-routing row. */
  const cJSON *e, *row = NULL;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "moe")) {
    if (!strcmp(cJSON_GetObjectItem(e, "dtype")->valuestring, "bfloat16") &&
        cJSON_GetObjectItem(e, "hidden")->valueint == 2048 && cJSON_GetObjectItem(e, "inter")->valueint == 768 &&
        cJSON_GetObjectItem(e, "topk")->valueint == 8 && cJSON_GetObjectItem(e, "experts")->valueint == 128 &&
        cJSON_GetObjectItem(e, "tp")->valueint == 1 && cJSON_GetObjectItem(e, "ep")->valueint == 1 &&
        !strcmp(cJSON_GetObjectItem(e, "distribution")->valuestring, "power_law_1.01"))
      row = e;
  }
  cr_assert_not_null(row, "the profile has the shape");
  const double t = kvsim_kernels_moe_us(k, "bfloat16", 2048, 768, 8, 128, 1, 1, 8);
  cr_assert_float_eq(t, curve_env(row, "tokens", 8), 1e-9, "8 tokens: the table's %g", t);
  cr_assert_gt(kvsim_kernels_moe_us(k, "bfloat16", 2048, 768, 8, 128, 1, 1, 1024), t, "more tokens, more time");
  cr_assert_eq(kvsim_kernels_moe_us(k, "bfloat16", 2048, 768, 8, 128, 1, 1, 0), 0.0, "no tokens, no time");
  cr_assert_eq(kvsim_kernels_moe_us(k, "bfloat16", 2048, 768, 8, 100, 1, 1, 8), (double)KVSIM_ENOENT,
               "100 experts: not in the profile");
  cr_assert_eq(kvsim_kernels_moe_us(k, "nvfp4", 2048, 768, 8, 128, 1, 1, 8), (double)KVSIM_ENOENT,
               "a precision not measured");
  cJSON_Delete(j);
}
