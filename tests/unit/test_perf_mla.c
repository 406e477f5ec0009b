/* The MLA attention block (sim/src/perf/mla.c): DeepSeek-V3 on the B200,
 * whose profile has the MLA module tables, against the numbers of
 * configs/kernels/b200.json read here with cJSON (a lookup at a table row,
 * interpolation between rows), the no-double-count rule (the latent
 * projections' GEMM and the rotary leave their terms, their work stays
 * counted), and the GPUs and models that keep the ordinary path. */
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
#include "perf/ktab.h"
#include "perf/terms.h"

#ifndef KVSIM_SOURCE_DIR
#define KVSIM_SOURCE_DIR "."
#endif

typedef struct setup {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_plan_t pl;
  kvsim_perf_t pf;
} setup_t;

static void make(setup_t *s, const char *model, const char *gpu, int tp, const char *quant, kvsim_kv_dtype kv) {
  kvsim_err err = {0};
  memset(s, 0, sizeof *s);
  cr_assert_eq(kvsim_model_load(model, &s->m, &err), KVSIM_OK, "load %s: %s", model, err.msg);
  cr_assert_eq(kvsim_gpu_load(gpu, &s->g, &err), KVSIM_OK, "load %s: %s", gpu, err.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.tp = tp;
  p.kv_dtype = kv;
  p.max_model_len = 16384;
  snprintf(p.quantization, sizeof p.quantization, "%s", quant);
  cr_assert_eq(kvsim_plan_compute(&s->m, &s->g, &p, &s->pl, &err), KVSIM_OK, "plan %s/%s: %s", model, gpu, err.msg);
  cr_assert_eq(kvsim_perf_init(&s->pf, &s->m, &s->g, &s->pl, &err), KVSIM_OK, "perf %s/%s: %s", model, gpu, err.msg);
}

static kvsim_batch_shape_t decode(int64_t n, int64_t ctx) {
  kvsim_batch_shape_t b;
  memset(&b, 0, sizeof b);
  for (int64_t i = 0; i < n; i++)
    kvsim_batch_shape_add(&b, ctx, 1, 0);
  return b;
}

static cJSON *b200_json(void) {
  const char *path = KVSIM_SOURCE_DIR "/configs/kernels/b200.json";
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

static const cJSON *mla_row(const cJSON *j, const char *phase, const char *gemm, const char *kv, int heads) {
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "mla_module")) {
    if (!strcmp(cJSON_GetObjectItem(e, "phase")->valuestring, phase) &&
        !strcmp(cJSON_GetObjectItem(e, "gemm")->valuestring, gemm) &&
        !strcmp(cJSON_GetObjectItem(e, "kv_dtype")->valuestring, kv) &&
        cJSON_GetObjectItem(e, "num_heads")->valueint == heads)
      return e;
  }
  return NULL;
}

static int index_of(const cJSON *axis, double v) {
  int i = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, axis) {
    if (x->valuedouble == v)
      return i;
    i++;
  }
  cr_assert_fail("%g is not on the axis", v);
  return -1;
}

/* The table's cell at (batch, len) after the reader's lower envelope: the
 * least of it and every cell of a larger batch and length. */
static double cell(const cJSON *e, const char *len_key, double batch, double len) {
  const cJSON *bs = cJSON_GetObjectItem(e, "batch"), *ls = cJSON_GetObjectItem(e, len_key);
  const int bi = index_of(bs, batch), li = index_of(ls, len);
  double best = INFINITY;
  for (int i = bi; i < cJSON_GetArraySize(bs); i++)
    for (int k = li; k < cJSON_GetArraySize(ls); k++) {
      const cJSON *v = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "us"), i), k);
      if (cJSON_IsNumber(v) && v->valuedouble < best)
        best = v->valuedouble;
    }
  return best;
}

