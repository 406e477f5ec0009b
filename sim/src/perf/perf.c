/* Step-time model (perf.h): kvsim_perf_init does the model arithmetic and
 * the table lookups that do not depend on the batch once (each GEMM's
 * latency at the profile's m grid, the attention table of the model's head
 * shape, the all-reduce and MoE curves of its TP and EP); a step then costs
 * a few dozen interpolations and no allocation (gemm.c, attention.c,
 * moe.c, comm.c, elementwise.c, host.c).
 *
 * Sanity ranges, not calibration targets: the vLLM v0.6.0 performance
 * blog (vllm-project.github.io, _posts/2024-09-05-perf-update.md), "Llama3
 * 8B can generate 1 token every 13 ms under light load" on one H100 (API
 * server and scheduling included); the vLLM CI latency test (buildkite
 * vllm/performance-benchmark build 9515), Llama-3.1-8B batch 8 on H200,
 * 833 ms for 128 output tokens: about 6.5 ms per decode step
 * (tests/unit/test_perf.c checks both fall in generous ranges). */
#include "kvsim/perf.h"

#include <math.h>
#include <string.h>

#include "memory/overheads.h"
#include "perf/ktab.h"
#include "perf/terms.h"

double kvsim_perf_default_quant_factor(kvsim_kv_dtype d) {
  /* 1.0: the tables time fp8-KV attention itself (kv_cache_dtype fp8);
   * int8/int4 caches take the fp8 tables. A scenario may still scale it
   * (perf.quant_step_factor). */
  (void)d;
  return 1.0;
}

static int check_inputs(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_t *pl, kvsim_err *err) {
  const int tp = pl->p.tp, pp = pl->p.pp;
  if (tp < 1 || pp < 1)
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: plan has tp=%d pp=%d, expected >= 1 (was the plan computed?)",
                         tp, pp);
  if (pl->num_layers < 1 || pl->per_token_kv_bytes <= 0 || m->num_layers < 1)
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: plan has %d KV layers and %lld KV bytes per token",
                         pl->num_layers, (long long)pl->per_token_kv_bytes);
  if (!(g->hbm_bandwidth_GBps > 0) || !(g->bf16_tflops > 0))
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: gpu '%s': hbm_bandwidth_GBps=%g bf16_tflops=%g, both must be > 0",
                         g->name, g->hbm_bandwidth_GBps, g->bf16_tflops);
  return KVSIM_OK;
}

/* The dense peak of a table precision on a GPU (FLOP/s): fp8 and fp4 fall
 * back to the next precision the part has. */
static double spec_peak(const kvsim_gpu_t *g, kvsim_kgemm d) {
  const double bf16 = g->bf16_tflops, fp8 = g->fp8_tflops > 0 ? g->fp8_tflops : bf16;
  const double fp4 = g->fp4_tflops > 0 ? g->fp4_tflops : fp8;
  return 1e12 * (d == KVSIM_KGEMM_NVFP4 ? fp4 : d == KVSIM_KGEMM_BF16 ? bf16 : fp8);
}

/* A borrowed table is carried over by the ratio of the two parts' rates:
 * their measured best bf16 matmul and device copy where both have one
 * (parts reach different shares of their spec: the L40S's best bf16 matmul
 * is 74 % of its spec, the RTX 4090's 106 %; configs/gpus SOURCES.md), the
 * spec figures otherwise. */
static void set_hw(kvsim_perf_hw_t *hw, const kvsim_gpu_t *g, const kvsim_gpu_t *donor, kvsim_kgemm d) {
  hw->peak = spec_peak(g, d);
  hw->bw = g->hbm_bandwidth_GBps * 1e9;
  hw->donor_peak = donor ? spec_peak(donor, d) : hw->peak;
  hw->donor_bw = donor ? donor->hbm_bandwidth_GBps * 1e9 : hw->bw;
  hw->borrowed = donor != NULL;
  if (!donor)
    return;
  if (g->achieved_bf16_tflops > 0 && donor->achieved_bf16_tflops > 0) {
    hw->peak *= g->achieved_bf16_tflops / g->bf16_tflops;
    hw->donor_peak *= donor->achieved_bf16_tflops / donor->bf16_tflops;
  }
  if (g->achieved_copy_GBps > 0 && donor->achieved_copy_GBps > 0) {
    hw->bw = g->achieved_copy_GBps * 1e9;
    hw->donor_bw = donor->achieved_copy_GBps * 1e9;
  }
}

double kvsim__perf_hw_ratio(const kvsim_perf_hw_t *hw, double flops, double bytes) {
  if (!hw->borrowed)
    return 1.0;
  const double own = fmax(flops / hw->peak, bytes / hw->bw);
  const double donor = fmax(flops / hw->donor_peak, bytes / hw->donor_bw);
  return donor > 0 ? own / donor : 1.0;
}

/* The GEMM precision of the linear layers: the checkpoint's, where this GPU
 * has tensor cores for it and the tables time it; -1: weight-only (the
 * weights dequantized to bf16 in the kernel: Marlin/AWQ/GPTQ, or fp8 on a
 * part without fp8 tensor cores, vllm/model_executor/layers/quantization/
 * utils/marlin_utils_fp8.py). */
