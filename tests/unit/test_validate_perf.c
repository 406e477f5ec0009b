/* The step-time model's parts that the fidelity work added
 * (sim/src/perf/perf.c): the per-layer overhead, expert parallelism; the
 * roofline kept whole. And the shipped calibrations: every GPU with
 * measured data carries a calibrated "perf" object with a source and a
 * residual spread. */
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

Test(validate_perf, one_roofline_over_the_step) {
  setup_t s;
  make(&s, "llama-3.1-8b", "h100-sxm");
  /* A decode batch: both parts memory-bound, total = overhead + memory. */
  kvsim_batch_shape_t d = batch(16, 1024, 0);
  kvsim_step_cost_t c;
  step(&s.pf, &d, &c);
  cr_assert_float_eq(c.total_s, c.overhead_s + c.memory_s + c.comm_s, 1e-12,
                     "memory-bound decode: total %g = overhead + memory + comm", c.total_s);
  /* A long prefill: both parts compute-bound, total = overhead + compute. */
  kvsim_batch_shape_t p = batch(0, 0, 8192);
  step(&s.pf, &p, &c);
  cr_assert_float_eq(c.total_s, c.overhead_s + c.compute_s + c.comm_s, 1e-12,
                     "compute-bound prefill: total %g = overhead + compute + comm", c.total_s);
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
  }
  /* A GPU without data takes its generation's defaults, uncalibrated. */
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("a100-80g", &g, &err), KVSIM_OK, "load a100-80g: %s", err.msg);
  cr_assert(!g.perf.calibrated, "a100-80g has no measured data: not calibrated");
  cr_assert(strstr(g.perf.source, "default") != NULL, "a100-80g source '%s'", g.perf.source);
}