Test(perf_mla, deepseek_v3_on_b200_reads_the_module_table_at_a_row_and_between_rows) {
  setup_t s;
  make(&s, "deepseek-v3", "b200", 8, "", KVSIM_KV_FP8);
  cr_assert_not_null(s.pf.mla_gen, "B200 has DeepSeek-V3's module tables at 16 heads, fp8_block, fp8 KV");
  cr_assert_not_null(s.pf.mla_ctx, "and the context one");
  cJSON *j = b200_json();
  const cJSON *gen = mla_row(j, "generation", "fp8_block", "fp8", 16);
  const cJSON *ctx = mla_row(j, "context", "fp8_block", "fp8", 16);
  cr_assert(gen && ctx, "the profile has the rows");
  /* At a row: 4 sequences of 8192 tokens (8191 cached + the new one). */
  const double at = cell(gen, "seq_len", 4, 8192);
  cr_assert_float_eq(kvsim__kmla_at(s.pf.mla_gen, 4, 8192), at, 1e-9, "decode 4 x 8192: table %g", at);
  /* Between rows: linear in length and in batch. */
  const double lo = cell(gen, "seq_len", 4, 4096), mid = 0.5 * (lo + at);
  cr_assert_float_eq(kvsim__kmla_at(s.pf.mla_gen, 4, 6144), mid, 1e-9, "halfway in length: %g", mid);
  const double b8 = cell(gen, "seq_len", 8, 8192);
  cr_assert_float_eq(kvsim__kmla_at(s.pf.mla_gen, 6, 8192), 0.5 * (at + b8), 1e-9, "halfway in batch");
  const double p = cell(ctx, "isl", 1, 8192);
  cr_assert_float_eq(kvsim__kmla_at(s.pf.mla_ctx, 1, 8192), p, 1e-9, "prefill of one 8192-token prompt: %g", p);
  /* The step: every layer's block, and nothing else in the attention term. */
  kvsim_batch_shape_t b = decode(4, 8191);
  kvsim_step_cost_t c;
  kvsim_perf_step_time(&s.pf, &b, &c);
  cr_assert_float_eq(c.attn_s, s.m.num_layers * at * 1e-6, 1e-12, "61 layers x %g us, got %g s", at, c.attn_s);
  b = (kvsim_batch_shape_t){0};
  kvsim_batch_shape_add(&b, 0, 8192, 0);
  kvsim_perf_step_time(&s.pf, &b, &c);
  cr_assert_float_eq(c.attn_s, s.m.num_layers * p * 1e-6, 1e-12, "a fresh 8192-token prompt: 61 x %g us", p);
  cJSON_Delete(j);
}

Test(perf_mla, a_cached_prefix_adds_the_ordinary_prefill_attention_of_its_extra_keys) {
  setup_t s;
  make(&s, "deepseek-v3", "b200", 8, "", KVSIM_KV_FP8);
  kvsim_batch_shape_t fresh = {0}, cached = {0};
  kvsim_batch_shape_add(&fresh, 0, 2048, 0);
  kvsim_batch_shape_add(&cached, 6144, 2048, 0);
  kvsim_step_cost_t a, c;
  kvsim_perf_step_time(&s.pf, &fresh, &a);
  kvsim_perf_step_time(&s.pf, &cached, &c);
  /* Equal pairs: 2048 x 6144 + 2048 x 2049 / 2 = s (s + 1) / 2. */
  const double pairs = cached.attn_full, len = (sqrt(1.0 + 8.0 * pairs) - 1.0) / 2.0;
  const double extra = (kvsim__kattn_at(s.pf.ctx, true, 1, len) - kvsim__kattn_at(s.pf.ctx, true, 1, 2048)) *
                       s.pf.ctx_scale;
  cr_assert_gt(extra, 0, "a longer prefix costs more attention");
  cr_assert_float_eq(c.attn_s - a.attn_s, s.m.num_layers * extra * 1e-6, 1e-12, "the prefix's extra keys: %g s",
                     c.attn_s - a.attn_s);
}