static int gemm_precision(const kvsim_quant_t *q, const kvsim_gpu_t *g, const kvsim_kernels_t *k) {
  switch (q->kind) {
  case KVSIM_QUANT_NONE:
    return KVSIM_KGEMM_BF16;
  case KVSIM_QUANT_FP8:
  case KVSIM_QUANT_INT8:
    if (!(g->fp8_tflops > 0))
      return -1;
    if (q->block_size > 0 && kvsim_kernels_has_gemm(k, KVSIM_KGEMM_FP8_BLOCK))
      return KVSIM_KGEMM_FP8_BLOCK;
    return kvsim_kernels_has_gemm(k, KVSIM_KGEMM_FP8) ? KVSIM_KGEMM_FP8 : -1;
  case KVSIM_QUANT_MXFP4:
    return q->experts_only ? KVSIM_KGEMM_BF16 : -1;
  case KVSIM_QUANT_INT4:
  default:
    return -1;
  }
}

static int load_profiles(kvsim_perf_t *pf, const kvsim_gpu_t *g, const kvsim_kernels_t **col,
                         kvsim_gpu_t *donor, bool *borrowed, kvsim_err *err) {
  int rc = kvsim_kernels_get(g->perf.kernels, &pf->kern, err);
  if (rc < 0)
    return kvsim_err_prefix(err, "perf: gpu '%s'", g->name);
  const char *cname = g->perf.collectives[0] ? g->perf.collectives : g->perf.kernels;
  if ((rc = kvsim_kernels_get(cname, col, err)) < 0)
    return kvsim_err_prefix(err, "perf: gpu '%s'", g->name);
  *borrowed = strcmp(kvsim_kernels_gpu(pf->kern), g->name) != 0;
  if (*borrowed && (rc = kvsim_gpu_load(kvsim_kernels_gpu(pf->kern), donor, err)) < 0)
    return kvsim_err_prefix(err, "perf: the GPU of kernel profile '%s'", g->perf.kernels);
  return KVSIM_OK;
}

int kvsim_perf_init(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_t *pl,
                    kvsim_err *err) {
  memset(pf, 0, sizeof *pf);
  int rc = check_inputs(m, g, pl, err);
  if (rc < 0)
    return rc;
  const kvsim_kernels_t *col;
  kvsim_gpu_t donor;
  bool borrowed;
  if ((rc = load_profiles(pf, g, &col, &donor, &borrowed, err)) < 0)
    return rc;
  kvsim_quant_t q;
  if ((rc = kvsim__quant_resolve(m, pl->p.quantization, &q, err)) < 0)
    return rc;
  /* `quantization: fp8` on a checkpoint that is itself fp8 names the
   * checkpoint's own method: vLLM builds Fp8Config from the checkpoint's
   * quantization_config, weight_block_size included
   * (vllm/model_executor/model_loader/weight_utils.py get_quant_config;
   * quantization/fp8.py Fp8Config.from_config), so DeepSeek-V3 stays
   * block-scaled and its experts run the fp8_block MoE kernels. */
  if (q.kind == KVSIM_QUANT_FP8 && q.block_size == 0 && m->quant.kind == KVSIM_QUANT_FP8)
    q.block_size = m->quant.block_size;
  const int prec = gemm_precision(&q, g, pf->kern);
  set_hw(&pf->hw_gemm, g, borrowed ? &donor : NULL, prec < 0 ? KVSIM_KGEMM_BF16 : (kvsim_kgemm)prec);
  set_hw(&pf->hw_attn, g, borrowed ? &donor : NULL, KVSIM_KGEMM_BF16);
  pf->peak_flops = pf->hw_gemm.peak;
  pf->bandwidth = pf->hw_gemm.bw;
  pf->tp = pl->p.tp;
  pf->pp = pl->p.pp;
  pf->num_layers = m->num_layers;
  pf->quant_step_factor = kvsim_perf_default_quant_factor(pl->p.kv_dtype);
  kvsim__perf_init_mla(pf, m, pl, prec);
  if ((rc = kvsim__perf_init_gemms(pf, m, &q, prec, err)) < 0 || (rc = kvsim__perf_init_attention(pf, m, pl, err)) < 0 ||
      (rc = kvsim__perf_init_moe(pf, m, pl, &q, err)) < 0 || (rc = kvsim__perf_init_comm(pf, m, g, pl, col, err)) < 0)
    return rc;
  kvsim__perf_init_elementwise(pf, m, g, borrowed ? &donor : NULL);
  kvsim__perf_host(pl->p.engine, pl->p.vllm_version, &pf->host_us, &pf->host_per_seq_us);
  if (g->perf.host_us >= 0)
    pf->host_us = g->perf.host_us;
  if (g->perf.host_per_seq_us >= 0)
    pf->host_per_seq_us = g->perf.host_per_seq_us;
  return KVSIM_OK;
}

