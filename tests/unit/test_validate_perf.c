/* The step model's terms one by one (sim/src/perf/: gemm.c, attention.c,
 * comm.c, floors.c), expert parallelism, and the shipped calibrations:
 * every GPU with measured data carries a fitted "perf" object with a
 * source, its rows and a residual spread. */
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

static void make_ep(setup_t *s, const char *model, const char *gpu, int tp, int ep) {
  kvsim_err err = {0};
  memset(s, 0, sizeof *s);
  cr_assert_eq(kvsim_model_load(model, &s->m, &err), KVSIM_OK, "load %s: %s", model, err.msg);
  cr_assert_eq(kvsim_gpu_load(gpu, &s->g, &err), KVSIM_OK, "load %s: %s", gpu, err.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.tp = tp;
  p.ep = ep;
  p.max_model_len = 8192;
  cr_assert_eq(kvsim_plan_compute(&s->m, &s->g, &p, &s->pl, &err), KVSIM_OK, "plan %s/%s: %s", model, gpu,
               err.msg);
  cr_assert_eq(kvsim_perf_init(&s->pf, &s->m, &s->g, &s->pl, &err), KVSIM_OK, "perf %s/%s: %s", model, gpu,
               err.msg);
}

static void make(setup_t *s, const char *model, const char *gpu) { make_ep(s, model, gpu, 1, 0); }

static double step(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *c) {
  return kvsim_time_to_s(kvsim_perf_step_time(pf, b, c));
}

/* n decodes on ctx cached tokens, plus (if chunk > 0) one prefill chunk. */
static kvsim_batch_shape_t batch(int n, int64_t ctx, int64_t chunk) {
  kvsim_batch_shape_t b;
  memset(&b, 0, sizeof b);
  for (int i = 0; i < n; i++)
    kvsim_batch_shape_add(&b, ctx, 1, 0);
  if (chunk > 0)
    kvsim_batch_shape_add(&b, 0, chunk, 0);
  return b;
}

Test(validate_perf, terms_add_up) {
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm");
  kvsim_batch_shape_t d = batch(16, 1024, 512);
  kvsim_step_cost_t c;
  double t = step(&s.pf, &d, &c);
  cr_assert_float_eq(c.total_s, c.overhead_s + c.gemm_s + c.attn_s + c.comm_s, 1e-12,
                     "total %g = floors + GEMMs + attention + comm", c.total_s);
  cr_assert_float_eq(t, c.total_s, 1e-9, "the step is the total");
  cr_assert(c.overhead_s > 0 && c.gemm_s > 0 && c.attn_s > 0, "each term costs something: %g %g %g",
            c.overhead_s, c.gemm_s, c.attn_s);
}

Test(validate_perf, gemm_bandwidth_bound_at_one_token_compute_bound_at_8192) {
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm");
  const kvsim_perf_gemm_t *mlp = &s.pf.gemm[1]; /* the dense MLP: h x 2I + I x h per rank */
  cr_assert_float_eq(mlp->params, 3.0 * 4096 * 14336, 1.0, "Llama-3.1-8B MLP params per layer %g", mlp->params);
  double f, by;
  double t1 = kvsim_perf_gemm_time(&s.pf, mlp, 1, 1.0, &f, &by);
  cr_assert_float_eq(t1, by / (s.pf.bandwidth * s.pf.coef.mbu), 1e-15,
                     "1 token: the weights' bytes at HBM x mbu (%g s)", t1);
  cr_assert_gt(by / (s.pf.bandwidth * s.pf.coef.mbu), 10 * f / (s.pf.peak[0] * s.pf.coef.mfu),
               "1 token: bandwidth time far above the FLOP time");
  double t8 = kvsim_perf_gemm_time(&s.pf, mlp, 8192, 1.0, &f, &by);
  cr_assert_float_eq(t8, f / (s.pf.peak[0] * s.pf.coef.mfu), 1e-15, "8192 tokens: FLOPs at bf16 peak x mfu (%g s)",
                     t8);
  cr_assert_float_eq(f, 2.0 * 8192 * mlp->params, 1.0, "2 M N K FLOPs");
  /* In between, an M off the 64-row MMA tile pays its padding. */
  double t65 = kvsim_perf_gemm_time(&s.pf, mlp, 8192 + 1, 1.0, NULL, NULL);
  cr_assert_gt(t65, t8 * (8192.0 + 64) / 8192 * 0.999, "8193 rows cost a whole extra tile: %g vs %g", t65, t8);
  /* fp8 weights: half the bytes at 1 token, the fp8 peak x mfu_fp8 at 8192. */
  setup_t q;
  kvsim_err err = {0};
  memset(&q, 0, sizeof q);
  q = s;
  q.pl.p.quantization[0] = 0;
  snprintf(q.pl.p.quantization, sizeof q.pl.p.quantization, "fp8");
  cr_assert_eq(kvsim_perf_init(&q.pf, &q.m, &q.g, &q.pl, &err), KVSIM_OK, "%s", err.msg);
  const kvsim_perf_gemm_t *m8 = &q.pf.gemm[1];
  cr_assert_eq(m8->precision, 1, "fp8 weights on Hopper run fp8 GEMMs");
  double t8f = kvsim_perf_gemm_time(&q.pf, m8, 8192, 1.0, &f, NULL);
  cr_assert_float_eq(t8f, f / (q.g.fp8_tflops * 1e12 * q.pf.coef.mfu_fp8), 1e-15, "fp8 at its own peak");
}

Test(validate_perf, attention_floor_per_sequence_per_layer) {
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm");
  s.pf.coef.attn_seq_floor_us = 0.5;
  kvsim_batch_shape_t d = batch(200, 16, 0); /* 200 short decodes: the kernel's minimum */
  kvsim_step_cost_t c;
  step(&s.pf, &d, &c);
  cr_assert_float_eq(c.attn_s, 200 * 32 * 0.5e-6, 1e-12, "200 sequences x 32 layers x 0.5 us, got %g", c.attn_s);
  kvsim_batch_shape_t l = batch(200, 32768, 0); /* long contexts: the KV read dominates */
  step(&s.pf, &l, &c);
  double kv = s.pf.kv_bytes_per_token * l.kv_read_full + s.pf.kv_bytes_per_token * 200;
  cr_assert_float_eq(c.attn_s, kv / (s.pf.bandwidth * s.pf.coef.mbu), 1e-9, "KV bytes at HBM x mbu, got %g",
                     c.attn_s);
}

Test(validate_perf, allreduce_pcie_slower_than_nvlink_by_the_files_figures) {
  setup_t nv, pc;
  make_ep(&nv, "llama-3.1-8b", "h100-sxm", 2, 0);
  make_ep(&pc, "llama-3.1-8b", "l40s", 2, 0);
  cr_assert_eq(nv.pf.link_kind, KVSIM_LINK_NVLINK, "h100-sxm: NVLink");
  cr_assert_neq(pc.pf.link_kind, KVSIM_LINK_NVLINK, "l40s: PCIe");
  /* A 16 MiB message, past vLLM's custom all-reduce: NCCL ring on both,
   * alpha + bytes x 2 (n - 1) / n / busbw with each file's figures. */
  const double B = 16.0 * 1024 * 1024;
  double tn = kvsim_perf_allreduce_time(&nv.pf, B), tp = kvsim_perf_allreduce_time(&pc.pf, B);
  double wn = nv.g.allreduce_latency_us * 1e-6 + B / (nv.g.allreduce_busbw_GBps * 1e9);
  double wp = pc.g.allreduce_latency_us * 1e-6 + B / (pc.g.allreduce_busbw_GBps * 1e9);
  cr_assert_float_eq(tn, wn, 1e-12, "NVLink ring: %g s, want %g", tn, wn);
  cr_assert_float_eq(tp, wp, 1e-12, "PCIe ring: %g s, want %g", tp, wp);
  cr_assert_float_eq(tp / tn, wp / wn, 1e-9, "PCIe/NVLink = %g, the files' ratio %g", tp / tn, wp / wn);
  cr_assert_gt(tp / tn, 2, "PCIe all-reduce several times slower: %g", tp / tn);
  /* The step pays it twice per layer. */
  kvsim_batch_shape_t d = batch(64, 1024, 0);
  kvsim_step_cost_t c;
  step(&pc.pf, &d, &c);
  cr_assert_float_eq(c.comm_s, 64 * kvsim_perf_allreduce_time(&pc.pf, 64.0 * 4096 * 2), 1e-12,
                     "2 x 32 all-reduces of 64 tokens x hidden x bf16: %g s", c.comm_s);
}

Test(validate_perf, custom_allreduce_where_vllm_uses_it) {
  setup_t s;
  make_ep(&s, "llama-3.1-70b", "h100-sxm", 8, 0);
  const double small = 64.0 * 8192 * 2; /* 1 MiB: two-shot at 8 ranks (above 256 KiB) */
  double ring = s.pf.ar_latency_s + small * 2.0 * 7 / 8 / s.pf.busbw;
  cr_assert_float_eq(kvsim_perf_allreduce_time(&s.pf, small), ring, 1e-12, "two-shot moves the ring's bytes");
  const double tiny = 8.0 * 8192 * 2; /* 128 KiB: one-shot, every peer's buffer read */
  double one = s.pf.ar_latency_s + tiny * 7 / s.pf.busbw;
  cr_assert_float_eq(kvsim_perf_allreduce_time(&s.pf, tiny), one, 1e-12, "one-shot reads 7 peers");
  /* PCIe through host memory: never custom, always the ring. */
  s.pf.link_kind = KVSIM_LINK_PCIE_HOST;
  ring = s.pf.ar_latency_s + tiny * 2.0 * 7 / 8 / s.pf.busbw;
  cr_assert_float_eq(kvsim_perf_allreduce_time(&s.pf, tiny), ring, 1e-12, "no custom all-reduce without P2P");
  /* PCIe with P2P: custom only for two ranks. */
  s.pf.link_kind = KVSIM_LINK_PCIE_P2P;
  cr_assert_float_eq(kvsim_perf_allreduce_time(&s.pf, tiny), ring, 1e-12, "8 PCIe ranks: NCCL");
  s.pf.tp = 2;
  one = s.pf.ar_latency_s + tiny / s.pf.busbw;
  cr_assert_float_eq(kvsim_perf_allreduce_time(&s.pf, tiny), one, 1e-12, "2 PCIe P2P ranks: one-shot");
  s.pf.tp = 1;
  cr_assert_eq(kvsim_perf_allreduce_time(&s.pf, tiny), 0.0, "no all-reduce at TP 1");
}

Test(validate_perf, per_layer_overhead_scales_with_depth) {
  setup_t a, b;
  make(&a, "llama-3.1-8b", "h100-sxm");  /* 32 layers */
  make(&b, "llama-3.1-70b", "h100-sxm"); /* 80 layers */
  a.pf.coef.per_layer_us = b.pf.coef.per_layer_us = 50;
  a.pf.coef.step_overhead_us = b.pf.coef.step_overhead_us = 100;
  a.pf.coef.per_seq_us = b.pf.coef.per_seq_us = 0;
  a.pf.coef.per_token_us = b.pf.coef.per_token_us = 0;
  kvsim_batch_shape_t d = batch(1, 100, 0);
  kvsim_step_cost_t ca, cb;
  step(&a.pf, &d, &ca);
  step(&b.pf, &d, &cb);
  cr_assert_float_eq(ca.overhead_s, (100 + 50 * 32) * 1e-6, 1e-12, "8B overhead %g s", ca.overhead_s);
  cr_assert_float_eq(cb.overhead_s, (100 + 50 * 80) * 1e-6, 1e-12, "70B overhead %g s", cb.overhead_s);
}

Test(validate_perf, expert_parallel_rank_holds_and_reads_its_share_of_experts) {
  setup_t one, two;
  make_ep(&one, "qwen3-30b-a3b", "rtx-pro-6000", 1, 0);
  make_ep(&two, "qwen3-30b-a3b", "rtx-pro-6000", 1, 2);
  /* Weights: half the experts per rank; everything else whole. */
  double experts = one.pl.weights_bytes - two.pl.weights_bytes;
  cr_assert_gt(experts, 0.4 * one.pl.weights_bytes,
               "EP2 holds %lld bytes, EP off %lld: the experts (most of an MoE) are halved",
               (long long)two.pl.weights_bytes, (long long)one.pl.weights_bytes);
  cr_assert_gt(two.pl.num_gpu_blocks, one.pl.num_gpu_blocks, "the freed weights become KV blocks");
  /* A decode step of 128 sequences on one rank: with EP the rank computes
   * for the tokens of both DP ranks but reads only its half of the experts
   * they touch, and pays the dispatch/combine collectives. */
  kvsim_batch_shape_t d = batch(128, 1000, 0);
  kvsim_step_cost_t c1, c2;
  step(&one.pf, &d, &c1);
  step(&two.pf, &d, &c2);
  cr_assert_lt(c2.weight_bytes, 0.7 * c1.weight_bytes, "EP2 reads %g weight bytes per rank vs %g without",
               c2.weight_bytes, c1.weight_bytes);
  cr_assert_gt(c2.comm_s, 0, "EP dispatch/combine costs time over the PCIe link");
  cr_assert_eq(c1.comm_s, 0, "no collective without TP or EP");
  cr_assert_float_eq(c2.flops, c1.flops, 1e-6 * c1.flops, "the same FLOPs per own token: %g vs %g", c2.flops,
                     c1.flops);
}

Test(validate_perf, shipped_calibrations_name_their_source) {
  /* GPUs with measured data (../shared/validation): their catalog entry is
   * calibrated, says from what, and carries the residual spread used for
   * the +/- band of a run's latencies. */
  const char *gpus[] = {"rtx4090", "rtx-pro-6000", "h100-sxm", "b200"};
  for (int i = 0; i < 4; i++) {
    kvsim_gpu_t g;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_gpu_load(gpus[i], &g, &err), KVSIM_OK, "load %s: %s", gpus[i], err.msg);
    cr_assert(g.perf.calibrated, "%s: perf.calibrated", gpus[i]);
    cr_assert(strstr(g.perf.source, "kvsim calibrate") != NULL, "%s: source '%s' names the command", gpus[i],
              g.perf.source);
    cr_assert(g.perf.ttft_rel_sigma > 0 && g.perf.tpot_rel_sigma > 0, "%s: sigmas %g / %g", gpus[i],
              g.perf.ttft_rel_sigma, g.perf.tpot_rel_sigma);
    cr_assert_eq(g.perf.status, KVSIM_CAL_FITTED, "%s: status fitted", gpus[i]);
    cr_assert_gt(g.perf.rows, 0, "%s: the fit names its rows", gpus[i]);
    /* No per-token constant unless the data asks for it: only the B200
     * rows do (scripts/calibrate.sh says why). */
    if (strcmp(gpus[i], "b200"))
      cr_assert_eq(g.perf.per_token_us, 0.0, "%s: per_token_us %g", gpus[i], g.perf.per_token_us);
  }
  /* A GPU without data takes its generation's defaults, uncalibrated. */
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("a100-80g", &g, &err), KVSIM_OK, "load a100-80g: %s", err.msg);
  cr_assert(!g.perf.calibrated, "a100-80g has no measured data: not calibrated");
  cr_assert(strstr(g.perf.source, "default") != NULL, "a100-80g source '%s'", g.perf.source);
}