Test(perf_mla, the_module_takes_the_latent_projections_and_the_rotary_without_losing_their_work) {
  setup_t s;
  make(&s, "deepseek-v3", "b200", 8, "", KVSIM_KV_FP8);
  int block = -1;
  for (int i = 0; i < s.pf.ngemm; i++)
    if (s.pf.gemm[i].mla_block)
      block = i;
  cr_assert_geq(block, 0, "the latent projections' GEMM is marked as the module's");
  /* The same step without the module: the ordinary path. */
  kvsim_perf_t plain = s.pf;
  plain.mla_gen = plain.mla_ctx = NULL;
  plain.gemm[block].mla_block = 0;
  kvsim_batch_shape_t b = decode(32, 4095);
  kvsim_step_cost_t c, o;
  kvsim_perf_step_time(&s.pf, &b, &c);
  kvsim_perf_step_time(&plain, &b, &o);
  const kvsim_perf_gemm_t *g = &s.pf.gemm[block];
  const double proj = g->count * kvsim__perf_gemm_us(&s.pf, g, 32) * 1e-6;
  cr_assert_gt(proj, 0, "the projections take time on the ordinary path");
  cr_assert_float_eq(o.gemm_s - c.gemm_s, proj, 1e-12, "GEMM term without the projections: %g vs %g s", c.gemm_s,
                     o.gemm_s);
  cr_assert_float_eq(c.flops, o.flops, 1e-3 * o.flops, "FLOPs still counted");
  cr_assert_float_eq(c.weight_bytes, o.weight_bytes, 1e-9 * o.weight_bytes, "weights still counted");
  /* The rotary runs inside the block: elementwise lost one kernel a layer
   * and the rope bytes. */
  cr_assert_float_eq(s.pf.elem_kernels, 3.0 * s.m.num_layers + 2.0, 1e-9, "norms x2 + activation a layer");
  /* Speculative drafts are not timed by the tables: the projections' GEMM
   * takes their rows. */
  kvsim_batch_shape_t v = {0}, d = {0};
  kvsim_batch_shape_add_verify(&v, 4095, 4, 0);
  kvsim_batch_shape_add(&d, 4098, 1, 0); /* the verify sequence attends to 4099 keys */
  kvsim_step_cost_t cv, cd;
  kvsim_perf_step_time(&s.pf, &v, &cv);
  kvsim_perf_step_time(&s.pf, &d, &cd);
  cr_assert_float_eq(cv.attn_s - cd.attn_s, g->count * kvsim__perf_gemm_us(&s.pf, g, 3) * 1e-6, 1e-12,
                     "three drafts: the projections at 3 rows");
}

Test(perf_mla, gpus_models_and_precisions_without_a_module_table_keep_the_ordinary_path) {
  setup_t s;
  /* The A100's 0.14.0 tables have no module table. */
  make(&s, "deepseek-v2-lite", "a100-80g", 1, "", KVSIM_KV_AUTO);
  cr_assert_null(s.pf.mla_gen, "no module table on the A100");
  /* DeepSeek-V2-Lite's block (hidden 2048, no q_lora) is not DeepSeek-V3's. */
  make(&s, "deepseek-v2-lite", "b200", 1, "", KVSIM_KV_AUTO);
  cr_assert_null(s.pf.mla_gen, "no table of V2-Lite's shape");
  for (int i = 0; i < s.pf.ngemm; i++)
    cr_assert_eq(s.pf.gemm[i].mla_block, 0, "its projections stay in the GEMM term");
  cr_assert_float_eq(s.pf.elem_kernels, 4.0 * s.m.num_layers + 2.0, 1e-9, "and its rotary in elementwise");
  /* A dense model never reads it. */
  make(&s, "llama-3.1-8b", "b200", 1, "", KVSIM_KV_AUTO);
  cr_assert_null(s.pf.mla_gen, "not MLA");
  /* TP 16 (8 heads per rank): not kept in the profile. */
  cr_assert_null(kvsim__kmla_find(s.pf.kern, false, KVSIM_KGEMM_BF16, false, 8,
                                  (const int[6]){7168, 1536, 512, 128, 64, 128}),
                 "heads 8 are left out");
  cr_assert_not_null(kvsim__kmla_find(s.pf.kern, false, KVSIM_KGEMM_BF16, false, 128,
                                      (const int[6]){7168, 1536, 512, 128, 64, 128}),
                     "heads 128 (TP 1) are kept");
}

/* The table row of DeepSeek-V3's fused MoE layer (fp8_block, 7168 / 2048,
 * top-8 of 256) at moe_tp = tp, under the skew the step model reads, after
 * the reader's lower envelope (at 1,024 tokens the measured 475 us at TP 8
 * is above the 441 us of 1,536: a tile switch). */
static double moe_cell(const cJSON *j, int tp, double tokens) {
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "moe")) {
    if (!strcmp(cJSON_GetObjectItem(e, "dtype")->valuestring, "fp8_block") &&
        cJSON_GetObjectItem(e, "hidden")->valueint == 7168 && cJSON_GetObjectItem(e, "inter")->valueint == 2048 &&
        cJSON_GetObjectItem(e, "topk")->valueint == 8 && cJSON_GetObjectItem(e, "experts")->valueint == 256 &&
        cJSON_GetObjectItem(e, "tp")->valueint == tp && cJSON_GetObjectItem(e, "ep")->valueint == 1 &&
        !strcmp(cJSON_GetObjectItem(e, "distribution")->valuestring, "power_law_1.01")) {
      const cJSON *us = cJSON_GetObjectItem(e, "us");
      double best = INFINITY;
      for (int i = index_of(cJSON_GetObjectItem(e, "tokens"), tokens); i < cJSON_GetArraySize(us); i++)
        best = fmin(best, cJSON_GetArrayItem(us, i)->valuedouble);
      return best;
    }
  }
  cr_assert_fail("no fp8_block MoE row of DeepSeek-V3's shape at tp %d", tp);
  return 0;
}