double kvsim_perf_experts_touched(const kvsim_perf_t *pf, int64_t tokens) {
  if (pf->num_experts <= 0 || tokens <= 0)
    return 0;
  /* Each token picks k of E experts; under uniform routing one expert is
   * missed by a token with probability 1 - k/E, by all T with (1 - k/E)^T. */
  return (double)pf->num_experts * -expm1((double)tokens * pf->moe_log_miss);
}

/* The GEMM terms into k (zeroed): from the memo's slot for the step's
 * rows when it holds them, else computed and stored there. They start
 * from zero either way, so a stored sum is the computed one. */
static double gemm_terms(const kvsim_perf_t *pf, kvsim_perf_memo_t *memo,
                         const kvsim_batch_shape_t *b, kvsim_step_cost_t *k) {
  const int64_t seqs = b->num_seqs + b->spec_rows;
  if (!memo || seqs <= 0)
    return kvsim__perf_gemms(pf, b, k);
  const uint64_t h =
      (uint64_t)b->new_tokens * 0x9e3779b97f4a7c15ull ^ (uint64_t)seqs * 0xc2b2ae3d27d4eb4full;
  kvsim_perf_memo_slot_t *m = &memo->slot[h >> 56 & (KVSIM_PERF_MEMO_SLOTS - 1)];
  if (m->seqs != seqs || m->tokens != b->new_tokens) {
    kvsim_step_cost_t g;
    memset(&g, 0, sizeof g);
    m->gemm_s = kvsim__perf_gemms(pf, b, &g);
    m->flops = g.flops;
    m->weight_bytes = g.weight_bytes;
    m->bytes = g.bytes;
    m->tokens = b->new_tokens;
    m->seqs = seqs;
  }
  k->flops = m->flops;
  k->weight_bytes = m->weight_bytes;
  k->bytes = m->bytes;
  return m->gemm_s;
}

kvsim_time_ns kvsim_perf_step_time(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *cost) {
  return kvsim_perf_step_time_memo(pf, NULL, b, cost);
}

kvsim_time_ns kvsim_perf_step_time_memo(const kvsim_perf_t *pf, kvsim_perf_memo_t *memo,
                                        const kvsim_batch_shape_t *b, kvsim_step_cost_t *cost) {
  kvsim_step_cost_t k;
  memset(&k, 0, sizeof k);
  if (b->num_seqs <= 0 && b->new_tokens <= 0) {
    if (cost)
      *cost = k;
    return 0;
  }
  /* The kernels of a step run one after the other on the rank's stream, so
   * their times add; the engine's host time per step adds to them. */
  k.gemm_s = gemm_terms(pf, memo, b, &k);
  k.attn_s = kvsim__perf_attention(pf, b, &k);
  k.moe_s = kvsim__perf_moe(pf, b, &k);
  k.comm_s = kvsim__perf_comm(pf, b);
  k.elem_s = kvsim__perf_elementwise(pf, b, &k);
  k.host_s = (pf->host_us + pf->host_per_seq_us * (double)b->num_seqs) * 1e-6;
  k.roofline_s = fmax(k.flops / pf->peak_flops, k.bytes / pf->bandwidth);
  /* The device's share never beats the roofline at the spec peaks: a
   * table can time a kernel whose weights stayed in L2 between replays
   * (MoE layers of a few MB per expert on Ada), which a model's step,
   * streaming every layer's weights once, does not get. */
  const double device = k.gemm_s + k.attn_s + k.moe_s + k.comm_s + k.elem_s;
  k.total_s = (device > k.roofline_s ? device : k.roofline_s) + k.host_s;
  if (cost)
    *cost = k;
  /* The double-to-int64 conversion is undefined past 2^63 (and for NaN). */
  if (!(k.total_s * 1e9 < (double)KVSIM_PERF_MAX_STEP_NS))
    return KVSIM_PERF_MAX_STEP_NS;
  return kvsim_time_from_s(k.total_s);
}

void kvsim_perf_mean_step(const kvsim_perf_t *pf, int64_t steps, int64_t prompt_tokens, int64_t decode_tokens,
                          int64_t requests, int64_t cached_tokens, kvsim_step_cost_t *cost) {
  memset(cost, 0, sizeof *cost);
  if (steps <= 0 || requests <= 0)
    return;
  /* A decode sequence samples one token per step, so the decode tokens
   * per step are the mean decode batch; its context is a mean prompt
   * (computed and cached) plus half a mean output. The prefill tokens
   * of a mean step run as one chunk on an empty context. */
  const int64_t seqs = (decode_tokens + steps / 2) / steps;
  const int64_t prefill = (prompt_tokens + steps / 2) / steps;
  const int64_t context = (prompt_tokens + cached_tokens + decode_tokens / 2) / requests;
  kvsim_batch_shape_t b;
  memset(&b, 0, sizeof b);
  for (int64_t i = 0; i < seqs; i++)
    kvsim_batch_shape_add(&b, context, 1, 0);
  if (prefill > 0)
    kvsim_batch_shape_add(&b, 0, prefill, 0);
  (void)kvsim_perf_step_time(pf, &b, cost);
}
