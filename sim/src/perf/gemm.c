/* GEMMs (perf.h): each projection of a layer and each routed expert on one
 * rank, as a roofline of its own shape (M tokens x N x K):
 *
 *   t = max(2 M N K / (peak_p x mfu_p x tile(M)),
 *           (N K x weight bytes + M (N + K) x activation bytes) / (HBM x mbu))
 *
 * A GEMM of a few tokens reads its whole weight matrix for almost no
 * arithmetic: it is weight-bandwidth bound, and its time does not depend
 * on the precision's FLOP rate. A GEMM of thousands of tokens reaches a
 * per-precision fraction of its tensor-core peak: mfu (bf16/fp16), mfu_fp8
 * or mfu_fp4 (cuBLAS/CUTLASS large-GEMM efficiencies differ by precision:
 * fp8 GEMMs reach a smaller fraction of their doubled peak). Between the
 * two, tile(M) = M / (M rounded up to the MMA tile's 64 rows) charges the
 * padding of a small M: Hopper's warpgroup MMA is m64nNk16 (PTX ISA,
 * wgmma.mma_async), and CUTLASS's smallest M tile is 64 rows.
 *
 * Precision: fp8 weights on a GPU with fp8 tensor cores run fp8 GEMMs
 * (vLLM fp8 w8a8 with dynamic activation scales, CUTLASS scaled_mm);
 * MXFP4 experts on a GPU with fp4 tensor cores run at the fp4 rate
 * (vllm/model_executor/layers/quantization/mxfp4.py: FlashInfer/TRT-LLM
 * MXFP4 MoE on SM100), elsewhere dequantized to bf16 (Marlin); int8/int4
 * weight-only kernels dequantize to bf16. */
#include <math.h>

#include "perf/terms.h"

#define MMA_TILE_M 64.0

double kvsim_perf_gemm_time(const kvsim_perf_t *pf, const kvsim_perf_gemm_t *g, double m, double bw_eff,
                            double *flops, double *bytes) {
  const kvsim_gpu_perf_t *c = &pf->coef;
  const double f = 2.0 * m * g->params;
  const double by = g->params * g->wbytes + m * (g->in + g->out) * pf->act_bytes;
  if (flops)
    *flops = f;
  if (bytes)
    *bytes = by;
  if (!(m > 0))
    return by / (pf->bandwidth * c->mbu * bw_eff);
  const double eff = g->precision == 2 ? c->mfu_fp4 : g->precision == 1 ? c->mfu_fp8 : c->mfu;
  const double tile = m / (ceil(m / MMA_TILE_M) * MMA_TILE_M);
  const double compute = f / (pf->peak[g->precision] * eff * tile);
  const double memory = by / (pf->bandwidth * c->mbu * bw_eff);
  return compute > memory ? compute : memory;
}

/* One GEMM class `count` times over m rows; the FLOP- and byte-bound parts
 * into the diagnostics. */
static double run(const kvsim_perf_t *pf, const kvsim_perf_gemm_t *g, double m, double times, double bw_eff,
                  kvsim_step_cost_t *k) {
  double f, by;
  const double t = kvsim_perf_gemm_time(pf, g, m, bw_eff, &f, &by);
  k->flops += times * f;
  k->bytes += times * by;
  k->weight_bytes += times * g->params * g->wbytes;
  const double eff = g->precision == 2 ? pf->coef.mfu_fp4 : g->precision == 1 ? pf->coef.mfu_fp8 : pf->coef.mfu;
  k->compute_s += times * f / (pf->peak[g->precision] * eff);
  k->memory_s += times * by / (pf->bandwidth * pf->coef.mbu * bw_eff);
  return times * t;
}

double kvsim__perf_gemms(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k) {
  const double T = (double)b->new_tokens, S = (double)b->num_seqs;
  double t = 0;
  for (int i = 0; i < pf->ngemm; i++) {
    const kvsim_perf_gemm_t *g = &pf->gemm[i];
    t += run(pf, g, g->per_seq ? S : T, g->count, 1.0, k);
  }
  /* The embedding row gathered per token. */
  const double emb = T * pf->embed_bytes_per_token;
  k->bytes += emb;
  k->memory_s += emb / (pf->bandwidth * pf->coef.mbu);
  t += emb / (pf->bandwidth * pf->coef.mbu);
  if (pf->num_moe_layers > 0 && pf->num_experts > 0 && T > 0) {
    /* Routed experts: under EP this rank holds 1/ep of them whole and
     * computes them for the tokens of every data-parallel rank of its
     * group; each touched expert sees the tokens routed to it. Expert
     * weights stream at moe_efficiency of a dense GEMM's rate (grouped
     * GEMMs with few tokens per expert, untuned fused_moe configs). */
    const double tokens = T * pf->ep_dp;
    k->experts_touched = kvsim_perf_experts_touched(pf, b->new_tokens * pf->ep_dp);
    const double held = pf->ep_dp > 1 ? (double)pf->ep_dp * pf->tp : 1.0;
    const double per_rank = k->experts_touched / held;
    const double m = tokens * (double)pf->experts_per_tok / k->experts_touched;
    const double eff = pf->coef.moe_efficiency > 0 ? pf->coef.moe_efficiency : 1.0;
    t += run(pf, &pf->expert, m, pf->expert.count * per_rank, eff, k);
  }
  return t;
}