/* vLLM's eager all-reduce on tp GPUs at `bytes`, linear between the two
 * table sizes around it. */
static double allreduce_cell(const cJSON *j, int tp, double bytes) {
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "allreduce")) {
    if (cJSON_GetObjectItem(e, "num_gpus")->valueint != tp || strcmp(cJSON_GetObjectItem(e, "mode")->valuestring, "eager"))
      continue;
    const cJSON *bs = cJSON_GetObjectItem(e, "bytes"), *us = cJSON_GetObjectItem(e, "us");
    for (int i = 1; i < cJSON_GetArraySize(bs); i++) {
      const double b0 = cJSON_GetArrayItem(bs, i - 1)->valuedouble, b1 = cJSON_GetArrayItem(bs, i)->valuedouble;
      if (bytes >= b0 && bytes <= b1) {
        const double u0 = cJSON_GetArrayItem(us, i - 1)->valuedouble, u1 = cJSON_GetArrayItem(us, i)->valuedouble;
        return u0 + (u1 - u0) * (bytes - b0) / (b1 - b0);
      }
    }
  }
  cr_assert_fail("no eager all-reduce row around %g bytes on %d GPUs", bytes, tp);
  return 0;
}

/* The prefill of one prompt on an empty cache (issue 27: SGLang's measured
 * DeepSeek prefill on B200 is about twice this step): each of its large
 * terms is the table row it claims to read, summed over the layers that
 * run it: the MLA context module (all 61 layers: SGLang's
 * DeepseekV2AttentionMLA.forward_normal_prepare / forward_normal_core and
 * vLLM's MLA prefill both decompress the latent with kv_b_proj inside the
 * block the module times), the fused MoE (58 layers; the router GEMM and
 * shared expert are in the GEMM term), and two all-reduces of the
 * hidden state per layer (o_proj and the MLP, at 8192 or 1024 x 7168 x
 * 2 bytes, eager: above vLLM's graph sizes). */
Test(perf_mla, deepseek_v3_prefill_terms_are_the_b200_table_rows) {
  cJSON *j = b200_json();
  const int tps[2] = {8, 4};
  const double lens[2] = {8192, 1024};
  for (int t = 0; t < 2; t++) {
    setup_t s;
    make(&s, "deepseek-v3", "b200", tps[t], "fp8", KVSIM_KV_FP8);
    const cJSON *ctx = mla_row(j, "context", "fp8_block", "fp8", 128 / tps[t]);
    cr_assert_not_null(ctx, "the context module row at %d heads", 128 / tps[t]);
    for (int l = 0; l < 2; l++) {
      kvsim_batch_shape_t b;
      memset(&b, 0, sizeof b);
      kvsim_batch_shape_add(&b, 0, (int64_t)lens[l], 0);
      kvsim_step_cost_t c;
      kvsim_perf_step_time(&s.pf, &b, &c);
      const double mla = 61 * cell(ctx, "isl", 1, lens[l]) * 1e-6;
      const double moe = 58 * moe_cell(j, tps[t], lens[l]) * 1e-6;
      const double ar = 122 * allreduce_cell(j, tps[t], lens[l] * 7168 * 2) * 1e-6;
      cr_assert_float_eq(c.attn_s, mla, 1e-9, "TP%d, %g tokens: MLA %g s, table %g", tps[t], lens[l], c.attn_s, mla);
      cr_assert_float_eq(c.moe_s, moe, 1e-9, "TP%d, %g tokens: MoE %g s, table %g", tps[t], lens[l], c.moe_s, moe);
      cr_assert_float_eq(c.comm_s, ar, 1e-6 * ar, "TP%d, %g tokens: all-reduce %g s, table %g", tps[t], lens[l],
                         c.comm_s, ar);
      /* What is left (the dense layers' and shared experts' GEMMs, the
       * router, the lm_head on one row, norms) is a small share. */
      const double rest = c.gemm_s + c.elem_s;
      cr_assert(rest > 0 && rest < 0.15 * (mla + moe + ar), "TP%d, %g tokens: the rest %g s", tps[t], lens[l], rest);
      cr_assert(c.total_s >= c.roofline_s, "never under the roofline");
    }
  }
  cJSON_Delete(j);
}
