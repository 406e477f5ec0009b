/* Step-time model (sim/src/perf). Models and GPUs come from the compiled-in
 * catalogs; plans from kvsim_plan_compute with engine defaults. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/perf.h"
#include "kvsim/plan.h"

typedef struct setup {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_plan_t pl;
  kvsim_perf_t pf;
} setup_t;

/* Loads model and GPU, computes the plan with `tp`, `pp`, weight
 * quantization `quant` ("" = the model's) and KV dtype `kv`. */
static void make(setup_t *s, const char *model, const char *gpu, int tp, int pp,
                 const char *quant, kvsim_kv_dtype kv) {
  kvsim_err err = {0};
  memset(s, 0, sizeof *s);
  cr_assert_eq(kvsim_model_load(model, &s->m, &err), KVSIM_OK, "load %s: %s", model, err.msg);
  cr_assert_eq(kvsim_gpu_load(gpu, &s->g, &err), KVSIM_OK, "load %s: %s", gpu, err.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.tp = tp;
  p.pp = pp;
  p.kv_dtype = kv;
  snprintf(p.quantization, sizeof p.quantization, "%s", quant);
  /* Keep the plan independent of the model's (very long) max context. */
  p.max_model_len = 8192;
  cr_assert_eq(kvsim_plan_compute(&s->m, &s->g, &p, &s->pl, &err), KVSIM_OK, "plan %s/%s: %s",
               model, gpu, err.msg);
  cr_assert_eq(kvsim_perf_init(&s->pf, &s->m, &s->g, &s->pl, &err), KVSIM_OK, "perf init %s/%s: %s",
               model, gpu, err.msg);
}

/* `n` sequences decoding one token each on `ctx` cached tokens. */
static kvsim_batch_shape_t decode(int64_t n, int64_t ctx, int64_t window) {
  kvsim_batch_shape_t b;
  memset(&b, 0, sizeof b);
  for (int64_t i = 0; i < n; i++)
    kvsim_batch_shape_add(&b, ctx, 1, window);
  return b;
}

/* One sequence prefilling `tokens` tokens from scratch. */
static kvsim_batch_shape_t prefill(int64_t tokens, int64_t window) {
  kvsim_batch_shape_t b;
  memset(&b, 0, sizeof b);
  kvsim_batch_shape_add(&b, 0, tokens, window);
  return b;
}

static double step_s(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *c) {
  return kvsim_time_to_s(kvsim_perf_step_time(pf, b, c));
}

Test(perf, batch_shape_counts_causal_and_sliding_pairs) {
  kvsim_batch_shape_t b = prefill(8192, 4096);
  double full = 8192.0 * 8193.0 / 2;
  double sliding = 4096.0 * 4097.0 / 2 + 4096.0 * 4096.0; /* sum_{i<=8192} min(i, 4096) */
  cr_assert_float_eq(b.attn_full, full, 1e-6, "full pairs %g, want %g", b.attn_full, full);
  cr_assert_float_eq(b.attn_sliding, sliding, 1e-6, "sliding pairs %g, want %g", b.attn_sliding, sliding);
  cr_assert_eq(b.num_prefill_seqs, 1, "a fresh sequence is in prefill");
  cr_assert_eq(b.prefill_tokens, 8192, "prefill tokens %lld", (long long)b.prefill_tokens);
  kvsim_batch_shape_t d = decode(3, 10000, 4096);
  cr_assert_float_eq(d.attn_sliding, 3 * 4096.0, 1e-9, "a decode token sees the window: %g", d.attn_sliding);
  cr_assert_float_eq(d.attn_full, 3 * 10001.0, 1e-9, "a decode token sees context + itself: %g", d.attn_full);
  cr_assert_float_eq(d.kv_read_sliding, 3 * 4097.0, 1e-9, "window + new tokens read: %g", d.kv_read_sliding);
  cr_assert_eq(d.num_prefill_seqs, 0, "decodes are not prefills");
  cr_assert_eq(d.new_tokens, 3, "one token per decode");
}

Test(perf, prefill_is_compute_bound) {
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  kvsim_batch_shape_t b = prefill(8192, 0);
  kvsim_step_cost_t c;
  step_s(&s.pf, &b, &c);
  cr_assert_gt(c.compute_s, c.memory_s, "8192-token prefill: compute %g s should exceed memory %g s",
               c.compute_s, c.memory_s);
  /* 2 x ~7.5e9 FLOPs per token: a 8192-token prefill is ~1.2e14 FLOPs plus attention. */
  cr_assert(c.flops > 1.2e14 && c.flops < 1.6e14, "prefill FLOPs %g outside [1.2e14, 1.6e14]", c.flops);
  cr_assert_float_eq(c.total_s, c.overhead_s + c.gemm_s + c.attn_s + c.comm_s, 1e-12,
                     "total = floors + GEMMs + attention + comm");
  /* Every GEMM and the attention run at their FLOP rate, but the lm_head
   * of the one sampled row, which reads its weights for one token. */
  double lm = kvsim_perf_gemm_time(&s.pf, &s.pf.gemm[s.pf.ngemm - 1], 1, 1.0, NULL, NULL);
  cr_assert(s.pf.gemm[s.pf.ngemm - 1].per_seq, "the last GEMM is the lm_head");
  double emb = 8192 * s.pf.embed_bytes_per_token / (s.pf.bandwidth * s.pf.coef.mbu); /* the gathered rows */
  cr_assert_float_eq(c.gemm_s + c.attn_s - lm - emb, c.compute_s - 2.0 * s.pf.gemm[s.pf.ngemm - 1].params /
                                                                 (s.pf.peak[0] * s.pf.coef.mfu),
                     1e-9 * c.compute_s, "a long prefill is FLOP-bound: %g vs %g", c.gemm_s + c.attn_s,
                     c.compute_s);
}

Test(perf, small_decode_batches_are_memory_bound) {
  const char *gpus[] = {"h100-sxm", "rtx4090"};
  for (int gi = 0; gi < 2; gi++) {
    setup_t s;
    make(&s, "llama-3.1-8b", gpus[gi], 1, 1, "", KVSIM_KV_AUTO);
    for (int n = 1; n <= 16; n++) {
      kvsim_batch_shape_t b = decode(n, 1024, 0);
      kvsim_step_cost_t c;
      step_s(&s.pf, &b, &c);
      cr_assert_gt(c.memory_s, c.compute_s, "%s decode batch %d: memory %g s should exceed compute %g s",
                   gpus[gi], n, c.memory_s, c.compute_s);
    }
  }
}

Test(perf, step_time_grows_with_batch_and_context) {
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  double prev = 0;
  for (int n = 1; n <= 1024; n *= 2) {
    kvsim_batch_shape_t b = decode(n, 1024, 0);
    double t = step_s(&s.pf, &b, NULL);
    cr_assert_gt(t, prev, "decode batch %d: %g s not above batch %d's %g s", n, t, n / 2, prev);
    prev = t;
  }
  prev = 0;
  for (int64_t ctx = 128; ctx <= 131072; ctx *= 2) {
    kvsim_batch_shape_t b = decode(32, ctx, 0);
    double t = step_s(&s.pf, &b, NULL);
    cr_assert_gt(t, prev, "decode context %lld: %g s not above the shorter context's %g s",
                 (long long)ctx, t, prev);
    prev = t;
  }
  prev = 0;
  for (int64_t n = 256; n <= 65536; n *= 2) {
    kvsim_batch_shape_t b = prefill(n, 0);
    double t = step_s(&s.pf, &b, NULL);
    cr_assert_gt(t, prev, "prefill %lld tokens: %g s not above %g s", (long long)n, t, prev);
    prev = t;
  }
}

Test(perf, step_time_is_pure_and_empty_batch_is_free) {
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  kvsim_batch_shape_t b = decode(37, 3000, 0);
  kvsim_batch_shape_add(&b, 100, 500, 0);
  kvsim_time_ns t1 = kvsim_perf_step_time(&s.pf, &b, NULL);
  kvsim_step_cost_t c;
  kvsim_time_ns t2 = kvsim_perf_step_time(&s.pf, &b, &c);
  cr_assert_eq(t1, t2, "same shape, same time: %lld vs %lld", (long long)t1, (long long)t2);
  cr_assert_eq(t2, kvsim_time_from_s(c.total_s), "returned time is cost.total_s");
  kvsim_batch_shape_t empty;
  memset(&empty, 0, sizeof empty);
  cr_assert_eq(kvsim_perf_step_time(&s.pf, &empty, &c), 0, "an empty batch costs nothing");
  cr_assert_eq(c.total_s, 0.0, "empty batch cost is zeroed");
}

Test(perf, decode_sanity_ranges) {
  /* vLLM v0.6.0 performance blog (2024-09-05): "1 token every 13 ms under
   * light load" (8B, H100, API server included); vLLM CI
   * performance-benchmark latency test: 833 ms / 128 steps ~ 6.5 ms for 8B
   * batch 8 on H200. Uncalibrated: generous ranges only. */
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  kvsim_batch_shape_t b = decode(1, 1024, 0);
  double t = step_s(&s.pf, &b, NULL);
  cr_assert(t > 4e-3 && t < 13e-3, "8B batch 1 on H100: %g ms outside (4, 13)", t * 1e3);
  make(&s, "llama-3.1-8b", "h200", 1, 1, "", KVSIM_KV_AUTO);
  b = decode(8, 160, 0);
  t = step_s(&s.pf, &b, NULL);
  cr_assert(t > 3.5e-3 && t < 9e-3, "8B batch 8 on H200: %g ms outside (3.5, 9), measured ~6.5", t * 1e3);
}

Test(perf, tp2_halves_weight_bytes_and_adds_comm) {
  setup_t s1, s2;
  make(&s1, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  make(&s2, "llama-3.1-8b", "h100-sxm", 2, 1, "", KVSIM_KV_AUTO);
  kvsim_batch_shape_t b = decode(8, 1024, 0);
  kvsim_step_cost_t c1, c2;
  step_s(&s1.pf, &b, &c1);
  step_s(&s2.pf, &b, &c2);
  double r = c2.weight_bytes / c1.weight_bytes;
  cr_assert(r > 0.49 && r < 0.51, "TP2/TP1 per-rank weight bytes %g, want ~0.5", r);
  cr_assert_float_eq(c2.kv_bytes / c1.kv_bytes, 0.5, 1e-9, "TP2 splits the 8 KV heads: KV bytes ratio %g",
                     c2.kv_bytes / c1.kv_bytes);
  cr_assert_eq(c1.comm_s, 0.0, "TP1 has no communication (%g s)", c1.comm_s);
  cr_assert_gt(c2.comm_s, 0.0, "TP2 pays all-reduces");
  /* 64 all-reduces, each at least the link latency. */
  cr_assert_geq(c2.comm_s, 64 * s2.g.gpu_link_latency_us * 1e-6, "TP2 comm %g s below 64 latencies", c2.comm_s);
  cr_assert_lt(c2.memory_s, c1.memory_s, "TP2 reads fewer bytes per rank");
  cr_assert_float_eq(c2.flops / c1.flops, 0.5, 0.01, "TP2 halves per-rank FLOPs: ratio %g", c2.flops / c1.flops);
}

Test(perf, pp2_traverses_stages_without_pipelining_credit) {
  setup_t s1, s2;
  make(&s1, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  make(&s2, "llama-3.1-8b", "h100-sxm", 1, 2, "", KVSIM_KV_AUTO);
  kvsim_batch_shape_t b = decode(16, 2048, 0);
  kvsim_step_cost_t c1, c2;
  step_s(&s1.pf, &b, &c1);
  step_s(&s2.pf, &b, &c2);
  cr_assert_float_eq(c2.bytes, c1.bytes, 1.0, "PP2 step reads the whole model: %g vs %g bytes", c2.bytes, c1.bytes);
  cr_assert_float_eq(c2.flops, c1.flops, 1.0, "PP2 step computes the whole model");
  cr_assert_gt(c2.comm_s, 0.0, "PP2 pays a stage-to-stage transfer");
  cr_assert_gt(c2.total_s, c1.total_s, "PP2 step is slower than PP1 for one batch");
}

Test(perf, moe_decode_touches_k_experts_large_batch_nearly_all) {
  setup_t s;
  make(&s, "qwen3-30b-a3b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  const double E = (double)s.m.num_experts, k = (double)s.m.experts_per_tok;
  cr_assert_gt(E, k, "a MoE model (E=%g, k=%g)", E, k);
  kvsim_batch_shape_t b1 = decode(1, 1024, 0), b512 = decode(512, 1024, 0);
  kvsim_step_cost_t c1, c512;
  step_s(&s.pf, &b1, &c1);
  step_s(&s.pf, &b512, &c512);
  cr_assert_float_eq(c1.experts_touched, k, 1e-9, "batch 1 touches k=%g experts, got %g", k, c1.experts_touched);
  cr_assert_gt(c512.experts_touched, 0.99 * E, "batch 512 touches %g of %g experts", c512.experts_touched, E);
  double one = s.pf.expert_bytes_per_expert_layer * (double)s.pf.num_moe_layers, dense = 0;
  for (int i = 0; i < s.pf.ngemm; i++)
    dense += s.pf.gemm[i].params * s.pf.gemm[i].wbytes * s.pf.gemm[i].count;
  cr_assert_float_eq(c1.weight_bytes, dense + k * one, 1.0, "batch 1 reads dense weights + k experts per layer");
  cr_assert_gt(c512.weight_bytes, dense + 0.99 * E * one, "batch 512 reads nearly all experts");
  /* The expectation is monotone in tokens and bounded by E. */
  double prev = 0;
  for (int64_t t = 1; t <= 4096; t *= 2) {
    double x = kvsim_perf_experts_touched(&s.pf, t);
    /* Strictly rising until it saturates at E in double precision. */
    cr_assert(t <= 64 ? x > prev : x >= prev, "experts touched by %lld tokens: %g (prev %g)",
              (long long)t, x, prev);
    cr_assert_leq(x, E, "experts touched by %lld tokens: %g > E = %g", (long long)t, x, E);
    prev = x;
  }
  make(&s, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  cr_assert_eq(kvsim_perf_experts_touched(&s.pf, 100), 0.0, "a dense model touches no experts");
}

Test(perf, fp8_weights_decode_faster_than_bf16) {
  setup_t bf, f8;
  make(&bf, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  make(&f8, "llama-3.1-8b", "h100-sxm", 1, 1, "fp8", KVSIM_KV_AUTO);
  kvsim_batch_shape_t b = decode(8, 1024, 0);
  kvsim_step_cost_t cb, cf;
  step_s(&bf.pf, &b, &cb);
  step_s(&f8.pf, &b, &cf);
  cr_assert_lt(cf.total_s, cb.total_s, "fp8 decode %g s not faster than bf16 %g s", cf.total_s, cb.total_s);
  cr_assert_lt(cf.weight_bytes, 0.6 * cb.weight_bytes, "fp8 reads ~half the weights: %g vs %g",
               cf.weight_bytes, cb.weight_bytes);
  /* Prefill: fp8 GEMMs at the fp8 peak on Hopper. */
  kvsim_batch_shape_t p = prefill(8192, 0);
  step_s(&bf.pf, &p, &cb);
  step_s(&f8.pf, &p, &cf);
  cr_assert_lt(cf.compute_s, 0.75 * cb.compute_s, "fp8 prefill compute %g s vs bf16 %g s", cf.compute_s,
               cb.compute_s);
  /* int4 weights: fewer bytes, bf16 compute. */
  setup_t i4;
  make(&i4, "llama-3.1-8b", "h100-sxm", 1, 1, "awq", KVSIM_KV_AUTO);
  cr_assert_eq(i4.pf.peak_flops, bf.pf.peak_flops, "int4 weights compute at the bf16 peak");
  cr_assert_lt(i4.pf.weight_bytes, f8.pf.weight_bytes, "int4 weights read fewer bytes than fp8");
}

Test(perf, sliding_layers_read_at_most_the_window) {
  setup_t s;
  make(&s, "gemma-2-9b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  cr_assert_gt(s.pf.sliding_layer_frac, 0.0, "gemma-2 has sliding layers");
  cr_assert_lt(s.pf.sliding_layer_frac, 1.0, "gemma-2 has full layers");
  const int64_t w = s.m.sliding_window;
  kvsim_batch_shape_t near = decode(16, 8000, w), as_full = decode(16, 8000, 0);
  kvsim_step_cost_t cn, cf;
  step_s(&s.pf, &near, &cn);
  step_s(&s.pf, &as_full, &cf);
  cr_assert_lt(cn.kv_bytes, cf.kv_bytes, "windowed KV read %g not below the full read %g", cn.kv_bytes,
               cf.kv_bytes);
  double expect = s.pf.kv_bytes_per_token *
                  (16 * (s.pf.full_layer_frac * 8001.0 + s.pf.sliding_layer_frac * (double)(w + 1)) + 16);
  cr_assert_float_eq(cn.kv_bytes, expect, 1.0, "KV bytes %g, want %g", cn.kv_bytes, expect);
}

Test(perf, mla_reads_one_latent_and_uses_absorbed_dims) {
  setup_t s;
  make(&s, "deepseek-v2-lite", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  cr_assert(s.m.mla, "deepseek-v2-lite is MLA");
  double latent = (double)(s.m.kv_lora_rank + s.m.qk_rope_head_dim);
  double kv = latent * s.m.dtype_bytes * s.m.num_layers;
  cr_assert_float_eq(s.pf.kv_bytes_per_token, kv, 1e-6, "MLA KV per token %g, want one latent per layer %g",
                     s.pf.kv_bytes_per_token, kv);
  double pair = 2.0 * (double)s.m.num_heads * (latent + (double)s.m.kv_lora_rank) * s.m.num_layers;
  cr_assert_float_eq(s.pf.attn_flops_per_pair, pair, 1e-6, "MLA attention FLOPs per pair %g, want %g",
                     s.pf.attn_flops_per_pair, pair);
}

Test(perf, quantized_kv_factor_slows_the_kv_read) {
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_INT8);
  cr_assert_eq(s.pf.quant_step_factor, kvsim_perf_default_quant_factor(KVSIM_KV_INT8),
               "init takes the dtype's default factor");
  cr_assert_eq(kvsim_perf_default_quant_factor(KVSIM_KV_INT8), 1.0, "documented default is 1.0");
  kvsim_batch_shape_t b = decode(64, 4096, 0);
  kvsim_step_cost_t c1, c2;
  step_s(&s.pf, &b, &c1);
  s.pf.quant_step_factor = 1.5;
  step_s(&s.pf, &b, &c2);
  double kv_read = s.pf.kv_bytes_per_token * b.kv_read_full;
  double extra = 0.5 * kv_read / (s.pf.bandwidth * s.pf.coef.mbu);
  cr_assert_float_eq(c2.memory_s - c1.memory_s, extra, 1e-12, "factor 1.5 adds %g s, want %g",
                     c2.memory_s - c1.memory_s, extra);
  cr_assert_float_eq(c2.attn_s - c1.attn_s, extra, 1e-12, "a KV-bound decode's attention grows by it: %g",
                     c2.attn_s - c1.attn_s);
  cr_assert_eq(c2.bytes, c1.bytes, "the factor changes time, not bytes");
  /* The int8 cache reads fewer bytes than bf16 in the first place. */
  setup_t bf;
  make(&bf, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  cr_assert_lt(s.pf.kv_bytes_per_token, 0.6 * bf.pf.kv_bytes_per_token, "int8 KV %g vs bf16 %g bytes/token",
               s.pf.kv_bytes_per_token, bf.pf.kv_bytes_per_token);
}

Test(perf, overhead_terms_follow_coefficients) {
  setup_t s;
  make(&s, "llama-3.1-8b", "rtx4090", 1, 1, "", KVSIM_KV_AUTO);
  kvsim_batch_shape_t b = decode(10, 512, 0);
  kvsim_batch_shape_add(&b, 0, 90, 0);
  kvsim_step_cost_t c;
  step_s(&s.pf, &b, &c);
  const kvsim_gpu_perf_t *k = &s.g.perf;
  double want = (k->step_overhead_us + k->per_layer_us * s.m.num_layers + 11 * k->per_seq_us +
                 100 * k->per_token_us) *
                1e-6;
  cr_assert_float_eq(c.overhead_s, want, 1e-12, "overhead %g s, want %g", c.overhead_s, want);
}

Test(perf, init_rejects_bad_coefficients) {
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  kvsim_err err = {0};
  s.g.perf.mbu = 0;
  cr_assert_eq(kvsim_perf_init(&s.pf, &s.m, &s.g, &s.pl, &err), KVSIM_EINVAL, "mbu = 0 is rejected");
  cr_assert(strstr(err.msg, "mbu") != NULL, "the message names mbu: %s", err.msg);
  s.g.perf.mbu = 0.8;
  s.pl.p.tp = 0;
  cr_assert_eq(kvsim_perf_init(&s.pf, &s.m, &s.g, &s.pl, &err), KVSIM_EINVAL, "tp = 0 is rejected");
}

Test(perf, moe_efficiency_slows_expert_streaming_only) {
  setup_t s;
  make(&s, "qwen3-30b-a3b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  kvsim_batch_shape_t b = decode(64, 1024, 0);
  kvsim_step_cost_t fast, slow;
  s.pf.coef.moe_efficiency = 1.0;
  double t1 = step_s(&s.pf, &b, &fast);
  s.pf.coef.moe_efficiency = 0.5;
  double t2 = step_s(&s.pf, &b, &slow);
  /* At 64 tokens an expert sees 64 x 8 / ~120 ~ 4 tokens: bandwidth bound,
   * so half the efficiency streams the expert bytes twice as long. */
  const double m = 64.0 * (double)s.pf.experts_per_tok / fast.experts_touched, per = fast.experts_touched;
  double bytes;
  kvsim_perf_gemm_time(&s.pf, &s.pf.expert, m, 1.0, NULL, &bytes);
  double want = s.pf.expert.count * per * bytes / (s.pf.bandwidth * s.pf.coef.mbu);
  cr_assert_float_eq(slow.gemm_s - fast.gemm_s, want, 1e-9, "+%g s expected, got +%g s", want,
                     slow.gemm_s - fast.gemm_s);
  cr_assert_eq(slow.attn_s, fast.attn_s, "attention is not slowed");
  cr_assert_gt(t2, t1, "the step takes longer");
  make(&s, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  b = decode(64, 1024, 0);
  s.pf.coef.moe_efficiency = 1.0;
  t1 = step_s(&s.pf, &b, NULL);
  s.pf.coef.moe_efficiency = 0.5;
  t2 = step_s(&s.pf, &b, NULL);
  cr_assert_float_eq(t1, t2, 1e-12, "a dense model has no experts to slow");
}

Test(perf, extreme_shapes_clamp_instead_of_overflowing) {
  /* A prefill of 2^40 pairs per token on an uncalibrated GPU: ~1e22 s,
   * whose nanoseconds do not fit int64 (an undefined conversion before).
   * The step is held at the documented maximum. */
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm", 1, 1, "", KVSIM_KV_AUTO);
  kvsim_batch_shape_t b;
  memset(&b, 0, sizeof b);
  b.num_seqs = 1;
  b.num_prefill_seqs = 1;
  b.new_tokens = b.prefill_tokens = INT64_C(1) << 30;
  b.attn_full = 1e30;
  b.kv_read_full = 1e18;
  kvsim_step_cost_t c;
  kvsim_time_ns t = kvsim_perf_step_time(&s.pf, &b, &c);
  cr_assert_eq(t, KVSIM_PERF_MAX_STEP_NS, "held at the maximum, got %lld", (long long)t);
  cr_assert_gt(c.total_s, 1e9, "the cost keeps the unclamped seconds: %g", c.total_s);
  /* An ordinary step is untouched by the clamp. */
  kvsim_batch_shape_t d = decode(8, 1024, 0);
  cr_assert_lt(kvsim_perf_step_time(&s.pf, &d, NULL), KVSIM_NS_PER_S, "a decode step is < 1 s");
}
